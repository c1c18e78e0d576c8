package densemem_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/review"
	"github.com/densemem/densemem/store/failpoint"
)

// TestListNightlyRunsLedger: the run ledger records every pass of the nightly review over a team's
// run date — a case whose review failed (with its attempt and the error), a pass that stopped on its
// own error, a pass that crashed before recording (counted started, not finished), and a run that
// decided nothing — and ListNightlyRuns pages it newest run date first, to the team alone.
func TestListNightlyRunsLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.openStaleDeployCase(false, true)
	e.advanceToReviewDue(s.ConflictID)
	day1 := e.clock.Now().Format(time.DateOnly)
	run := func(step, worker string) {
		t.Helper()
		_, err := e.client.RunNightlyReview(failpoint.Arm(e.ctx, step), densemem.NightlyReviewRequest{
			TeamIDs: []densemem.TeamID{e.team}, WorkerID: worker})
		if step != "tx.before_commit" && !errors.Is(err, failpoint.ErrInjected) {
			t.Fatalf("%s run: err = %v, want the injected failure", step, err)
		}
	}
	// 1. The case's review fails: counted failed, with the case, its attempt and the error.
	run("tx.before_commit", "w1")
	e.clock.Advance(review.DefaultLease)
	// 2. The pass stops after claiming (its own error), with the case still claimed.
	run("review.after_claim", "w2")
	e.clock.Advance(review.DefaultLease)
	// 3. The pass resolves the case and crashes before recording: started, never finished.
	run("review.before_finish", "w3")
	if c := e.ledger().Case(s.ConflictID); c.Status != "resolved" {
		t.Fatalf("the crashing pass did not resolve the case: %+v", c)
	}
	// 4. The next day's run decides nothing and says so.
	e.clock.Advance(24 * time.Hour)
	day2 := e.clock.Now().Format(time.DateOnly)
	e.reviewTeamAs("w4")

	var runs []densemem.NightlyRun
	req := densemem.ListNightlyRunsRequest{Limit: 1}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("ListNightlyRuns never ends")
		}
		resp, err := e.client.ListNightlyRuns(e.ctx, e.C, req)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, resp.Runs...)
		if resp.NextAfter == "" {
			break
		}
		req.After = resp.NextAfter
	}
	now := e.clock.Now()
	want := []densemem.NightlyRun{
		{RunDate: day2, ReservedBy: "w4", PassesStarted: 1, PassesFinished: 1, FinishedAt: &now, Failures: []densemem.NightlyRunFailure{}},
		{RunDate: day1, ReservedBy: "w1", PassesStarted: 3, PassesFinished: 2, Claimed: 2, Failed: 1,
			Failures: []densemem.NightlyRunFailure{
				{ConflictID: s.ConflictID, Attempt: 1, Error: "failpoint: injected failure at tx.before_commit"},
				{Error: "failpoint: injected failure at review.after_claim"}}},
	}
	if d := cmp.Diff(want, runs, cmpopts.IgnoreFields(densemem.NightlyRun{}, "ReservedAt"),
		cmpopts.IgnoreFields(densemem.NightlyRun{}, "FinishedAt"), cmpopts.EquateApproxTime(time.Microsecond)); d != "" {
		t.Errorf("the run ledger (-want +got):\n%s", d)
	}
	if len(runs) == 2 && (runs[1].FinishedAt == nil || runs[0].FinishedAt == nil || !runs[0].FinishedAt.Equal(now)) {
		t.Errorf("finish times %v, %v: want both set, the second day's now", runs[1].FinishedAt, runs[0].FinishedAt)
	}

	// Another team sees none of it; a cursor of another list, or a bad one, is refused at after.
	team2 := e.mustTeam("globex")
	if resp, err := e.client.ListNightlyRuns(e.ctx, densemem.HostPrincipal(team2), densemem.ListNightlyRunsRequest{}); err != nil ||
		len(resp.Runs) != 0 {
		t.Errorf("another team's runs: %+v, %v", resp, err)
	}
	profiles, err := e.client.ListProfiles(e.ctx, e.C, densemem.ListProfilesRequest{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  densemem.ListNightlyRunsRequest
		path string
	}{
		{densemem.ListNightlyRunsRequest{Limit: 501}, "limit"},
		{densemem.ListNightlyRunsRequest{After: profiles.NextAfter}, "after"},
		{densemem.ListNightlyRunsRequest{After: "eyJsIjoibGlzdDpuaWdodGx5X3J1bnMiLCJrIjpbIjIwMjYtMTMtMDEiXX0"}, "after"}, // month 13
	} {
		var ve *densemem.ValidationError
		if _, err := e.client.ListNightlyRuns(e.ctx, e.C, tc.req); !errors.As(err, &ve) || !ve.Has(tc.path) {
			t.Errorf("ListNightlyRuns(%+v): err = %v, want a ValidationError at %s", tc.req, err, tc.path)
		}
	}
	w := e.mustProfile("W", "write")
	if _, err := e.client.ListNightlyRuns(e.ctx, w, densemem.ListNightlyRunsRequest{}); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("a profile without the read scope: err = %v, want ErrForbidden", err)
	}
}

package densemem_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/internal/nightly"
)

// The fenced review (decision 124): cases planned from the batch's read and written in one round trip
// behind a fence. Each test runs the same story twice, once with the fenced way and once under locks
// only, and compares what the two left: the fenced way must never decide anything the locked way
// would not, whatever changed between the batch's read and a case's write.

// fenceStory seeds two cases, lets change (if any) run after the reviewer read the batch's keys and
// before it reviews them, and returns the report, a summary of both cases and their relationships as
// stored after the run, and the cases the fenced way had to review again under locks.
func fenceStory(t *testing.T, lockedOnly bool, kind seededKind, change func(e *env, cases []*seededCase)) (densemem.NightlyReviewReport, []string, []conflict.ID) {
	t.Helper()
	e := newEnv(t, quiet)
	if lockedOnly {
		densemem.ReviewUnderLocksOnly(e.client)
	}
	cases := mustSeedCases(t, e, 2, func(int) seededKind { return kind })
	var relocked []conflict.ID
	var once sync.Once
	densemem.SetNightlyHooks(e.client, &nightly.Hooks{
		AfterRead: func(context.Context) {
			once.Do(func() {
				if change != nil {
					change(e, cases)
				}
			})
		},
		Relocked: func(id conflict.ID) { relocked = append(relocked, id) },
	})
	e.clock.Advance(pastReviewDeadline)
	rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}, WorkerID: "w"})
	if err != nil || rep.Failed != 0 {
		t.Fatalf("review: %+v, %v", rep, err)
	}
	st := readReviewState(e)
	var out []string
	for i, c := range cases {
		out = append(out, fmt.Sprintf("case %d: %s", i, fenceCaseSummary(st.cases[c.id])),
			fmt.Sprintf("case %d A: %s", i, fenceRelSummary(st.rels[c.loser])))
		for j, w := range c.winners {
			out = append(out, fmt.Sprintf("case %d winner %d: %s", i, j, fenceRelSummary(st.rels[w])))
		}
	}
	r := *rep
	r.UnknownCaseIDs = nil
	return r, out, relocked
}

func TestNightlyFencedReviewMatchesLockedReview(t *testing.T) {
	slow(t)
	t.Parallel()
	for _, tc := range []struct {
		name string
		// change runs between the batch's read and the reviews; relock is whether it must make the
		// fenced way review case 0 again under locks.
		change func(e *env, cases []*seededCase)
		relock int
		kind   seededKind
	}{
		{name: "nothing changed", kind: seededTwoOwners},
		{name: "the losing owner forgets her statement", relock: 1, kind: seededTwoOwners, change: func(e *env, cases []*seededCase) {
			if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: cases[0].loser, Reason: "wrong",
				IdempotencyKey: nextKey()}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "a winning owner forgets his statement", relock: 1, kind: seededTwoOwners, change: func(e *env, cases []*seededCase) {
			if _, err := e.client.Forget(e.ctx, e.C, densemem.ForgetRequest{RelationshipID: cases[0].winners[1], Reason: "wrong",
				IdempotencyKey: nextKey()}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "the losing owner states more support", relock: 1, kind: seededTwoOwners, change: func(e *env, cases []*seededCase) {
			_, err := rememberSeeded(e.ctx, e.client, e.A, cases[:1], seedRequest(cases[:1], "main", nil, []seedDoc{{group: "a-runbook",
				cites: citesEveryCase, line: func(s string) string {
					return fmt.Sprintf("Runbook: the %s environment deploys from the main branch.", s)
				}}}))
			if err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "a winning owner states more support", relock: 1, kind: seededTwoOwners, change: func(e *env, cases []*seededCase) {
			since := releaseCutoff
			_, err := rememberSeeded(e.ctx, e.client, e.B, cases[:1], seedRequest(cases[:1], "release", &since, []seedDoc{{group: "b-audit",
				cites: citesEveryCase, line: func(s string) string {
					return fmt.Sprintf("Audit: since 2026-05-01 the %s environment deploys from the release branch.", s)
				}}}))
			if err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "a winner's second source is erased", relock: 2, kind: seededTwoGroups, change: func(e *env, cases []*seededCase) {
			// B's release record, one fragment citing both cases: B keeps his deploy log, so no
			// relationship and no case changes, but B's position counts one group fewer. Only the
			// fence sees it.
			frags := e.ledger().Strings(`SELECT f.fragment_id FROM evidence_fragments f JOIN fragment_contents c USING (team_id, fragment_id)
WHERE c.content LIKE 'Release record%'`)
			if len(frags) != 1 {
				e.t.Fatalf("release records %v, want one", frags)
			}
			e.mustErase(e.mustProfile("privacy officer", "erasure"), densemem.FragmentID(frags[0]))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fRep, fState, relocked := fenceStory(t, false, tc.kind, tc.change)
			lRep, lState, _ := fenceStory(t, true, tc.kind, tc.change)
			if fmt.Sprintf("%+v", fRep) != fmt.Sprintf("%+v", lRep) {
				t.Errorf("report: fenced %+v, locked %+v", fRep, lRep)
			}
			for i := range lState {
				if fState[i] != lState[i] {
					t.Errorf("fenced %s\n locked %s", fState[i], lState[i])
				}
			}
			if len(relocked) != tc.relock {
				t.Errorf("cases reviewed again under locks: %v; want %d", relocked, tc.relock)
			}
		})
	}
}

// fenceCaseSummary is a case summary without its generated IDs and pointers.
func fenceCaseSummary(c reviewCaseSummary) string {
	return fmt.Sprintf("%s v%d events %d (max %d) resolutions %d (reviewer %d) overdue %d escalations %d claimed %t attempts %d effective %s basis %q preferred %t next %s",
		c.status, c.version, c.events, c.maxEvent, c.resolutions, c.reviewerRes, c.overdueMarks, c.escalations, c.claimed,
		c.attempts, timeText(c.effectiveAt), c.basis, c.preferred != "", c.nextReview.UTC())
}

// fenceRelSummary is a relationship summary without pointers.
func fenceRelSummary(r reviewRelSummary) string {
	return fmt.Sprintf("%s v%d valid to %s transitions %d (reviewer %d, superseding %d)", r.status, r.version,
		timeText(r.validTo), r.transitions, r.byReviewer, r.supersedings)
}

// timeText is t in UTC, or "none".
func timeText(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().String()
}

// TestNightlyWritesPlannedCasesTogether: the cases planned from the batch's read are written in
// groups of up to 32, each group in one transaction (not one transaction per case), and a group
// whose fence fails for one case sends only that case to the locked review; every case ends as the
// one-by-one review would leave it.
func TestNightlyWritesPlannedCasesTogether(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale=%t", stale), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, quiet)
			cases := mustSeedCases(t, e, 40, seededMixed)
			type group struct {
				n   int
				err error
			}
			var groups []group
			var relocked []conflict.ID
			var once sync.Once
			densemem.SetNightlyHooks(e.client, &nightly.Hooks{
				AfterRead: func(context.Context) {
					once.Do(func() {
						if stale {
							// A new supporting statement on the first case's key, after the read.
							e.remember(e.C, deploy(cases[0].subject, "release"))
						}
					})
				},
				Relocked: func(id conflict.ID) { relocked = append(relocked, id) },
				Together: func(n int, err error) { groups = append(groups, group{n, err}) },
			})
			e.clock.Advance(pastReviewDeadline)
			rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}, WorkerID: "w"})
			if err != nil || rep.Failed != 0 || rep.Resolved+rep.Overdue+rep.KeptOpen+rep.Dismissed != len(cases) {
				t.Fatalf("review: %+v, %v; want every one of the %d cases reviewed", rep, err, len(cases))
			}
			if len(groups) != 2 || groups[0].n != 32 || groups[1].n != 8 {
				t.Fatalf("groups written together: %+v, want 32 then 8", groups)
			}
			if gotStale := groups[0].err != nil; gotStale != stale {
				t.Errorf("first group's error: %v, want an error %t", groups[0].err, stale)
			}
			if groups[1].err != nil {
				t.Errorf("second group: %v", groups[1].err)
			}
			if want := map[bool]int{false: 0, true: 1}[stale]; len(relocked) != want {
				t.Errorf("relocked %v, want %d case(s)", relocked, want)
			}
		})
	}
}

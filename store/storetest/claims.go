package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// The nightly reviewer's claims and leases (DESIGN §9): a claim takes only due, live cases whose lease
// is free or expired and whose attempts of the run date remain, stamps them without changing their
// version, and fences the review that follows; a run date is reserved once per team. Through the
// reviewer's store, which alone may resolve a case.
var claimContracts = []contract{
	{"ClaimsOnlyDueCases", testClaimsOnlyDue},
	{"ClaimNamesThePinnedPolicyVersion", testClaimPinnedPolicy},
	{"LeaseHoldsUntilItExpires", testLeaseHolds},
	{"ReviewIsFencedByTheClaim", testReviewFenced},
	{"EscalationOncePerRunDate", testEscalation},
	{"NightlyReserveOncePerTeamAndDate", testNightlyReserve},
	{"NightlyRunLedger", testNightlyRunLedger},
	{"TeamsWithDueCases", testTeamsWithDueCases},
	{"ReviewerBoundary", testReviewerBoundary},
}

// claim claims w's due cases through the reviewer's store.
func (w *world) claim(p store.CaseClaimDueParams) []store.ClaimedCase {
	w.t.Helper()
	p.Team = w.team
	got, err := w.e.rv.CaseClaimDue(w.e.ctx, p)
	w.must(err, "CaseClaimDue")
	return got
}

func claimedIDs(cs []store.ClaimedCase) []conflict.ID {
	out := make([]conflict.ID, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// dismiss writes the dismissal of case c (version 1 to 2) as w's profile a, at when.
func (w *world) dismiss(c store.CaseRow, when time.Time) {
	w.t.Helper()
	next := c
	next.Version, next.Status = c.Version+1, conflict.StatusDismissed
	w.apply(store.WriteSet{
		CaseUpdates: []store.CaseUpdate{{Team: w.team, ID: c.ID, ExpectVersion: c.Version, Version: next.Version,
			Status: conflict.StatusDismissed, UpdatedAt: when}},
		CaseEvents: []store.CaseEventRow{w.eventRow(next, c.Status, store.ActorProfile, w.a, "dismissed", when)},
	})
}

// caseState reports case c unless CaseList shows it at version with status and next review time
// (any when next is zero), and KeysLock shows it claimed by token ("" for unclaimed).
func (w *world) caseState(c store.CaseRow, version int, status conflict.Status, next time.Time, token, what string) {
	w.t.Helper()
	item := w.listedCase(c.ID)
	if item == nil {
		w.t.Errorf("%s: case %s is not listed", what, c.ID)
		return
	}
	if item.Case.Version != version || item.Case.Status != status || (!next.IsZero() && !item.NextReviewAt.Equal(next)) {
		w.t.Errorf("%s: case %s is %s v%d next reviewed at %s, want %s v%d at %s", what, c.ID, item.Case.Status,
			item.Case.Version, item.NextReviewAt, status, version, next)
	}
	locked := w.lockedCase(w.e.s, c.Key, c.ID)
	if locked == nil || locked.ClaimToken != token || locked.Version != version {
		w.t.Errorf("%s: case %s under KeysLock = %+v, want version %d claimed by %q", what, c.ID, locked, version, token)
	}
}

// testClaimsOnlyDue claims a team's cases among due, later, dismissed and not yet due ones.
func testClaimsOnlyDue(e *env) {
	t := e.t
	w := e.world(e.team("tm_c"))
	var ws store.WriteSet
	due := w.caseRows(&ws, w.key(w.ada, "due"), nil, t0, t0)
	dueLater := w.caseRows(&ws, w.key(w.ada, "due-later"), nil, t0, at(30*time.Minute))
	future := w.caseRows(&ws, w.key(w.ada, "future"), nil, t0, at(25*time.Hour))
	gone := w.caseRows(&ws, w.key(w.ada, "dismissed"), nil, t0, t0)
	w.apply(ws)
	w.dismiss(gone, at(time.Minute))

	now := at(time.Hour)
	p := store.CaseClaimDueParams{Now: now, RunDate: runDate, Batch: 1, Lease: 5 * time.Minute, Token: "tok_1", MaxAttempts: 5}
	got := w.claim(p)
	if len(got) != 1 || got[0].ID != due.ID || got[0].Key != due.Key || got[0].Attempts != 1 {
		t.Errorf("first claim of one case = %+v, want the earliest due case %s with its key, attempt 1", got, due.ID)
	}
	p.Batch, p.Token = 10, "tok_2"
	if got := w.claim(p); !slices.Equal(claimedIDs(got), []conflict.ID{dueLater.ID}) {
		t.Errorf("second claim = %v, want only the other due case %s", claimedIDs(got), dueLater.ID)
	}
	p.Token = "tok_3"
	if got := w.claim(p); len(got) != 0 {
		t.Errorf("third claim = %v, want none: every due case is held", claimedIDs(got))
	}
	w.caseState(due, 1, conflict.StatusOpen, t0, "tok_1", "a claimed case")
	w.caseState(dueLater, 1, conflict.StatusOpen, at(30*time.Minute), "tok_2", "a claimed case")
	w.caseState(future, 1, conflict.StatusOpen, at(25*time.Hour), "", "a case not yet due")
	w.caseState(gone, 2, conflict.StatusDismissed, t0, "", "a dismissed case")
}

// testClaimPinnedPolicy claims a case opened under policy version 2 after version 3 replaced it: the
// claim names version 2, and PolicyVersions still reads it as appended (the versions are append-only),
// in version order, each once, leaving out versions the team does not have.
func testClaimPinnedPolicy(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_c"))
	v2 := store.Policy{Team: w.team, ReviewTTL: 3 * 24 * time.Hour, AutoWriteThreshold: 0.5,
		AuthoritativeProfiles: []identity.ProfileID{w.a}, TimeZone: "Europe/Paris", CreatedBy: "host", CreatedAt: at(time.Minute)}
	_, err := e.s.PolicyAppend(ctx, store.PolicyAppendParams{Policy: v2, ExpectVersion: 1})
	e.must(err, "PolicyAppend of version 2")
	var ws store.WriteSet
	cs := w.caseRows(&ws, w.key(w.ada, ""), nil, at(2*time.Minute), at(2*time.Minute))
	ws.CaseInserts[0].PolicyVersion, ws.CaseEvents[0].PolicyVersion = 2, 2
	w.apply(ws)
	v3 := v2
	v3.AuthoritativeProfiles, v3.CreatedAt = []identity.ProfileID{w.b}, at(3*time.Minute)
	_, err = e.s.PolicyAppend(ctx, store.PolicyAppendParams{Policy: v3, ExpectVersion: 2})
	e.must(err, "PolicyAppend of version 3")

	got := w.claim(store.CaseClaimDueParams{Now: at(time.Hour), RunDate: runDate, Batch: 10, Lease: 5 * time.Minute,
		Token: "tok_1", MaxAttempts: 5})
	if len(got) != 1 || got[0].ID != cs.ID || got[0].PolicyVersion != 2 {
		t.Errorf("claim = %+v, want case %s with its pinned policy version 2", got, cs.ID)
	}
	pols, err := e.rv.PolicyVersions(ctx, w.team, []int{3, 2, 9, 2})
	e.must(err, "PolicyVersions")
	var versions []int
	for _, p := range pols {
		versions = append(versions, p.Version)
	}
	if !slices.Equal(versions, []int{2, 3}) {
		t.Fatalf("PolicyVersions(3, 2, 9, 2) = versions %v, want [2 3]", versions)
	}
	if p := pols[0]; p.Team != w.team || p.ReviewTTL != v2.ReviewTTL || p.AutoWriteThreshold != v2.AutoWriteThreshold ||
		!slices.Equal(p.AuthoritativeProfiles, v2.AuthoritativeProfiles) || p.TimeZone != v2.TimeZone ||
		p.CreatedBy != v2.CreatedBy || !p.CreatedAt.Equal(v2.CreatedAt) {
		t.Errorf("replaced version 2 = %+v, want it as appended: %+v", p, v2)
	}
	if p := pols[1]; !slices.Equal(p.AuthoritativeProfiles, v3.AuthoritativeProfiles) {
		t.Errorf("version 3's authoritative profiles = %v, want %v", p.AuthoritativeProfiles, v3.AuthoritativeProfiles)
	}
	for _, c := range []struct {
		team     identity.TeamID
		versions []int
	}{{w.team, nil}, {e.team("tm_missing"), []int{1, 2}}} {
		if pols, err := e.rv.PolicyVersions(ctx, c.team, c.versions); err != nil || len(pols) != 0 {
			t.Errorf("PolicyVersions(%s, %v) = %+v, %v; want none", c.team, c.versions, pols, err)
		}
	}
}

// testLeaseHolds claims one case again and again as its lease runs out and its attempts are spent.
func testLeaseHolds(e *env) {
	t := e.t
	w := e.world(e.team("tm_c"))
	var ws store.WriteSet
	cs := w.caseRows(&ws, w.key(w.ada, ""), nil, t0, t0)
	w.apply(ws)
	const lease = 10 * time.Minute
	now := at(time.Hour)
	p := store.CaseClaimDueParams{Now: now, RunDate: runDate, Batch: 10, Lease: lease, Token: "tok_1", MaxAttempts: 2}
	if got := w.claim(p); len(got) != 1 || got[0].Attempts != 1 {
		t.Fatalf("first claim = %+v, want the case at attempt 1", got)
	}
	p.Token, p.Now = "tok_2", now.Add(lease-time.Second)
	if got := w.claim(p); len(got) != 0 {
		t.Errorf("claim before the lease expired = %+v, want none", got)
	}
	w.caseState(cs, 1, conflict.StatusOpen, t0, "tok_1", "before the lease expired")
	p.Now = now.Add(lease + time.Second)
	if got := w.claim(p); len(got) != 1 || got[0].ID != cs.ID || got[0].Attempts != 2 {
		t.Errorf("claim after the lease expired = %+v, want the case at attempt 2", got)
	}
	w.caseState(cs, 1, conflict.StatusOpen, t0, "tok_2", "reclaimed after the lease expired")
	p.Token, p.Now = "tok_3", now.Add(2*lease+2*time.Second)
	if got := w.claim(p); len(got) != 0 {
		t.Errorf("claim after the run date's attempts were spent = %+v, want none", got)
	}
	p.RunDate, p.Now = runDate.AddDate(0, 0, 1), at(25*time.Hour)
	if got := w.claim(p); len(got) != 1 || got[0].Attempts != 1 {
		t.Errorf("claim on the next run date = %+v, want the case at attempt 1 of that date", got)
	}
	w.caseState(cs, 1, conflict.StatusOpen, t0, "tok_3", "after claims of two run dates")
}

// testReviewFenced reviews a claimed case with the wrong claim token or version, keeps it open with
// the right ones, then claims it again and resolves it, superseding the losing member.
func testReviewFenced(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_c"))
	sc := w.disagreement("", t0, t0)
	now, tomorrow := at(time.Hour), at(24*time.Hour)
	if got := w.claim(store.CaseClaimDueParams{Now: now, RunDate: runDate, Batch: 10, Lease: 5 * time.Minute, Token: "tok_1",
		MaxAttempts: 5}); !slices.Equal(claimedIDs(got), []conflict.ID{sc.cs.ID}) {
		t.Fatalf("claim = %v, want %s", claimedIDs(got), sc.cs.ID)
	}
	review := func(u store.CaseReviewUpdate, ws store.WriteSet) error {
		ws.CaseReviews = append(ws.CaseReviews, u)
		return applyOn(ctx, e.rv, w.team, ws)
	}
	keep := store.CaseReviewUpdate{Team: w.team, ID: sc.cs.ID, Token: "tok_1", ExpectVersion: 1, Version: 1,
		Status: conflict.StatusOpen, NextReviewAt: tomorrow, UpdatedAt: now}

	wrong := keep
	wrong.Token = "tok_wrong"
	e.checkErr(review(wrong, store.WriteSet{}), store.ErrStaleVersion, "a review under another claim token")
	stale := keep
	stale.ExpectVersion, stale.Version = 2, 2
	e.checkErr(review(stale, store.WriteSet{}), store.ErrStaleVersion, "a review expecting another case version")
	w.caseState(sc.cs, 1, conflict.StatusOpen, t0, "tok_1", "after refused reviews")

	e.must(review(keep, store.WriteSet{}), "a review that keeps the case open")
	w.caseState(sc.cs, 1, conflict.StatusOpen, tomorrow, "", "after a review that kept it open")
	e.checkErr(review(keep, store.WriteSet{}), store.ErrStaleVersion, "a second review under a released claim")

	// The next run date: claimed again and resolved for a's position, b's relationship superseded.
	now2 := tomorrow.Add(time.Hour)
	if got := w.claim(store.CaseClaimDueParams{Now: now2, RunDate: runDate.AddDate(0, 0, 1), Batch: 10, Lease: 5 * time.Minute,
		Token: "tok_2", MaxAttempts: 5}); !slices.Equal(claimedIDs(got), []conflict.ID{sc.cs.ID}) {
		t.Fatalf("claim on the next run date = %v, want %s", claimedIDs(got), sc.cs.ID)
	}
	cutoff := sc.cs.OpenedAt
	var ws store.WriteSet
	loser := sc.rb
	ws.Updates = []store.RelationshipUpdate{{Team: w.team, ID: loser.ID, ExpectVersion: 1, Status: relationship.StatusSuperseded,
		Tier: loser.Tier, ValidTo: &cutoff, UpdatedAt: now2}}
	ws.Transitions = []store.TransitionRow{{Team: w.team, ID: "trn_resolve", RelationshipID: loser.ID, FromStatus: loser.Status,
		ToStatus: relationship.StatusSuperseded, FromTier: loser.Tier, ToTier: loser.Tier, ToValidTo: &cutoff, FromVersion: 1,
		ToVersion: 2, Reason: "conflict_resolved:" + string(sc.cs.ID), ActorKind: store.ActorSystemConflictReviewer,
		IngestID: "tok_2", CreatedAt: now2}}
	resolved := sc.cs
	resolved.Version, resolved.Status = 2, conflict.StatusResolved
	ev := w.eventRow(resolved, conflict.StatusOpen, store.ActorSystemConflictReviewer, "", "resolved", now2)
	ev.TimeBasis = "recorded_fallback"
	ws.CaseEvents = []store.CaseEventRow{ev}
	preferred := sc.cs.Positions[conflict.PositionKey{Object: sc.ra.Object, Polarity: sc.ra.Polarity}]
	e.must(review(store.CaseReviewUpdate{Team: w.team, ID: sc.cs.ID, Token: "tok_2", ExpectVersion: 1, Version: 2,
		Status: conflict.StatusResolved, NextReviewAt: tomorrow.Add(24 * time.Hour), ResolvedAt: &now2, EffectiveAt: &cutoff,
		TimeBasis: "recorded_fallback", Preferred: preferred, UpdatedAt: now2}, ws), "the reviewer's resolution")

	got, err := e.s.RelationshipGet(ctx, w.team, loser.ID)
	e.must(err, "RelationshipGet")
	if got.Status != relationship.StatusSuperseded || got.Version != 2 || !sameTime(got.Validity.To, &cutoff) {
		t.Errorf("the loser after resolution = %s v%d valid to %v, want superseded v2 valid to %s", got.Status, got.Version,
			got.Validity.To, cutoff)
	}
	w.relAt(sc.ra.ID, 1, relationship.StatusActive, "the winner after resolution")
	item := w.listedCase(sc.cs.ID)
	if item == nil || item.Case.Status != conflict.StatusResolved || item.Case.Version != 2 ||
		!sameTime(item.Case.ResolvedAt, &now2) || !sameTime(item.Case.EffectiveAt, &cutoff) ||
		item.Case.TimeBasis != "recorded_fallback" || item.Case.Preferred != preferred {
		t.Errorf("the case after resolution = %+v, want resolved v2 at %s for %s from %s", item, now2, preferred, cutoff)
	}
	if got := w.claim(store.CaseClaimDueParams{Now: at(72 * time.Hour), RunDate: runDate.AddDate(0, 0, 3), Batch: 10,
		Lease: 5 * time.Minute, Token: "tok_3", MaxAttempts: 5}); len(got) != 0 {
		t.Errorf("claim after resolution = %v, want none: a resolved case is never due", claimedIDs(got))
	}
	td, err := e.s.TraceLoad(ctx, traceParams(w.team, loser.ID, 10))
	e.must(err, "TraceLoad")
	if n := len(td.Transitions); n != 2 || td.Transitions[1].ActorKind != store.ActorSystemConflictReviewer {
		t.Errorf("the loser's transitions = %+v, want its creation and the reviewer's supersession", td.Transitions)
	}
}

// testEscalation spends a case's attempts of the run date and escalates it.
func testEscalation(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_c"))
	sc := w.disagreement("", t0, t0)
	now, next := at(time.Hour), at(24*time.Hour)
	if got := w.claim(store.CaseClaimDueParams{Now: now, RunDate: runDate, Batch: 10, Lease: 10 * time.Minute, Token: "tok_1",
		MaxAttempts: 1}); len(got) != 1 || got[0].Attempts != 1 {
		t.Fatalf("claim = %+v, want the case at attempt 1", got)
	}
	esc := store.CaseEscalateParams{Team: w.team, Now: now.Add(time.Minute), RunDate: runDate, NextReview: next, MaxAttempts: 1,
		Token: "tok_other"}
	n, err := e.rv.CaseEscalateExhausted(ctx, esc)
	e.must(err, "CaseEscalateExhausted")
	if n != 0 {
		t.Errorf("escalation by another worker under tok_1's lease escalated %d cases, want 0", n)
	}
	esc.Token = "tok_1"
	n, err = e.rv.CaseEscalateExhausted(ctx, esc)
	e.must(err, "CaseEscalateExhausted")
	if n != 1 {
		t.Errorf("escalation of the worker's own exhausted claim escalated %d cases, want 1", n)
	}
	w.caseState(sc.cs, 2, conflict.StatusOpen, next, "", "after escalation")
	det, err := e.s.RecallDetails(ctx, store.RecallDetailsParams{Team: w.team, Relationships: []relationship.ID{sc.ra.ID}, Cases: true})
	e.must(err, "RecallDetails")
	if len(det.Cases) != 1 || det.Cases[0].Version != 2 || len(det.Cases[0].Positions) != 2 {
		t.Errorf("the case's recorded state after escalation = %+v, want version 2 with both positions", det.Cases)
	}
	esc.Token, esc.Now = "tok_other", now.Add(time.Hour)
	n, err = e.rv.CaseEscalateExhausted(ctx, esc)
	e.must(err, "CaseEscalateExhausted")
	if n != 0 {
		t.Errorf("a second escalation on the same run date escalated %d cases, want 0", n)
	}
	if got := w.claim(store.CaseClaimDueParams{Now: now.Add(time.Hour), RunDate: runDate, Batch: 10, Lease: 10 * time.Minute,
		Token: "tok_2", MaxAttempts: 1}); len(got) != 0 {
		t.Errorf("claim after escalation on the same run date = %v, want none", claimedIDs(got))
	}
	if got := w.claim(store.CaseClaimDueParams{Now: next.Add(time.Hour), RunDate: runDate.AddDate(0, 0, 1), Batch: 10,
		Lease: 10 * time.Minute, Token: "tok_3", MaxAttempts: 1}); len(got) != 1 || got[0].Attempts != 1 {
		t.Errorf("claim on the next run date = %+v, want the case at attempt 1", got)
	}
}

// testNightlyReserve reserves run dates of two teams.
func testNightlyReserve(e *env) {
	w := e.world(e.team("tm_x"))
	e.bareTeam(e.team("tm_y"))
	for _, c := range []struct {
		team   identity.TeamID
		date   time.Time
		worker string
		want   bool
	}{
		{w.team, runDate, "w1", true},
		{w.team, runDate, "w2", false},
		{w.team, runDate, "w1", false},
		{w.team, runDate.AddDate(0, 0, 1), "w2", true},
		{e.team("tm_y"), runDate, "w1", true},
	} {
		got, err := e.rv.NightlyReserve(e.ctx, store.NightlyReserveParams{Team: c.team, RunDate: c.date, Worker: c.worker,
			Now: at(time.Minute)})
		e.must(err, "NightlyReserve")
		if got != c.want {
			e.t.Errorf("NightlyReserve(%s, %s, %s) = %v, want %v", c.team, c.date.Format(time.DateOnly), c.worker, got, c.want)
		}
	}
}

// testNightlyRunLedger records two passes over one run date (the reserving worker's and a
// helper's) and a pass over an earlier date, and reads the ledger back a page at a time, newest run
// date first: the passes' counts add up, the failures keep the first MaxNightlyFailures in order, the
// finish time is the latest pass's; a reserved date no pass recorded shows its passes started and
// none finished; a date never reserved cannot be finished; another team's ledger stays apart.
func testNightlyRunLedger(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_l"))
	other := e.team("tm_m")
	e.bareTeam(other)
	days := []time.Time{runDate.AddDate(0, 0, -2), runDate.AddDate(0, 0, -1), runDate}
	reserve := func(team identity.TeamID, day time.Time, worker string) {
		_, err := e.rv.NightlyReserve(ctx, store.NightlyReserveParams{Team: team, RunDate: day, Worker: worker, Now: at(time.Minute)})
		e.must(err, "NightlyReserve")
	}
	failures := func(from, n int) []store.NightlyFailure {
		var out []store.NightlyFailure
		for i := from; i < from+n; i++ {
			out = append(out, store.NightlyFailure{ConflictID: conflict.ID(fmt.Sprintf("cf_%02d", i)), Attempt: 1, Error: "boom"})
		}
		return out
	}
	reserve(w.team, days[0], "w1")
	e.must(e.rv.NightlyFinish(ctx, store.NightlyFinishParams{Team: w.team, RunDate: days[0], Now: at(2 * time.Minute),
		Counts: store.NightlyCounts{Claimed: 1, KeptOpen: 1}}), "NightlyFinish")
	reserve(w.team, days[1], "w1") // crashes: never finishes
	reserve(w.team, days[2], "w1")
	reserve(w.team, days[2], "w2")
	e.must(e.rv.NightlyFinish(ctx, store.NightlyFinishParams{Team: w.team, RunDate: days[2], Now: at(5 * time.Minute),
		Counts:   store.NightlyCounts{Claimed: 17, Resolved: 1, Dismissed: 2, Overdue: 3, Failed: 10, Unknown: 1},
		Failures: append(failures(0, 10), store.NightlyFailure{ConflictID: "cf_u", Attempt: 2, Error: "answer lost"})}), "NightlyFinish")
	e.must(e.rv.NightlyFinish(ctx, store.NightlyFinishParams{Team: w.team, RunDate: days[2], Now: at(4 * time.Minute),
		Counts:   store.NightlyCounts{Claimed: 12, Resolved: 1, KeptOpen: 1, Exhausted: 1, Failed: 10},
		Failures: append(failures(10, 10), store.NightlyFailure{Error: "the pass stopped"})}), "NightlyFinish")
	err := e.rv.NightlyFinish(ctx, store.NightlyFinishParams{Team: w.team, RunDate: runDate.AddDate(0, 0, 1), Now: at(time.Hour)})
	e.checkErr(err, store.ErrNotFound, "NightlyFinish of a run date never reserved")
	reserve(other, days[2], "w9")

	var got []store.NightlyRun
	var before *time.Time
	for range 3 {
		page, err := e.s.NightlyRunList(ctx, store.NightlyRunListParams{Team: w.team, Before: before, Limit: 2})
		e.must(err, "NightlyRunList")
		got = append(got, page.Items...)
		if !page.More {
			break
		}
		before = &page.Items[len(page.Items)-1].RunDate
	}
	want := []store.NightlyRun{
		{Team: w.team, RunDate: days[2], Worker: "w1", ReservedAt: at(time.Minute), PassesStarted: 2, PassesFinished: 2,
			FinishedAt: ptr(at(5 * time.Minute)), Counts: store.NightlyCounts{Claimed: 29, Resolved: 2, Dismissed: 2, Overdue: 3,
				KeptOpen: 1, Exhausted: 1, Failed: 20, Unknown: 1},
			Failures: append(append(failures(0, 10), store.NightlyFailure{ConflictID: "cf_u", Attempt: 2, Error: "answer lost"}),
				failures(10, 9)...)},
		{Team: w.team, RunDate: days[1], Worker: "w1", ReservedAt: at(time.Minute), PassesStarted: 1, Failures: []store.NightlyFailure{}},
		{Team: w.team, RunDate: days[0], Worker: "w1", ReservedAt: at(time.Minute), PassesStarted: 1, PassesFinished: 1,
			FinishedAt: ptr(at(2 * time.Minute)), Counts: store.NightlyCounts{Claimed: 1, KeptOpen: 1}, Failures: []store.NightlyFailure{}},
	}
	if d := cmp.Diff(want, got, cmpopts.EquateApproxTime(time.Microsecond), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("the run ledger paged two at a time (-want +got):\n%s", d)
	}
	otherRuns, err := e.s.NightlyRunList(ctx, store.NightlyRunListParams{Team: other, Limit: 10})
	e.must(err, "NightlyRunList")
	if len(otherRuns.Items) != 1 || otherRuns.Items[0].Worker != "w9" || otherRuns.Items[0].PassesStarted != 1 {
		t.Errorf("the other team's ledger = %+v, want its one reservation by w9 alone", otherRuns.Items)
	}
}

// testTeamsWithDueCases lists the teams with a live case due, among teams with cases due now, later,
// dismissed, and none.
func testTeamsWithDueCases(e *env) {
	now := e.world(e.team("tm_now"))
	now.disagreement("", t0, t0)
	later := e.world(e.team("tm_later"))
	later.disagreement("", t0, at(24*time.Hour))
	gone := e.world(e.team("tm_gone"))
	gone.dismiss(gone.disagreement("", t0, t0).cs, at(time.Minute))
	e.world(e.team("tm_none"))
	for _, c := range []struct {
		at   time.Time
		want []identity.TeamID
	}{
		{at(-time.Hour), nil},
		{at(time.Hour), []identity.TeamID{now.team}},
		{at(25 * time.Hour), []identity.TeamID{later.team, now.team}},
	} {
		got, err := e.rv.TeamsWithDueCases(e.ctx, c.at)
		e.must(err, "TeamsWithDueCases")
		got = e.ownTeams(got)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			e.t.Errorf("TeamsWithDueCases(%s) = %v, want %v", c.at, got, c.want)
		}
	}
}

// testReviewerBoundary: the profile store may not resolve a case, mark it overdue or record the
// reviewer's transitions; the reviewer's store may write nothing but the reviewer's rows. Each refused
// write set leaves nothing.
func testReviewerBoundary(e *env) {
	if !e.separate {
		e.t.Skip("storetest: Harness.Reviewer is nil: the reviewer's calls share the profile store, so there is no boundary to check")
	}
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_b"))
	sc := w.disagreement("", t0, t0)
	now := at(time.Hour)
	caseTo := func(status conflict.Status, actor string, profile identity.ProfileID) store.WriteSet {
		next := sc.cs
		next.Version, next.Status = 2, status
		return store.WriteSet{
			CaseUpdates: []store.CaseUpdate{{Team: w.team, ID: sc.cs.ID, ExpectVersion: 1, Version: 2, Status: status, UpdatedAt: now}},
			CaseEvents:  []store.CaseEventRow{w.eventRow(next, conflict.StatusOpen, actor, profile, "boundary", now)},
		}
	}
	supersede := func(r relationship.Relationship, status relationship.Status, actor string, profile identity.ProfileID) store.WriteSet {
		var ws store.WriteSet
		w.changeRows(&ws, r, status, r.Tier, &now, now)
		ws.Transitions[0].ActorKind, ws.Transitions[0].ActorProfile = actor, profile
		return ws
	}
	var evidence store.WriteSet
	w.evidenceRows(&evidence, sc.ra, "Ada works on Falcon, says the reviewer.", "ing_rv", now)
	var newRel store.WriteSet
	extra := w.relRows(&newRel, relSpec{scope: "reviewer", when: now})
	var entity store.WriteSet
	ghost := w.marker(&entity, "Reviewer's entity")

	for _, c := range []struct {
		name string
		s    store.Store
		ws   store.WriteSet
	}{
		{"the profile store resolving a case", e.s, caseTo(conflict.StatusResolved, store.ActorProfile, w.a)},
		{"the profile store marking a case overdue", e.s, caseTo(conflict.StatusOverdue, store.ActorProfile, w.a)},
		{"the profile store writing a case event as the reviewer", e.s, caseTo(conflict.StatusDismissed, store.ActorSystemConflictReviewer, "")},
		{"the profile store recording a transition as the reviewer", e.s,
			supersede(sc.rb, relationship.StatusSuperseded, store.ActorSystemConflictReviewer, "")},
		{"the reviewer writing evidence", e.rv, evidence},
		{"the reviewer creating a relationship", e.rv, newRel},
		{"the reviewer creating an entity", e.rv, entity},
		{"the reviewer retracting a relationship", e.rv,
			supersede(sc.ra, relationship.StatusRetracted, store.ActorSystemConflictReviewer, "")},
		{"the reviewer recording an idempotency result", e.rv, store.WriteSet{Idempotency: &store.IdempotencyRow{Team: w.team,
			Profile: w.a, Key: "k", Operation: "remember", RequestHash: "h", IngestID: "ing", Result: json.RawMessage(`{}`),
			CreatedAt: now}}},
		{"the reviewer writing a review item", e.rv, store.WriteSet{ReviewItems: []store.ReviewItemRow{{Team: w.team, ID: "rev_rv",
			IngestID: "ing_rv", PlacementItemID: "item_1", Kind: "relationship_held", Profile: w.a, ObservationID: "obs",
			RelationshipID: sc.ra.ID, Choices: json.RawMessage(`[]`), CreatedAt: now}}}},
	} {
		if err := applyOn(ctx, c.s, w.team, c.ws); err == nil {
			t.Errorf("%s: the write set was accepted", c.name)
		}
	}
	w.caseState(sc.cs, 1, conflict.StatusOpen, t0, "", "after refused case changes")
	w.relAt(sc.ra.ID, 1, relationship.StatusActive, "after refused changes")
	w.relAt(sc.rb.ID, 1, relationship.StatusActive, "after refused changes")
	if _, err := e.s.RelationshipGet(ctx, w.team, extra.ID); err == nil {
		t.Errorf("the reviewer's relationship %s was written", extra.ID)
	}
	w.absent(ghost, "the reviewer creating an entity")
	td, err := e.s.TraceLoad(ctx, traceParams(w.team, sc.ra.ID, 10))
	e.must(err, "TraceLoad")
	if len(td.Supports) != 1 || len(td.ReviewItems) != 0 {
		t.Errorf("after the reviewer's refused writes %s has %d supports and %d review items, want 1 and 0", sc.ra.ID,
			len(td.Supports), len(td.ReviewItems))
	}
	if rec, err := e.s.IdempotencyGet(ctx, w.team, w.a, "k"); err != nil || rec != nil {
		t.Errorf("IdempotencyGet after the reviewer's refused record = %+v, %v; want nil", rec, err)
	}
}

package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/internal/failpoint"
	"github.com/densemem/densemem/review"
)

// The nightly Conflict reviewer (DESIGN §9) against the specification's invariants 15, 19, 20, 21
// and DESIGN I-25: resolution of the stale team knowledge story, overdue without a winner, the
// database fence around the reviewer, exactly-once resolution by concurrent workers, the deadline
// rules, recall views after resolution, the daily run reservation, and the accounting of failed
// attempts (DESIGN §9.5).

// releaseCutoff is the business change of the story (t1): production deploys from release since then.
// It is also the confirmed valid_from of every seeded "release" relationship (seedCases): the evidence
// time a resolution's cutoff comes from.
var releaseCutoff = date("2026-05-01")

// defaultReviewTTL is the default review TTL of a new team's policy.
const defaultReviewTTL = 7 * 24 * time.Hour

// reviewerActorKind is the ledger actor of the nightly reviewer.
const reviewerActorKind = "system_conflict_reviewer"

// releaseSinceCutoff is "since 2026-05-01 production deploys_from release" in the words of one independent
// source: each distinct prefix is distinct content, so a distinct source group.
func releaseSinceCutoff(prefix string) fact {
	f := deploy("production", "release").since(releaseCutoff)
	if prefix != "" {
		f.content = prefix + " " + f.content
	}
	return f
}

// reviewTeamAs runs the nightly review for the env's team as worker and fails the test on error.
func (e *env) reviewTeamAs(worker string) *densemem.NightlyReviewReport {
	e.t.Helper()
	rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}, WorkerID: worker})
	if err != nil {
		e.t.Fatalf("nightly review (%s): %v", worker, err)
	}
	return rep
}

// rememberAccepted remembers f for p, requires an accepted active relationship and returns its outcome.
func (e *env) rememberAccepted(p densemem.Principal, f fact) densemem.RelationshipOutcome {
	e.t.Helper()
	out := e.remember(p, f)
	if out.Category != densemem.CategoryAccepted || out.Status != "active" {
		e.t.Fatalf("remember %q: %s/%s (%s), want an accepted active relationship", f.content, out.Category, out.Status, out.Reason)
	}
	return out
}

// staleDeployCase is the specification's stale team knowledge example: A1 "production deploys_from main"
// (A, t0); B1 "since 2026-05-01 production deploys_from release" (B, t2 = t0 + 1 day), which opens
// the case; C1, C's own independent evidence for release an hour later. With staging, A's single
// evidence fragment also supports an unrelated relationship, staging deploys_from develop.
type staleDeployCase struct {
	A1, B1, C1, Staging densemem.RelationshipID
	AFragment           densemem.FragmentID
	MainClause          string
	StagingClause       string
	T0, T2, T3          time.Time
	ConflictID          string
}

// twoDeploysContent is A's one fragment that supports two unrelated relationships.
const twoDeploysContent = "The production environment deploys from the main branch and the staging environment deploys from the develop branch."

func (e *env) openStaleDeployCase(withStaging, withC bool) staleDeployCase {
	e.t.Helper()
	var s staleDeployCase
	s.T0 = e.clock.Now()
	if withStaging {
		cut := strings.Index(twoDeploysContent, " and ")
		s.MainClause, s.StagingClause = twoDeploysContent[:cut], twoDeploysContent[cut+len(" and "):]
		req := densemem.RememberRequest{
			IdempotencyKey: nextKey(),
			Evidence:       []densemem.EvidenceInput{{Content: twoDeploysContent, SourceType: "manual"}},
			Proposal: densemem.Proposal{
				Entities: []densemem.ProposedEntity{
					{Ref: "prod", Name: "production", EntityKind: "environment"},
					{Ref: "main", Name: "main", EntityKind: "git_branch"},
					{Ref: "stg", Name: "staging", EntityKind: "environment"},
					{Ref: "dev", Name: "develop", EntityKind: "git_branch"},
				},
				Relationships: []densemem.ProposedRelationship{
					{ProposalID: "prod_main", SubjectRef: "prod", Predicate: "deploys_from", ObjectRef: "main",
						Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: cut}}},
					{ProposalID: "stg_dev", SubjectRef: "stg", Predicate: "deploys from", ObjectRef: "dev",
						Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: cut + len(" and "), End: len(twoDeploysContent)}}},
				},
			},
		}
		pl, err := e.client.Remember(e.ctx, e.A, req)
		if err != nil {
			e.t.Fatalf("A's two-relationship remember: %v", err)
		}
		if len(pl.RelationshipOutcomes) != 2 || len(pl.Fragments) != 1 {
			e.t.Fatalf("A's placement: %d outcomes, %d fragments", len(pl.RelationshipOutcomes), len(pl.Fragments))
		}
		for _, o := range pl.RelationshipOutcomes {
			if o.Category != densemem.CategoryAccepted || o.Status != "active" {
				e.t.Fatalf("A's %s: %s/%s (%s)", o.ProposalID, o.Category, o.Status, o.Reason)
			}
		}
		s.A1, s.Staging = pl.RelationshipOutcomes[0].RelationshipID, pl.RelationshipOutcomes[1].RelationshipID
		s.AFragment = pl.Fragments[0].FragmentID
	} else {
		s.A1 = e.rememberAccepted(e.A, deploy("production", "main")).RelationshipID
	}
	e.clock.Advance(24 * time.Hour)
	s.T2 = e.clock.Now()
	b := e.rememberAccepted(e.B, releaseSinceCutoff(""))
	s.B1 = b.RelationshipID
	if b.Conflict == nil || b.Conflict.Status != "open" {
		e.t.Fatalf("B1 opened no case: %+v", b)
	}
	s.ConflictID = b.Conflict.ConflictID
	if withC {
		e.clock.Advance(time.Hour)
		s.T3 = e.clock.Now()
		c := e.rememberAccepted(e.C, releaseSinceCutoff("Ops confirmed:"))
		s.C1 = c.RelationshipID
		if c.Conflict == nil || c.Conflict.ConflictID != s.ConflictID {
			e.t.Fatalf("C1 did not join case %s: %+v", s.ConflictID, c.Conflict)
		}
	}
	return s
}

// advanceToReviewDue moves the clock to the case's review_due_at exactly.
func (e *env) advanceToReviewDue(caseID string) time.Time {
	e.t.Helper()
	due := e.ledger().Case(caseID).ReviewDueAt
	if d := due.Sub(e.clock.Now()); d > 0 {
		e.clock.Advance(d)
	}
	return e.clock.Now()
}

// resolveAtReviewDue runs the reviewer at the story's deadline and requires exactly one resolution.
func (e *env) resolveAtReviewDue(s staleDeployCase) (*densemem.NightlyReviewReport, time.Time) {
	e.t.Helper()
	at := e.advanceToReviewDue(s.ConflictID)
	rep := e.reviewTeamAs("w1")
	if rep.Resolved != 1 || rep.Failed != 0 {
		e.t.Fatalf("nightly review at the deadline: %+v, want 1 resolved; case %+v", rep, e.ledger().Case(s.ConflictID))
	}
	return rep, at
}

// armedVerifier is the default SpanVerifier that fails the test when called while armed.
type armedVerifier struct {
	t     testing.TB
	armed atomic.Bool
	calls atomic.Int64
}

func (v *armedVerifier) Name() string { return "armed_verifier" }

func (v *armedVerifier) Verify(ctx context.Context, req evidence.VerifyRequest) ([]evidence.Result, error) {
	v.calls.Add(1)
	if v.armed.Load() {
		v.t.Errorf("the verifier was called during the nightly review with %d claims", len(req.Claims))
	}
	return evidence.SpanVerifier{}.Verify(ctx, req)
}

// ---- Invariant 15 ----

func TestInvariant15_ResolutionHidesOnlyNonPreferredSupportPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.openStaleDeployCase(true, true)
	_, resolvedAt := e.resolveAtReviewDue(s)

	c := e.ledger().Case(s.ConflictID)
	if c.Status != "resolved" || c.Basis != "evidence_time" || c.EffectiveAt == nil || !c.EffectiveAt.Equal(releaseCutoff) ||
		c.ResolvedAt == nil || !c.ResolvedAt.Equal(resolvedAt) || c.Preferred == "" {
		t.Fatalf("case after resolution = %+v, want resolved at %v, effective %v by evidence_time", c, resolvedAt, releaseCutoff)
	}

	// Current recall for production: the release side with a compact resolved reference; not main,
	// and not the main clause of A's fragment as evidence of anything.
	prod := e.recall(e.C, "production", nil, nil)
	if resultFor(prod, s.A1) != nil {
		t.Errorf("current recall still returns the superseded A1 (production -> main)")
	}
	for _, id := range []densemem.RelationshipID{s.B1, s.C1} {
		r := resultFor(prod, id)
		if r == nil {
			t.Errorf("current recall misses %s of the preferred position; got %v", id, recallIDs(prod))
			continue
		}
		if r.Relationship.Object.Name != "release" || r.ConflictID != "" {
			t.Errorf("%s: object %q conflict_id %q", id, r.Relationship.Object.Name, r.ConflictID)
		}
		want := &densemem.ResolvedConflictRef{ConflictID: s.ConflictID, Version: c.Version, ResolvedAt: &resolvedAt,
			EffectiveAt: &releaseCutoff, EffectiveTimeBasis: "evidence_time", PreferredPositionID: c.Preferred}
		if d := cmp.Diff(want, r.ResolvedConflict); d != "" {
			t.Errorf("%s resolved_conflict (-want +got):\n%s", id, d)
		}
		if len(r.Evidence) == 0 {
			t.Errorf("%s has no evidence in primary results", id)
		}
	}
	for _, r := range prod.Results {
		if r.Relationship.Subject.Name == "production" && r.Relationship.Object.Name == "main" {
			t.Errorf("current recall returns production -> main: %+v", r.Relationship)
		}
		for _, ev := range r.Evidence {
			if strings.Contains(ev.Excerpt, "main branch") {
				t.Errorf("result %s carries the loser's support path %q", r.Relationship.RelationshipID, ev.Excerpt)
			}
		}
	}
	if len(prod.Conflicts) != 0 {
		t.Errorf("a resolved case is listed as live: %+v", prod.Conflicts)
	}

	// The same fragment still supports staging -> develop in primary results.
	stg := e.recall(e.C, "staging", nil, nil)
	r := resultFor(stg, s.Staging)
	if r == nil {
		t.Fatalf("recall for staging lost staging -> develop: %v", recallIDs(stg))
	}
	if r.Relationship.Status != "active" || r.Relationship.Object.Name != "develop" || r.ResolvedConflict != nil {
		t.Errorf("staging result: %+v resolved %+v", r.Relationship, r.ResolvedConflict)
	}
	found := false
	for _, ev := range r.Evidence {
		if ev.FragmentID == s.AFragment {
			found = true
			if ev.Excerpt != s.StagingClause || ev.AuthorProfileID != e.A.ProfileID {
				t.Errorf("staging evidence excerpt %q by %s, want %q by A", ev.Excerpt, ev.AuthorProfileID, s.StagingClause)
			}
		}
	}
	if !found {
		t.Errorf("staging -> develop lost its support path through fragment %s: %+v", s.AFragment, r.Evidence)
	}
	if st, _, vt, v := e.relationshipState(s.Staging); st != "active" || vt != nil || v != 1 {
		t.Errorf("staging -> develop changed by the reviewer: %s valid_to %v v%d", st, vt, v)
	}

	// Trace keeps A1 with its evidence, the reviewer's transition and the case events.
	tr, err := e.client.Trace(e.ctx, e.C, densemem.TraceRequest{RelationshipID: s.A1, IncludeEvidenceContent: true,
		IncludeVerification: true, IncludeTransitions: true})
	if err != nil {
		t.Fatalf("trace A1: %v", err)
	}
	rel := tr.Relationship
	if rel.Status != "superseded" || rel.OwnerProfileID != e.A.ProfileID || rel.Object.Name != "main" || rel.Version != 2 ||
		rel.ValidTo == nil || !rel.ValidTo.Equal(releaseCutoff) || rel.ValidFrom != nil {
		t.Errorf("trace A1 relationship = %+v", rel)
	}
	if len(tr.Evidence) != 1 || tr.Evidence[0].FragmentID != s.AFragment || tr.Evidence[0].Excerpt != s.MainClause ||
		tr.Evidence[0].Content != twoDeploysContent || tr.Evidence[0].AuthorProfileID != e.A.ProfileID {
		t.Errorf("trace A1 evidence = %+v", tr.Evidence)
	}
	if len(tr.Observations) != 1 || len(tr.Verifications) != 1 {
		t.Errorf("trace A1: %d observations, %d verifications", len(tr.Observations), len(tr.Verifications))
	}
	if len(tr.Transitions) != 2 {
		t.Fatalf("trace A1 transitions = %+v, want creation and supersession", tr.Transitions)
	}
	sup := tr.Transitions[1]
	if sup.FromStatus != "active" || sup.ToStatus != "superseded" || sup.ActorKind != reviewerActorKind || sup.ActorProfileID != "" ||
		sup.ToValidTo == nil || !sup.ToValidTo.Equal(releaseCutoff) || sup.FromValidTo != nil || sup.FromVersion != 1 ||
		sup.ToVersion != 2 || !sup.CreatedAt.Equal(resolvedAt) || !strings.Contains(sup.Reason, s.ConflictID) {
		t.Errorf("reviewer transition = %+v", sup)
	}
	if first := tr.Transitions[0]; first.ToStatus != "active" || first.ActorKind != "profile" || first.ActorProfileID != e.A.ProfileID {
		t.Errorf("creation transition = %+v", first)
	}
	if len(tr.Conflicts) != 1 || tr.Conflicts[0].ConflictID != s.ConflictID {
		t.Fatalf("trace A1 conflicts = %+v", tr.Conflicts)
	}
	var got []string
	for _, ev := range tr.Conflicts[0].Events {
		got = append(got, fmt.Sprintf("v%d %s->%s %s %s %s", ev.CaseVersion, ev.PriorStatus, ev.ResultingStatus, ev.ActorKind,
			ev.ActorProfileID, ev.TimeBasis))
	}
	want := []string{
		fmt.Sprintf("v1 ->open profile %s ", e.B.ProfileID),
		fmt.Sprintf("v2 open->open profile %s ", e.C.ProfileID),
		fmt.Sprintf("v3 open->resolved %s  evidence_time", reviewerActorKind),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("trace A1 case events (-want +got):\n%s", d)
	}
	if tc := tr.Conflicts[0]; tc.Status != "resolved" || tc.PreferredPositionID != c.Preferred ||
		tc.Kind != "cross_profile_current_state" || tc.EffectiveAt == nil || c.EffectiveAt == nil ||
		!tc.EffectiveAt.Equal(*c.EffectiveAt) || tc.EffectiveTimeBasis != "evidence_time" {
		t.Errorf("trace A1 case = %s %s preferred %s effective %v (%s), want resolved cross_profile_current_state preferred %s effective %v (evidence_time)",
			tc.Kind, tc.Status, tc.PreferredPositionID, tc.EffectiveAt, tc.EffectiveTimeBasis, c.Preferred, c.EffectiveAt)
	}
	incoming := 0
	for _, x := range tr.CrossReferences {
		if x.Direction == "incoming" && (x.FromRelationshipID == s.B1 || x.FromRelationshipID == s.C1) {
			incoming++
		}
	}
	if incoming != 2 {
		t.Errorf("trace A1 cross-references = %+v, want incoming from B1 and C1", tr.CrossReferences)
	}
}

// ---- Invariant 19 ----

func TestInvariant19_NightlyReviewIsTheOnlyResolverAndModelFree(t *testing.T) {
	t.Parallel()
	v := &armedVerifier{t: t}
	e := newEnv(t, func(c *densemem.Config) { c.Verifier = v })
	D := e.mustProfile("D", "read", "write")
	E := e.mustProfile("E", "read", "write")

	a1 := e.rememberAccepted(e.A, deploy("production", "main")).RelationshipID
	e.clock.Advance(24 * time.Hour)
	b := e.rememberAccepted(e.B, releaseSinceCutoff(""))
	caseID := b.Conflict.ConflictID
	release := []densemem.RelationshipID{b.RelationshipID}
	// Three more independent groups for release: 4 of 5 groups (80%) meets the pre-TTL floor, yet no
	// placement resolves the case.
	for i, w := range []struct {
		p      densemem.Principal
		prefix string
	}{{e.C, "Ops confirmed:"}, {D, "Release notes:"}, {E, "Runbook v3:"}} {
		e.clock.Advance(time.Minute)
		out := e.rememberAccepted(w.p, releaseSinceCutoff(w.prefix))
		release = append(release, out.RelationshipID)
		if out.Conflict == nil || out.Conflict.ConflictID != caseID || out.Conflict.Status != "open" {
			t.Fatalf("placement %d: conflict %+v, want case %s still open", i, out.Conflict, caseID)
		}
		if c := e.ledger().Case(caseID); c.Status != "open" || c.ResolvedAt != nil {
			t.Fatalf("placement %d changed the case to %+v", i, c)
		}
		if st, _, _, _ := e.relationshipState(a1); st != "active" {
			t.Fatalf("placement %d changed A1 to %s", i, st)
		}
	}
	recall := e.recall(e.C, "production", nil, nil)
	if len(recall.Conflicts) != 1 || len(recall.Conflicts[0].Positions) != 2 || recall.Conflicts[0].Kind != "cross_profile_current_state" {
		t.Fatalf("recall conflicts = %+v", recall.Conflicts)
	}
	var groups []int
	for _, p := range recall.Conflicts[0].Positions {
		groups = append(groups, p.CountedSourceGroups)
	}
	slices.Sort(groups)
	if d := cmp.Diff([]int{1, 4}, groups); d != "" {
		t.Fatalf("counted groups (-want +got):\n%s", d)
	}

	verificationsBefore := e.count("verification_events")
	callsBefore := v.calls.Load()
	v.armed.Store(true)
	rep := e.reviewTeamAs("w1") // before the deadline: the pre-TTL floor resolves
	again := e.reviewTeamAs("w2")
	v.armed.Store(false)
	if n := v.calls.Load() - callsBefore; n != 0 {
		t.Errorf("the verifier was called %d times during the nightly review", n)
	}
	if n := e.count("verification_events"); n != verificationsBefore {
		t.Errorf("the nightly review wrote verification events: %d -> %d", verificationsBefore, n)
	}
	if rep.Resolved != 1 || again.Resolved != 0 || again.Claimed != 0 {
		t.Fatalf("reports = %+v then %+v, want one resolution and nothing left", rep, again)
	}

	c := e.ledger().Case(caseID)
	if c.Status != "resolved" || !e.clock.Now().Before(c.ReviewDueAt) {
		t.Fatalf("case = %+v, want resolved before its deadline", c)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE resulting_status = 'resolved' AND
		(actor_kind <> 'system_conflict_reviewer' OR actor_profile_id IS NOT NULL)`); n != 0 {
		t.Errorf("%d resolved events by an actor other than the reviewer", n)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE resulting_status = 'resolved' AND actor_kind = 'profile'`); n != 0 {
		t.Errorf("a placement resolved a case: %d events", n)
	}
	evs := e.ledger().Case(caseID).Events
	for _, ev := range evs[:len(evs)-1] {
		if ev.Resulting != "open" || ev.ActorKind != "profile" {
			t.Errorf("event before the nightly run: %+v", ev)
		}
	}
	last := evs[len(evs)-1]
	if last.Resulting != "resolved" || last.ActorKind != reviewerActorKind || last.Actor != "" || last.Reason != "pre_ttl_floor_met" ||
		last.TimeBasis != "evidence_time" {
		t.Errorf("resolution event = %+v", last)
	}
	trs := e.trace(e.admin, a1).Transitions
	if len(trs) != 2 || trs[1].ToStatus != "superseded" || trs[1].ActorKind != reviewerActorKind || trs[1].ActorProfileID != "" {
		t.Errorf("A1 transitions = %+v", trs)
	}
	for _, id := range release {
		if st, _, vt, ver := e.relationshipState(id); st != "active" || vt != nil || ver != 1 {
			t.Errorf("winner %s: %s valid_to %v v%d", id, st, vt, ver)
		}
	}
	// Every transition the reviewer wrote names it, and no profile-actor transition happened during the run.
	if n := e.ledger().Int(`SELECT count(*) FROM relationship_transitions WHERE to_status = 'superseded' AND actor_kind <> 'system_conflict_reviewer'`); n != 0 {
		t.Errorf("%d supersessions by another actor", n)
	}
}

// ---- Invariant 20 ----

func TestInvariant20_DeadlineWithoutWinnerIsOverdue(t *testing.T) {
	t.Parallel()

	t.Run("one group against one group", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, false)
		opened := e.ledger().Case(s.ConflictID)
		transitionsBefore := e.count("relationship_transitions")

		// Before the deadline: kept open, no event, no version change, next run date scheduled.
		now := e.clock.Now()
		rep := e.reviewTeamAs("w1")
		if rep.KeptOpen != 1 || rep.Overdue != 0 || rep.Resolved != 0 {
			t.Errorf("before the deadline: %+v, want kept open", rep)
		}
		c := e.ledger().Case(s.ConflictID)
		if c.Status != "open" || c.Version != opened.Version || !c.ReviewDueAt.Equal(opened.ReviewDueAt) ||
			!c.NextReviewAt.Equal(nextMidnightUTC(now)) || c.ClaimToken != nil || c.LastEvaluatedAt == nil ||
			!c.LastEvaluatedAt.Equal(now) {
			t.Errorf("before the deadline: case %+v, want open v%d, next review %v", c, opened.Version, nextMidnightUTC(now))
		}
		if n := len(e.ledger().Case(s.ConflictID).Events); n != 1 {
			t.Errorf("before the deadline: %d events, want only the opening", n)
		}

		// The last run date before the deadline still keeps it open.
		e.clock.Advance(opened.ReviewDueAt.Sub(e.clock.Now()) - 24*time.Hour)
		if rep := e.reviewTeamAs("w1"); rep.KeptOpen != 1 {
			t.Errorf("a day before the deadline: %+v", rep)
		}

		// At the deadline exactly: overdue with exactly one escalation event; the deadline does not move.
		at := e.advanceToReviewDue(s.ConflictID)
		rep = e.reviewTeamAs("w1")
		if rep.Overdue != 1 || rep.Resolved != 0 {
			t.Errorf("at the deadline: %+v, want overdue", rep)
		}
		c = e.ledger().Case(s.ConflictID)
		if c.Status != "overdue" || c.Version != opened.Version+1 || !c.ReviewDueAt.Equal(opened.ReviewDueAt) ||
			!c.NextReviewAt.Equal(nextMidnightUTC(at)) || c.ResolvedAt != nil || c.Preferred != "" || c.EffectiveAt != nil {
			t.Errorf("at the deadline: case %+v", c)
		}
		evs := e.ledger().Case(s.ConflictID).Events
		if len(evs) != 2 {
			t.Fatalf("at the deadline: events %+v, want opening and one escalation", evs)
		}
		if ev := evs[1]; ev.Prior != "open" || ev.Resulting != "overdue" || ev.ActorKind != reviewerActorKind || ev.Actor != "" ||
			!strings.HasPrefix(ev.Reason, "overdue_") || !ev.CreatedAt.Equal(at) || ev.Version != opened.Version+1 {
			t.Errorf("escalation event = %+v", ev)
		}

		// The next day: still overdue, no second escalation.
		e.clock.Advance(24 * time.Hour)
		next := e.clock.Now()
		e.reviewTeamAs("w2")
		c = e.ledger().Case(s.ConflictID)
		if c.Status != "overdue" || c.Version != opened.Version+1 || !c.ReviewDueAt.Equal(opened.ReviewDueAt) ||
			!c.NextReviewAt.Equal(nextMidnightUTC(next)) {
			t.Errorf("the day after: case %+v", c)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE conflict_id = $1 AND reason_code LIKE 'overdue\_%'`, s.ConflictID); n != 1 {
			t.Errorf("%d escalation events, want 1", n)
		}
		if n := len(e.ledger().Case(s.ConflictID).Events); n != 2 {
			t.Errorf("the day after: %d events, want 2", n)
		}

		// Nobody was superseded.
		for _, id := range []densemem.RelationshipID{s.A1, s.B1} {
			if st, _, vt, v := e.relationshipState(id); st != "active" || vt != nil || v != 1 {
				t.Errorf("%s: %s valid_to %v v%d, want untouched", id, st, vt, v)
			}
		}
		if n := e.count("relationship_transitions"); n != transitionsBefore {
			t.Errorf("relationship_transitions %d -> %d", transitionsBefore, n)
		}
		// Current recall still shows both positions as an overdue case.
		r := e.recall(e.C, "production", nil, nil)
		if d := cmp.Diff(sortedIDs(s.A1, s.B1), recallIDs(r)); d != "" {
			t.Errorf("recall (-want +got):\n%s", d)
		}
		if len(r.Conflicts) != 1 || r.Conflicts[0].Status != "overdue" {
			t.Errorf("recall conflicts = %+v", r.Conflicts)
		}
	})

	// Authoritative opposition blocks a mere majority, and two authoritative positions leave no unique
	// authority: past the deadline nobody qualifies and the case becomes overdue, not resolved.
	t.Run("authoritative opposition blocks the majority", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		if _, err := e.client.SetTeamPolicy(e.ctx, e.admin, densemem.TeamPolicy{Version: 1, ReviewTTL: defaultReviewTTL, AutoWriteThreshold: 0.7,
			AuthoritativeProfileIDs: []densemem.ProfileID{e.A.ProfileID, e.B.ProfileID}, TimeZone: "UTC"}); err != nil {
			t.Fatal(err)
		}
		af := deploy("production", "main")
		af.authority = "authoritative"
		a1 := e.rememberAccepted(e.A, af).RelationshipID
		e.clock.Advance(24 * time.Hour)
		bf := releaseSinceCutoff("")
		bf.authority = "authoritative"
		b := e.rememberAccepted(e.B, bf)
		caseID := b.Conflict.ConflictID
		e.clock.Advance(time.Hour)
		c1 := e.rememberAccepted(e.C, releaseSinceCutoff("Ops confirmed:")).RelationshipID
		r := e.recall(e.C, "production", nil, nil)
		if len(r.Conflicts) != 1 {
			t.Fatalf("recall conflicts = %+v", r.Conflicts)
		}
		var groups []int
		for _, p := range r.Conflicts[0].Positions {
			groups = append(groups, p.CountedSourceGroups)
		}
		slices.Sort(groups)
		if d := cmp.Diff([]int{1, 2}, groups); d != "" {
			t.Fatalf("counted groups (-want +got):\n%s", d)
		}
		transitionsBefore := e.count("relationship_transitions")
		at := e.advanceToReviewDue(caseID)
		if rep := e.reviewTeamAs("w1"); rep.Overdue != 1 || rep.Resolved != 0 {
			t.Errorf("at the deadline: %+v, want overdue", rep)
		}
		cs := e.ledger().Case(caseID)
		if cs.Status != "overdue" || cs.ResolvedAt != nil || cs.Preferred != "" || !cs.NextReviewAt.Equal(nextMidnightUTC(at)) {
			t.Errorf("case = %+v", cs)
		}
		evs := e.ledger().Case(caseID).Events
		if last := evs[len(evs)-1]; last.Resulting != "overdue" || last.ActorKind != reviewerActorKind ||
			last.Reason != "overdue_no_qualifying_position" {
			t.Errorf("escalation event = %+v", last)
		}
		for _, id := range []densemem.RelationshipID{a1, b.RelationshipID, c1} {
			if st, _, vt, v := e.relationshipState(id); st != "active" || vt != nil || v != 1 {
				t.Errorf("%s: %s valid_to %v v%d, want untouched", id, st, vt, v)
			}
		}
		if n := e.count("relationship_transitions"); n != transitionsBefore {
			t.Errorf("relationship_transitions %d -> %d", transitionsBefore, n)
		}
	})
}

// ---- Invariant 21 ----

// reviewerImmutableTables are the tables the reviewer must never change.
var reviewerImmutableTables = []string{"evidence_fragments", "fragment_contents", "observations", "verification_events",
	"support_links", "relationship_cross_references", "entity_resolution_events", "entities", "entity_names",
	"literal_values", "idempotency_records", "review_items", "predicate_definitions", "profiles", "team_policies"}

func TestInvariant21_ReviewerCannotMutateEvidenceOrAuthorship(t *testing.T) {
	t.Parallel()

	t.Run("resolution leaves evidence and authorship byte-identical", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(true, true)
		before := map[string][]string{}
		for _, table := range reviewerImmutableTables {
			before[table] = e.ledger().Rows(table)
		}
		for _, table := range []string{"evidence_fragments", "fragment_contents", "observations", "verification_events",
			"support_links", "relationship_cross_references", "entity_resolution_events", "entities", "entity_names"} {
			if len(before[table]) == 0 {
				t.Fatalf("%s is empty before the run; the comparison would prove nothing", table)
			}
		}
		authored := e.ledger().Authored()
		var winnersBefore []string
		for _, id := range []densemem.RelationshipID{s.B1, s.C1, s.Staging} {
			winnersBefore = append(winnersBefore, e.ledger().Rows(fmt.Sprintf("(SELECT * FROM relationships WHERE relationship_id = '%s')", id))...)
		}

		e.resolveAtReviewDue(s)

		for _, table := range reviewerImmutableTables {
			if d := cmp.Diff(before[table], e.ledger().Rows(table)); d != "" {
				t.Errorf("the reviewer changed %s (-before +after):\n%s", table, d)
			}
		}
		if d := cmp.Diff(authored, e.ledger().Authored()); d != "" {
			t.Errorf("authored relationship fields changed (-before +after):\n%s", d)
		}
		var winnersAfter []string
		for _, id := range []densemem.RelationshipID{s.B1, s.C1, s.Staging} {
			winnersAfter = append(winnersAfter, e.ledger().Rows(fmt.Sprintf("(SELECT * FROM relationships WHERE relationship_id = '%s')", id))...)
		}
		if d := cmp.Diff(winnersBefore, winnersAfter); d != "" {
			t.Errorf("non-losing relationships changed (-before +after):\n%s", d)
		}
		// The loser changed only status, valid_to, version and updated_at, through one reviewer transition.
		st, tier, vt, v := e.relationshipState(s.A1)
		if st != "superseded" || tier != "validated_claim" || vt == nil || !vt.Equal(releaseCutoff) || v != 2 {
			t.Errorf("A1 = %s/%s valid_to %v v%d", st, tier, vt, v)
		}
		if owner := e.trace(e.admin, s.A1).Relationship.OwnerProfileID; owner != e.A.ProfileID {
			t.Errorf("A1 owner = %s, want A", owner)
		}
	})

	t.Run("database refuses the reviewer role", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, true)
		if e.count("entity_resolution_events") == 0 || e.count("relationship_cross_references") == 0 {
			t.Fatal("nothing to copy: the story wrote no resolution events or cross-references")
		}

		// copyRow inserts a copy of one existing row of table under a fresh primary key value, so the
		// statement is otherwise valid.
		copyRow := func(table, pk string) string {
			return fmt.Sprintf(`INSERT INTO %[1]s SELECT (jsonb_populate_record(NULL::%[1]s,
				to_jsonb(x) || jsonb_build_object('%[2]s', 'nr_probe_' || x.%[2]s))).* FROM %[1]s x ORDER BY x.%[2]s LIMIT 1`, table, pk)
		}
		type probe struct {
			name string
			sql  string
			args []any
		}
		refused := []probe{
			{"insert evidence_fragments", copyRow("evidence_fragments", "fragment_id"), nil},
			{"insert fragment_contents", `INSERT INTO fragment_contents (team_id, fragment_id, content)
				SELECT team_id, fragment_id, content FROM fragment_contents LIMIT 1`, nil},
			{"insert observations", copyRow("observations", "observation_id"), nil},
			{"insert verification_events", copyRow("verification_events", "verification_id"), nil},
			{"insert support_links", copyRow("support_links", "support_id"), nil},
			{"insert relationship_cross_references", copyRow("relationship_cross_references", "xref_id"), nil},
			{"insert entity_resolution_events", copyRow("entity_resolution_events", "resolution_id"), nil},
			{"insert entities", copyRow("entities", "entity_id"), nil},
			{"insert relationships", copyRow("relationships", "relationship_id"), nil},
			{"retract a relationship", `UPDATE relationships SET status = 'retracted', version = version + 1
				WHERE relationship_id = $1`, []any{s.B1}},
			{"supersede with a tier change", `UPDATE relationships SET status = 'superseded', tier = 'fact', version = version + 1
				WHERE relationship_id = $1`, []any{s.B1}},
			{"transition as a profile", `INSERT INTO relationship_transitions SELECT (jsonb_populate_record(NULL::relationship_transitions,
				to_jsonb(x) || jsonb_build_object('transition_id', 'trn_nr_probe', 'to_version', 99, 'actor_kind', 'profile',
				'actor_profile_id', $1::text))).* FROM relationship_transitions x WHERE x.relationship_id = $2 LIMIT 1`,
				[]any{string(e.A.ProfileID), s.A1}},
		}
		// exec runs one statement in its own transaction of the team, as the reviewer role or as the
		// runtime role, and rolls back.
		exec := func(asReviewer bool, p probe) error {
			pool := e.runtime
			if asReviewer {
				pool = e.reviewer
			}
			tx, err := pool.Begin(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(e.ctx) }()
			if _, err := tx.Exec(e.ctx, teamSQL, bindArgs(tx, e.bindingKey, e.team)...); err != nil {
				t.Fatal(err)
			}
			_, err = tx.Exec(e.ctx, p.sql, p.args...)
			return err
		}
		code := func(err error) string {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				return pgErr.Code
			}
			return ""
		}
		snapshot := map[string][]string{}
		for _, table := range append(slices.Clone(reviewerImmutableTables), "relationships", "relationship_transitions") {
			snapshot[table] = e.ledger().Rows(table)
		}
		for _, p := range refused {
			t.Run(p.name, func(t *testing.T) {
				// The reviewer's role lacks the privilege (42501), or the value fence refuses (DM004).
				if err := exec(true, p); code(err) != "DM004" && code(err) != "42501" {
					t.Errorf("as the reviewer: %v, want SQLSTATE 42501 or DM004", err)
				}
				if err := exec(false, p); code(err) == "DM004" || code(err) == "42501" {
					t.Errorf("without the reviewer actor the statement is refused by the reviewer fence: %v", err)
				} else if err != nil {
					t.Logf("without the reviewer actor: %v (not the fence)", err)
				}
			})
		}
		// What the reviewer may do: resolve a case with its event and supersede a member of a position
		// it did not prefer, together with its own transition, deferred checks included (rolled back
		// afterwards). Without the resolution the supersession is refused (migration 26).
		t.Run("allowed supersession", func(t *testing.T) {
			tx, err := e.reviewer.Begin(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(e.ctx) }()
			for _, stmt := range []struct {
				sql  string
				args []any
			}{
				{teamSQL, bindArgs(tx, e.bindingKey, e.team)},
				{`UPDATE conflict_cases c SET status = 'resolved', version = version + 1, resolved_at = $2, updated_at = $2,
					preferred_position_id = (SELECT m.position_id FROM conflict_position_members m WHERE m.team_id = c.team_id
						AND m.conflict_id = c.conflict_id AND m.relationship_id <> $1 LIMIT 1)
					WHERE c.conflict_id = (SELECT conflict_id FROM conflict_position_members WHERE relationship_id = $1 LIMIT 1)`,
					[]any{s.A1, e.clock.Now()}},
				{`INSERT INTO conflict_events SELECT (jsonb_populate_record(NULL::conflict_events, to_jsonb(x) || jsonb_build_object(
					'event_id', 'cev_nr_probe', 'case_version', c.version, 'prior_status', 'open', 'resulting_status', 'resolved',
					'actor_kind', 'system_conflict_reviewer', 'actor_profile_id', NULL, 'reason_code', 'nr probe'))).*
					FROM conflict_cases c JOIN conflict_events x ON x.team_id = c.team_id AND x.conflict_id = c.conflict_id
					WHERE c.conflict_id = (SELECT conflict_id FROM conflict_position_members WHERE relationship_id = $1 LIMIT 1)
					LIMIT 1`, []any{s.A1}},
				{`UPDATE relationships SET status = 'superseded', valid_to = $2, version = version + 1, updated_at = $3
					WHERE relationship_id = $1`, []any{s.A1, releaseCutoff, e.clock.Now()}},
				{`INSERT INTO relationship_transitions (team_id, transition_id, relationship_id, from_status, to_status,
					from_tier, to_tier, to_valid_to, from_version, to_version, reason, actor_kind, ingest_id, idempotency_key,
					created_at)
					SELECT team_id, 'trn_nr_probe', relationship_id, 'active', status, tier, tier, valid_to, version - 1, version,
					       'nr probe', 'system_conflict_reviewer', 'nr', '', $2
					FROM relationships WHERE relationship_id = $1`, []any{s.A1, e.clock.Now()}},
				{`SET CONSTRAINTS ALL IMMEDIATE`, nil},
			} {
				if _, err := tx.Exec(e.ctx, stmt.sql, stmt.args...); err != nil {
					t.Fatalf("as the reviewer: %v, want a supersession with its transition allowed", err)
				}
			}
		})
		for table, rows := range snapshot {
			if d := cmp.Diff(rows, e.ledger().Rows(table)); d != "" {
				t.Errorf("a rolled-back probe left rows in %s:\n%s", table, d)
			}
		}
	})

	// The fence lets the reviewer append transitions only as itself, but a reviewer transition must
	// also be the ledger row of a supersession it makes: a lone transition that changes no
	// relationship row would rewrite the lifecycle every ledger reader (recall, known_at) derives.
	t.Run("a reviewer transition needs its relationship change", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, true)
		for _, to := range []string{"retracted", "superseded"} {
			t.Run(to, func(t *testing.T) {
				tx, err := e.pool.Begin(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback(e.ctx) }()
				if _, err := tx.Exec(e.ctx, `SET LOCAL densemem.actor = 'system_conflict_reviewer'`); err != nil {
					t.Fatal(err)
				}
				_, err = tx.Exec(e.ctx, `INSERT INTO relationship_transitions (team_id, transition_id, relationship_id,
					from_status, to_status, from_tier, to_tier, from_version, to_version, reason, actor_kind, ingest_id,
					idempotency_key, created_at)
					SELECT team_id, 'trn_nr_lone_' || $2::text, relationship_id, status, $2::text, tier, tier, version,
					       version + 1, 'nr probe', 'system_conflict_reviewer', 'nr', '', $3
					FROM relationships WHERE relationship_id = $1`, s.B1, to, e.clock.Now())
				if err == nil {
					err = tx.Commit(e.ctx)
				}
				if err != nil {
					return // refused, as it should be
				}
				st, _, _, v := e.relationshipState(s.B1)
				r := e.recall(e.C, "production", nil, nil)
				t.Errorf("as the reviewer, a lone %s transition of B1 committed without any change of B1 (row still %s v%d); "+
					"current recall now returns %v without B1 %s", to, st, v, recallIDs(r), s.B1)
			})
			if t.Failed() {
				break // the first committed probe already changed B1's ledger
			}
		}
	})
}

// ---- I-25 ----

func TestInvariant25_TwoWorkersResolveEachCaseOnce(t *testing.T) {
	t.Parallel()
	const n = 20
	e := newEnv(t, func(c *densemem.Config) { c.Nightly.Batch = 3 })
	losers := make([]densemem.RelationshipID, n)
	cases := make([]string, n)
	for i := range n {
		losers[i] = e.rememberAccepted(e.A, deploy(fmt.Sprintf("env%02d", i), "main")).RelationshipID
	}
	e.clock.Advance(24 * time.Hour)
	for i := range n {
		name := fmt.Sprintf("env%02d", i)
		b := e.rememberAccepted(e.B, deploy(name, "release").since(releaseCutoff))
		if b.Conflict == nil {
			t.Fatalf("%s: no case", name)
		}
		cases[i] = b.Conflict.ConflictID
		e.rememberAccepted(e.C, withContent(deploy(name, "release").since(releaseCutoff),
			fmt.Sprintf("Ops confirmed: since 2026-05-01 the %s environment deploys from the release branch.", name)))
	}
	e.clock.Advance(defaultReviewTTL + time.Hour)

	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		reports [2]*densemem.NightlyReviewReport
		errs    [2]error
	)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			reports[w], errs[w] = e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{WorkerID: fmt.Sprintf("worker-%d", w)})
		}()
	}
	close(start)
	wg.Wait()
	resolved, reserved, claimed, failed := 0, 0, 0, 0
	for w := range 2 {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		t.Logf("worker %d: %+v", w, *reports[w])
		resolved += reports[w].Resolved
		reserved += reports[w].Reserved
		claimed += reports[w].Claimed
		failed += reports[w].Failed
	}
	if resolved != n {
		t.Errorf("reports resolved %d cases, want %d", resolved, n)
	}
	if reserved != 1 {
		t.Errorf("the run date was reserved %d times, want 1", reserved)
	}
	if claimed-failed != n {
		t.Errorf("claimed %d with %d failures, want %d successful claims", claimed, failed, n)
	}
	for i, id := range cases {
		if k := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE conflict_id = $1 AND resulting_status = 'resolved'`, id); k != 1 {
			t.Errorf("case %d (%s): %d resolved events, want 1", i, id, k)
		}
		if c := e.ledger().Case(id); c.Status != "resolved" || c.ClaimToken != nil || c.LeaseExpires != nil {
			t.Errorf("case %d: %+v, want resolved and unclaimed", i, c)
		}
	}
	for i, id := range losers {
		k := 0
		for _, x := range e.trace(e.admin, id).Transitions {
			if x.ToStatus == "superseded" {
				k++
			}
		}
		if k != 1 {
			t.Errorf("loser %d (%s): %d superseded transitions, want 1", i, id, k)
		}
		if st, _, vt, v := e.relationshipState(id); st != "superseded" || vt == nil || !vt.Equal(releaseCutoff) || v != 2 {
			t.Errorf("loser %d: %s valid_to %v v%d", i, st, vt, v)
		}
	}
	if k := e.ledger().Int(`SELECT count(*) FROM conflict_cases WHERE claim_token IS NOT NULL`); k != 0 {
		t.Errorf("%d cases left claimed", k)
	}
	if k := e.ledger().Int(`SELECT count(*) FROM relationship_transitions WHERE to_status = 'superseded'`); k != n {
		t.Errorf("%d supersessions, want %d", k, n)
	}
	if k := e.ledger().Int(`SELECT count(*) FROM nightly_runs`); k != 1 {
		t.Errorf("nightly_runs has %d rows, want 1", k)
	}
}

// ---- deadline rules ----

func TestNightlyDeadlineBehaviour(t *testing.T) {
	t.Parallel()

	t.Run("new independent support after the deadline resolves later without moving it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, false)
		due := e.ledger().Case(s.ConflictID).ReviewDueAt
		e.advanceToReviewDue(s.ConflictID)
		if rep := e.reviewTeamAs("w1"); rep.Overdue != 1 {
			t.Fatalf("at the deadline with 1 vs 1 group: %+v, want overdue", rep)
		}
		e.clock.Advance(2 * time.Hour)
		c := e.rememberAccepted(e.C, releaseSinceCutoff("Ops confirmed:"))
		if c.Conflict == nil || c.Conflict.ConflictID != s.ConflictID || c.Conflict.Status != "overdue" {
			t.Fatalf("C's support: conflict %+v, want the overdue case %s", c.Conflict, s.ConflictID)
		}
		if cs := e.ledger().Case(s.ConflictID); !cs.ReviewDueAt.Equal(due) || cs.Status != "overdue" {
			t.Errorf("after new support: case %+v, want overdue with review_due_at %v", cs, due)
		}
		// The same day the case is not due again; the next run date resolves it.
		if rep := e.reviewTeamAs("w1"); rep.Claimed != 0 {
			t.Errorf("same day: %+v, want nothing claimed", rep)
		}
		e.clock.Advance(24 * time.Hour)
		at := e.clock.Now()
		if rep := e.reviewTeamAs("w1"); rep.Resolved != 1 {
			t.Fatalf("next run date: %+v, want resolved", rep)
		}
		cs := e.ledger().Case(s.ConflictID)
		if cs.Status != "resolved" || !cs.ReviewDueAt.Equal(due) || cs.ResolvedAt == nil || !cs.ResolvedAt.Equal(at) ||
			cs.EffectiveAt == nil || !cs.EffectiveAt.Equal(releaseCutoff) || cs.Basis != "evidence_time" {
			t.Errorf("resolved case = %+v", cs)
		}
		evs := e.ledger().Case(s.ConflictID).Events
		if last := evs[len(evs)-1]; last.Prior != "overdue" || last.Resulting != "resolved" || last.ActorKind != reviewerActorKind {
			t.Errorf("resolution event = %+v", last)
		}
		if st, _, vt, _ := e.relationshipState(s.A1); st != "superseded" || vt == nil || !vt.Equal(releaseCutoff) {
			t.Errorf("A1 = %s valid_to %v", st, vt)
		}
	})

	t.Run("duplicate evidence of one group changes neither deadline nor outcome", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		D := e.mustProfile("D", "read", "write")
		a1 := e.rememberAccepted(e.A, deploy("production", "main")).RelationshipID
		e.clock.Advance(24 * time.Hour)
		bf := releaseSinceCutoff("")
		bf.sourceGroup = "ticket-42"
		b := e.rememberAccepted(e.B, bf)
		caseID := b.Conflict.ConflictID
		due := e.ledger().Case(caseID).ReviewDueAt
		e.advanceToReviewDue(caseID)
		if rep := e.reviewTeamAs("w1"); rep.Overdue != 1 {
			t.Fatalf("at the deadline: %+v, want overdue", rep)
		}
		e.clock.Advance(time.Hour)
		// C copies B's words exactly (same content hash); D cites other words under B's source group.
		copied := e.rememberAccepted(e.C, releaseSinceCutoff(""))
		e.clock.Advance(time.Minute)
		df := releaseSinceCutoff("Ticket 42, comment 3:")
		df.sourceGroup = "ticket-42"
		sameGroup := e.rememberAccepted(D, df)
		for _, out := range []densemem.RelationshipOutcome{copied, sameGroup} {
			if out.Conflict == nil || out.Conflict.ConflictID != caseID {
				t.Fatalf("%s joined no case: %+v", out.RelationshipID, out.Conflict)
			}
		}
		cs := e.ledger().Case(caseID)
		if !cs.ReviewDueAt.Equal(due) || cs.Status != "overdue" {
			t.Errorf("after duplicates: case %+v, want overdue with review_due_at %v", cs, due)
		}
		r := e.recall(e.C, "production", nil, nil)
		if len(r.Conflicts) != 1 {
			t.Fatalf("recall conflicts = %+v", r.Conflicts)
		}
		for _, p := range r.Conflicts[0].Positions {
			if p.CountedSourceGroups != 1 {
				t.Errorf("position %s (%s) counts %d groups, want 1", p.PositionID, p.Object.Name, p.CountedSourceGroups)
			}
		}
		versionBefore, eventsBefore := cs.Version, len(e.ledger().Case(caseID).Events)

		e.clock.Advance(24 * time.Hour)
		rep := e.reviewTeamAs("w1")
		if rep.Resolved != 0 || rep.Overdue != 1 {
			t.Errorf("next run: %+v, want still overdue", rep)
		}
		cs = e.ledger().Case(caseID)
		if cs.Status != "overdue" || cs.Version != versionBefore || !cs.ReviewDueAt.Equal(due) {
			t.Errorf("next run: case %+v, want overdue v%d due %v", cs, versionBefore, due)
		}
		if n := len(e.ledger().Case(caseID).Events); n != eventsBefore {
			t.Errorf("next run appended %d events", n-eventsBefore)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE conflict_id = $1 AND reason_code LIKE 'overdue\_%'`, caseID); n != 1 {
			t.Errorf("%d escalation events, want 1", n)
		}
		for _, id := range []densemem.RelationshipID{a1, b.RelationshipID, copied.RelationshipID, sameGroup.RelationshipID} {
			if st, _, _, _ := e.relationshipState(id); st != "active" {
				t.Errorf("%s = %s, want active", id, st)
			}
		}
	})

	t.Run("a later contradictory change opens a new case", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, true)
		e.resolveAtReviewDue(s)
		resolved := e.ledger().Case(s.ConflictID)
		resolvedEvents := len(e.ledger().Case(s.ConflictID).Events)

		// The business moves production back to main on 2026-07-01; A learns it the day after.
		e.clock.Advance(date("2026-07-02").Add(9 * time.Hour).Sub(e.clock.Now()))
		a2 := e.rememberAccepted(e.A, deploy("production", "main").since(date("2026-07-01")))
		if a2.Conflict == nil {
			t.Fatalf("A2 opened no case: %+v", a2)
		}
		if a2.Conflict.ConflictID == s.ConflictID {
			t.Fatalf("A2 reopened the resolved case %s", s.ConflictID)
		}
		if a2.Conflict.Status != "open" || a2.Conflict.Version != 1 {
			t.Errorf("new case ref = %+v, want open v1", a2.Conflict)
		}
		if d := cmp.Diff(resolved, e.ledger().Case(s.ConflictID)); d != "" {
			t.Errorf("the resolved case changed (-before +after):\n%s", d)
		}
		if n := len(e.ledger().Case(s.ConflictID).Events); n != resolvedEvents {
			t.Errorf("the resolved case gained %d events", n-resolvedEvents)
		}
		nc := e.ledger().Case(a2.Conflict.ConflictID)
		now := e.clock.Now()
		if nc.Status != "open" || !nc.OpenedAt.Equal(now) || !nc.ReviewDueAt.Equal(now.Add(defaultReviewTTL)) || nc.Subject != resolved.Subject {
			t.Errorf("new case = %+v", nc)
		}
		live, err := e.client.ListConflicts(e.ctx, e.admin, densemem.ListConflictsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(live.Conflicts); n != 1 {
			t.Errorf("%d live cases, want 1", n)
		}
		// Membership rows, current and removed, of the new case.
		current, a1Rows := map[densemem.RelationshipID]int{}, 0
		for _, m := range nc.Members {
			if m.Removed == nil {
				current[m.Relationship]++
			}
			if m.Relationship == s.A1 {
				a1Rows++
			}
		}
		var members []string
		for id := range map[densemem.RelationshipID]bool{a2.RelationshipID: true, s.B1: true, s.C1: true} {
			if current[id] != 1 {
				members = append(members, string(id))
			}
		}
		if len(members) > 0 {
			t.Errorf("new case lacks members %v", members)
		}
		if a1Rows != 0 {
			t.Errorf("the superseded A1 is a member of the new case")
		}
	})
}

// A case is decided under the team policy version it pinned when it opened, and its events record
// that version (decision 72). The production case opens under version 1, where A's "authoritative"
// evidence carries no authority; the host then makes A authoritative (version 2, with a one-day TTL)
// and a staging case opens under it. One run past both deadlines decides each under its own version:
// production for release's majority (under version 2, A's unique authority would keep main), staging
// for A's authority.
func TestNightlyReviewAppliesThePinnedPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// openCase has A remember env deploys from branch with authoritative evidence, then B and C (a
	// day and an hour apart) release since the cutoff, each with their own words: two groups against
	// one. It returns A's and B's relationships and the case B's opened.
	openCase := func(env, branch string) (a, b, c densemem.RelationshipID, caseID string) {
		t.Helper()
		af := deploy(env, branch)
		af.authority = "authoritative"
		a = e.rememberAccepted(e.A, af).RelationshipID
		e.clock.Advance(24 * time.Hour)
		bo := e.rememberAccepted(e.B, deploy(env, "release").since(releaseCutoff))
		if bo.Conflict == nil || bo.Conflict.Status != "open" {
			t.Fatalf("%s: B's release opened no case: %+v", env, bo)
		}
		e.clock.Advance(time.Hour)
		cf := deploy(env, "release").since(releaseCutoff)
		cf.content = "Ops confirmed: " + cf.content
		co := e.rememberAccepted(e.C, cf)
		if co.Conflict == nil || co.Conflict.ConflictID != bo.Conflict.ConflictID {
			t.Fatalf("%s: C's release did not join case %s: %+v", env, bo.Conflict.ConflictID, co.Conflict)
		}
		return a, bo.RelationshipID, co.RelationshipID, bo.Conflict.ConflictID
	}

	prodA, prodB, prodC, prodCase := openCase("production", "main")
	pol, err := e.client.TeamPolicy(e.ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Version != 1 || len(pol.AuthoritativeProfileIDs) != 0 {
		t.Fatalf("policy in force = %+v, want version 1 without authoritative profiles", pol)
	}
	pol.AuthoritativeProfileIDs, pol.ReviewTTL = []densemem.ProfileID{e.A.ProfileID}, 24*time.Hour
	if pol, err = e.client.SetTeamPolicy(e.ctx, e.admin, pol); err != nil || pol.Version != 2 {
		t.Fatalf("SetTeamPolicy = %+v, %v; want version 2", pol, err)
	}
	e.clock.Advance(time.Hour)
	stgA, stgB, stgC, stgCase := openCase("staging", "develop")

	// Each case pinned the version in force when it opened, and its deadline from that version's TTL.
	prod, stg := e.listedConflict(prodCase), e.listedConflict(stgCase)
	if prod.PolicyVersion != 1 || !prod.ReviewDueAt.Equal(prod.OpenedAt.Add(defaultReviewTTL)) {
		t.Errorf("production case pins policy v%d, due %v; want v1 due %v", prod.PolicyVersion, prod.ReviewDueAt,
			prod.OpenedAt.Add(defaultReviewTTL))
	}
	if stg.PolicyVersion != 2 || !stg.ReviewDueAt.Equal(stg.OpenedAt.Add(24*time.Hour)) {
		t.Errorf("staging case pins policy v%d, due %v; want v2 due %v", stg.PolicyVersion, stg.ReviewDueAt, stg.OpenedAt.Add(24*time.Hour))
	}

	// The production deadline comes after the staging one: one run reviews both.
	e.advanceToReviewDue(prodCase)
	if rep := e.reviewTeamAs("w1"); rep.Resolved != 2 || rep.Failed != 0 {
		t.Fatalf("nightly review past both deadlines: %+v, want 2 resolved", rep)
	}

	for _, c := range []struct {
		env, caseID    string
		policy         int
		winner, reason string
		basis          string
		kept, replaced []densemem.RelationshipID
	}{
		{"production", prodCase, 1, "release", "post_ttl_majority_floor_met", "evidence_time",
			[]densemem.RelationshipID{prodB, prodC}, []densemem.RelationshipID{prodA}},
		{"staging", stgCase, 2, "develop", "post_ttl_unique_authority", "recorded_fallback",
			[]densemem.RelationshipID{stgA}, []densemem.RelationshipID{stgB, stgC}},
	} {
		listed := e.listedConflict(c.caseID)
		var winner string
		for _, p := range listed.Positions {
			if p.PositionID == listed.PreferredPositionID {
				winner = p.Object.Name
			}
		}
		if listed.Status != "resolved" || winner != c.winner || listed.EffectiveTimeBasis != c.basis || listed.PolicyVersion != c.policy {
			t.Errorf("%s case: %s for %q (%s) under policy v%d; want resolved for %q (%s) under v%d", c.env, listed.Status,
				winner, listed.EffectiveTimeBasis, listed.PolicyVersion, c.winner, c.basis, c.policy)
		}
		for _, id := range c.kept {
			if st, _, _, _ := e.relationshipState(id); st != "active" {
				t.Errorf("%s case: winner's %s is %s, want active", c.env, id, st)
			}
		}
		for _, id := range c.replaced {
			if st, _, _, _ := e.relationshipState(id); st != "superseded" {
				t.Errorf("%s case: loser's %s is %s, want superseded", c.env, id, st)
			}
		}
		// Trace shows the resolution's reason and the policy version it was decided under.
		var traced *densemem.TraceConflict
		tr := e.trace(e.C, c.kept[0])
		for i := range tr.Conflicts {
			if tr.Conflicts[i].ConflictID == c.caseID {
				traced = &tr.Conflicts[i]
			}
		}
		if traced == nil || len(traced.Events) == 0 {
			t.Fatalf("%s case: Trace of %s shows no events of case %s", c.env, c.kept[0], c.caseID)
		}
		if last := traced.Events[len(traced.Events)-1]; last.ResultingStatus != "resolved" || last.ActorKind != reviewerActorKind ||
			last.Reason != c.reason || last.PolicyVersion != c.policy {
			t.Errorf("%s case: resolution event %+v, want %s under policy v%d", c.env, last, c.reason, c.policy)
		}
		// Every event of the case records the version it pinned, the opening's and the reviewer's alike.
		for _, ev := range e.ledger().Case(c.caseID).Events {
			if ev.PolicyVersion != c.policy {
				t.Errorf("%s case: event v%d (%s) records policy v%d, want v%d", c.env, ev.Version, ev.Reason, ev.PolicyVersion, c.policy)
			}
		}
	}
}

// ---- recall views after resolution ----

func TestRecallAfterResolutionViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.openStaleDeployCase(false, true)
	beforeResolution := e.advanceToReviewDue(s.ConflictID).Add(-time.Minute)
	e.resolveAtReviewDue(s)
	e.clock.Advance(time.Hour)

	t.Run("current view", func(t *testing.T) {
		r := e.recall(e.A, "production", nil, nil)
		if d := cmp.Diff(sortedIDs(s.B1, s.C1), recallIDs(r)); d != "" {
			t.Errorf("current view (-want +got):\n%s", d)
		}
		for _, x := range r.Results {
			if x.ResolvedConflict == nil || x.ResolvedConflict.ConflictID != s.ConflictID {
				t.Errorf("%s: resolved_conflict %+v", x.Relationship.RelationshipID, x.ResolvedConflict)
			}
		}
		if len(r.Conflicts) != 0 {
			t.Errorf("conflicts = %+v, want none live", r.Conflicts)
		}
	})

	t.Run("valid_at before the cutoff", func(t *testing.T) {
		r := e.recall(e.A, "production", ptr(date("2026-04-01")), nil)
		if d := cmp.Diff([]densemem.RelationshipID{s.A1}, recallIDs(r)); d != "" {
			t.Fatalf("valid_at 2026-04-01 (-want +got):\n%s", d)
		}
		rel := r.Results[0].Relationship
		if rel.Object.Name != "main" || rel.Status != "superseded" || rel.ValidTo == nil || !rel.ValidTo.Equal(releaseCutoff) {
			t.Errorf("A1 at valid_at 2026-04-01 = %+v", rel)
		}
	})

	t.Run("valid_at at the cutoff", func(t *testing.T) {
		r := e.recall(e.A, "production", ptr(releaseCutoff), nil)
		if d := cmp.Diff(sortedIDs(s.B1, s.C1), recallIDs(r)); d != "" {
			t.Errorf("valid_at 2026-05-01 (-want +got):\n%s", d)
		}
	})

	t.Run("known_at before the correction", func(t *testing.T) {
		r := e.recall(e.A, "production", nil, ptr(s.T2.Add(-time.Minute)))
		if d := cmp.Diff([]densemem.RelationshipID{s.A1}, recallIDs(r)); d != "" {
			t.Fatalf("known_at before B (-want +got):\n%s", d)
		}
		rel := r.Results[0].Relationship
		if rel.Status != "active" || rel.ValidTo != nil || rel.Version != 1 {
			t.Errorf("A1 as known before B = %+v", rel)
		}
		if len(r.Conflicts) != 0 || r.Results[0].ConflictID != "" || r.Results[0].ResolvedConflict != nil {
			t.Errorf("known_at before B leaks a case: %+v / %+v", r.Conflicts, r.Results[0])
		}
	})

	t.Run("known_at before the resolution", func(t *testing.T) {
		r := e.recall(e.A, "production", nil, ptr(beforeResolution))
		if d := cmp.Diff(sortedIDs(s.A1, s.B1, s.C1), recallIDs(r)); d != "" {
			t.Errorf("known_at before the resolution (-want +got):\n%s", d)
		}
		for _, x := range r.Results {
			if x.ResolvedConflict != nil || x.ConflictID != s.ConflictID {
				t.Errorf("%s as known before the resolution: conflict_id %q resolved %+v", x.Relationship.RelationshipID,
					x.ConflictID, x.ResolvedConflict)
			}
			if x.Relationship.Status != "active" {
				t.Errorf("%s as known before the resolution: %s", x.Relationship.RelationshipID, x.Relationship.Status)
			}
		}
		if len(r.Conflicts) != 1 || r.Conflicts[0].Status != "open" {
			t.Errorf("conflicts as known before the resolution = %+v", r.Conflicts)
		}
	})

	t.Run("trace lineage of A1", func(t *testing.T) {
		tr, err := e.client.Trace(e.ctx, e.B, densemem.TraceRequest{RelationshipID: s.A1, IncludeEvidenceContent: true,
			IncludeVerification: true, IncludeTransitions: true})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Relationship.Status != "superseded" || tr.Relationship.OwnerProfileID != e.A.ProfileID {
			t.Errorf("A1 = %+v", tr.Relationship)
		}
		if len(tr.Evidence) != 1 || tr.Evidence[0].Content != deploy("production", "main").content ||
			len(tr.Observations) != 1 || len(tr.Verifications) != 1 {
			t.Errorf("A1 evidence %+v, %d observations, %d verifications", tr.Evidence, len(tr.Observations), len(tr.Verifications))
		}
		var trs []string
		for _, x := range tr.Transitions {
			trs = append(trs, fmt.Sprintf("%s->%s %s v%d", x.FromStatus, x.ToStatus, x.ActorKind, x.ToVersion))
		}
		if d := cmp.Diff([]string{"->active profile v1", "active->superseded " + reviewerActorKind + " v2"}, trs); d != "" {
			t.Errorf("A1 transitions (-want +got):\n%s", d)
		}
		var xrefs []string
		for _, x := range tr.CrossReferences {
			xrefs = append(xrefs, fmt.Sprintf("%s %s %s", x.Direction, x.Kind, x.FromRelationshipID))
		}
		slices.Sort(xrefs)
		want := []string{"incoming corrects " + string(s.B1), "incoming corrects " + string(s.C1)}
		slices.Sort(want)
		if d := cmp.Diff(want, xrefs); d != "" {
			t.Errorf("A1 cross-references (-want +got):\n%s", d)
		}
		if len(tr.Conflicts) != 1 {
			t.Fatalf("A1 conflicts = %+v", tr.Conflicts)
		}
		var reasons []string
		for _, ev := range tr.Conflicts[0].Events {
			reasons = append(reasons, ev.ResultingStatus+":"+ev.Reason)
		}
		if d := cmp.Diff([]string{"open:opened", "open:membership_changed", "resolved:post_ttl_majority_floor_met"}, reasons); d != "" {
			t.Errorf("A1 case events (-want +got):\n%s", d)
		}
	})
}

// ---- run reservation ----

func TestNightlyRunReservation(t *testing.T) {
	t.Parallel()

	t.Run("a second run the same day only helps", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.rememberAccepted(e.A, deploy("production", "main"))
		e.rememberAccepted(e.A, deploy("staging", "main"))
		e.clock.Advance(24 * time.Hour)
		first := e.rememberAccepted(e.B, releaseSinceCutoff("")).Conflict.ConflictID
		second := e.rememberAccepted(e.B, deploy("staging", "release")).Conflict.ConflictID
		if first == second {
			t.Fatal("two keys share one case")
		}
		rep1, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team},
			WorkerID: "early", MaxCases: 1})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Hour)
		rep2 := e.reviewTeamAs("late")
		rep3 := e.reviewTeamAs("later")
		if rep1.Reserved != 1 || rep1.Claimed != 1 {
			t.Errorf("first run: %+v, want the reservation and one claim", rep1)
		}
		if rep2.Reserved != 0 || rep2.Claimed != 1 || rep2.KeptOpen != 1 {
			t.Errorf("second run: %+v, want no reservation but help with the other case", rep2)
		}
		if rep3.Reserved != 0 || rep3.Claimed != 0 {
			t.Errorf("third run: %+v, want nothing", rep3)
		}
		runs := e.ledger().Strings(`SELECT run_date::text || ' by ' || worker_id FROM nightly_runs WHERE team_id = $1`, e.team)
		if d := cmp.Diff([]string{"2026-06-02 by early"}, runs); d != "" {
			t.Errorf("nightly_runs (-want +got), want exactly one row:\n%s", d)
		}
		for _, id := range []string{first, second} {
			if c := e.ledger().Case(id); c.Attempts != 1 || c.Status != "open" {
				t.Errorf("case %s: %+v, want one attempt", id, c)
			}
		}
		// The next day a new run date is reserved.
		e.clock.Advance(24 * time.Hour)
		if rep := e.reviewTeamAs("tomorrow"); rep.Reserved != 1 || rep.Claimed != 2 {
			t.Errorf("next day: %+v", rep)
		}
	})

	t.Run("the team time zone sets the run date", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		if _, err := e.client.SetTeamPolicy(e.ctx, e.admin, densemem.TeamPolicy{Version: 1, ReviewTTL: defaultReviewTTL, AutoWriteThreshold: 0.7,
			TimeZone: "America/New_York"}); err != nil {
			t.Fatal(err)
		}
		s := e.openStaleDeployCase(false, false)
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		// 2026-06-03 02:00 UTC is 2026-06-02 22:00 in New York.
		e.clock.Advance(time.Date(2026, 6, 3, 2, 0, 0, 0, time.UTC).Sub(e.clock.Now()))
		if rep := e.reviewTeamAs("w1"); rep.Reserved != 1 || rep.KeptOpen != 1 {
			t.Errorf("evening run: %+v", rep)
		}
		dates := func() []string {
			return e.ledger().Strings(`SELECT run_date::text FROM nightly_runs WHERE team_id = $1 ORDER BY run_date`, e.team)
		}
		if d := cmp.Diff([]string{"2026-06-02"}, dates()); d != "" {
			t.Errorf("run dates (-want +got):\n%s", d)
		}
		nextNY := time.Date(2026, 6, 3, 0, 0, 0, 0, ny)
		if c := e.ledger().Case(s.ConflictID); !c.NextReviewAt.Equal(nextNY) {
			t.Errorf("next_review_at = %v, want midnight in New York %v", c.NextReviewAt.UTC(), nextNY.UTC())
		}
		// 03:00 UTC is still 2026-06-02 in New York: same run date, and the case is not due yet.
		e.clock.Advance(time.Hour)
		if rep := e.reviewTeamAs("w2"); rep.Reserved != 0 || rep.Claimed != 0 {
			t.Errorf("03:00 UTC: %+v, want the same run date with nothing due", rep)
		}
		// 05:00 UTC is 2026-06-03 01:00 in New York: a new run date, and the case is due.
		e.clock.Advance(2 * time.Hour)
		if rep := e.reviewTeamAs("w3"); rep.Reserved != 1 || rep.Claimed != 1 {
			t.Errorf("05:00 UTC: %+v, want a new run date and the case", rep)
		}
		if d := cmp.Diff([]string{"2026-06-02", "2026-06-03"}, dates()); d != "" {
			t.Errorf("run dates (-want +got):\n%s", d)
		}
	})
}

// ---- attempts ----

// A successful review is not a failed attempt: with the smallest allowed bound of one attempt per run
// date (DESIGN §14: 1..20), a case the reviewer kept open or marked overdue must not also be
// escalated as "max attempts exhausted" (DESIGN §9.5: escalation follows max_attempts *failed*
// attempts), and its version must not move for it (DESIGN §7: attempts never change the version).
func TestNightlySuccessfulReviewIsNotAnExhaustedAttempt(t *testing.T) {
	t.Parallel()

	t.Run("one attempt per run date", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, func(c *densemem.Config) { c.Nightly.MaxAttempts = 1 })
		s := e.openStaleDeployCase(false, false)
		opened := e.ledger().Case(s.ConflictID)

		rep := e.reviewTeamAs("w1")
		if rep.KeptOpen != 1 || rep.Failed != 0 {
			t.Fatalf("before the deadline: %+v, want one successful keep-open", rep)
		}
		if rep.Escalated != 0 {
			t.Errorf("a successful review was escalated as exhausted: %+v", rep)
		}
		if c := e.ledger().Case(s.ConflictID); c.Version != opened.Version || c.Status != "open" {
			t.Errorf("case after a successful keep-open: v%d %s, want v%d open", c.Version, c.Status, opened.Version)
		}
		var reasons []string
		for _, ev := range e.ledger().Case(s.ConflictID).Events {
			reasons = append(reasons, ev.Reason)
		}
		if d := cmp.Diff([]string{"opened"}, reasons); d != "" {
			t.Errorf("events after a successful keep-open (-want +got):\n%s", d)
		}

		// At the deadline: exactly the overdue escalation, no exhausted-attempts event besides it.
		e.advanceToReviewDue(s.ConflictID)
		rep = e.reviewTeamAs("w1")
		if rep.Overdue != 1 || rep.Escalated != 0 {
			t.Errorf("at the deadline: %+v, want overdue and nothing escalated as exhausted", rep)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE conflict_id = $1 AND reason_code = 'max_attempts_exhausted'`,
			s.ConflictID); n != 0 {
			t.Errorf("%d max_attempts_exhausted events for a case whose every review succeeded", n)
		}
	})

	t.Run("default attempts, success on the last one", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, false)
		opened := e.ledger().Case(s.ConflictID)
		failing := failpoint.Arm(e.ctx, "tx.before_commit")
		for attempt := 1; attempt < review.DefaultMaxAttempts; attempt++ {
			rep, err := e.client.RunNightlyReview(failing, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}})
			if err != nil || rep.Failed != 1 {
				t.Fatalf("attempt %d: %+v, %v; want one failed review", attempt, rep, err)
			}
			e.clock.Advance(review.DefaultLease)
		}
		rep := e.reviewTeamAs("recovered")
		if rep.KeptOpen != 1 || rep.Failed != 0 {
			t.Fatalf("last attempt: %+v, want a successful keep-open", rep)
		}
		if rep.Escalated != 0 {
			t.Errorf("the case was escalated although its last attempt of the day succeeded: %+v", rep)
		}
		if c := e.ledger().Case(s.ConflictID); c.Version != opened.Version {
			t.Errorf("case version %d -> %d after a successful review", opened.Version, c.Version)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE conflict_id = $1 AND reason_code = 'max_attempts_exhausted'`,
			s.ConflictID); n != 0 {
			t.Errorf("%d max_attempts_exhausted events after the successful attempt", n)
		}
	})
}

// ---- failures ----

// A failed review leaves the case due and unresolved (DESIGN §9.5): a failing transaction changes
// nothing and gives the claim back, the day's attempts end in one escalation, and a crashed worker's
// claims are reclaimable once their lease expires.
func TestNightlyFailureLeavesCaseDueAndUnresolved(t *testing.T) {
	t.Parallel()

	t.Run("failing review transactions", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, true)
		due := e.advanceToReviewDue(s.ConflictID)
		before := e.ledger().Case(s.ConflictID)
		failing := failpoint.Arm(e.ctx, "tx.before_commit")
		// Each failed attempt keeps its claim until the lease expires (docs/decisions.md 28); the lease is
		// the backoff before the next attempt of the same run date.
		for attempt := 1; attempt <= review.DefaultMaxAttempts; attempt++ {
			rep, err := e.client.RunNightlyReview(failing, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team},
				WorkerID: fmt.Sprintf("w%d", attempt)})
			if err != nil {
				t.Fatalf("attempt %d: a failing case failed the run: %v", attempt, err)
			}
			// The run that makes the day's last attempt escalates the case at once.
			last := attempt == review.DefaultMaxAttempts
			wantEscalated := 0
			if last {
				wantEscalated = 1
			}
			if rep.Claimed != 1 || rep.Failed != 1 || rep.Resolved != 0 || rep.Escalated != wantEscalated {
				t.Errorf("attempt %d: report %+v, want one failed claim and %d escalation", attempt, rep, wantEscalated)
			}
			c := e.ledger().Case(s.ConflictID)
			if !last && (c.Status != "open" || c.ResolvedAt != nil || c.Version != before.Version || c.Attempts != attempt ||
				!c.NextReviewAt.Equal(before.NextReviewAt) || !c.ReviewDueAt.Equal(before.ReviewDueAt)) {
				t.Errorf("attempt %d: case %+v, want still due, unresolved, v%d", attempt, c, before.Version)
			}
			if st, _, _, v := e.relationshipState(s.A1); st != "active" || v != 1 {
				t.Errorf("attempt %d: A1 %s v%d", attempt, st, v)
			}
			if rep := e.reviewTeamAs("helper"); rep.Claimed != 0 {
				t.Errorf("attempt %d: another worker took the case while the lease holds: %+v", attempt, rep)
			}
			e.clock.Advance(review.DefaultLease)
		}
		// The day's attempts are exhausted: escalated once (above), and the case waits for the next run
		// date; another run the same day neither claims nor escalates it again.
		rep := e.reviewTeamAs("after")
		if rep.Escalated != 0 || rep.Claimed != 0 {
			t.Errorf("after the day's attempts: %+v, want no claim and no second escalation", rep)
		}
		c := e.ledger().Case(s.ConflictID)
		if c.Status != "open" || c.ClaimToken != nil || c.Version != before.Version+1 || !c.NextReviewAt.Equal(nextMidnightUTC(due)) {
			t.Errorf("case after escalation = %+v", c)
		}
		evs := e.ledger().Case(s.ConflictID).Events
		if last := evs[len(evs)-1]; last.Reason != "max_attempts_exhausted" || last.ActorKind != reviewerActorKind || last.Resulting != "open" {
			t.Errorf("escalation event = %+v", last)
		}
		if rep := e.reviewTeamAs("again"); rep.Claimed != 0 || rep.Escalated != 0 {
			t.Errorf("same day after exhaustion: %+v", rep)
		}
		e.clock.Advance(24 * time.Hour)
		if rep := e.reviewTeamAs("tomorrow"); rep.Resolved != 1 {
			t.Errorf("next run date: %+v, want resolved", rep)
		}
		if st, _, vt, _ := e.relationshipState(s.A1); st != "superseded" || vt == nil || !vt.Equal(releaseCutoff) {
			t.Errorf("A1 = %s valid_to %v", st, vt)
		}
	})

	t.Run("a crashed worker's claims expire", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.openStaleDeployCase(false, true)
		e.advanceToReviewDue(s.ConflictID)
		_, err := e.client.RunNightlyReview(failpoint.Arm(e.ctx, "review.after_claim"),
			densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}, WorkerID: "crashes"})
		if !errors.Is(err, failpoint.ErrInjected) {
			t.Fatalf("crashing worker: %v", err)
		}
		if c := e.ledger().Case(s.ConflictID); c.ClaimToken == nil || c.Status != "open" {
			t.Fatalf("case after the crash = %+v, want still claimed and open", c)
		}
		if rep := e.reviewTeamAs("other"); rep.Claimed != 0 {
			t.Errorf("while the lease holds: %+v, want nothing claimed", rep)
		}
		e.clock.Advance(review.DefaultLease)
		if rep := e.reviewTeamAs("other"); rep.Claimed != 1 || rep.Resolved != 1 {
			t.Errorf("after the lease: %+v, want the case reclaimed and resolved", rep)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE conflict_id = $1 AND resulting_status = 'resolved'`, s.ConflictID); n != 1 {
			t.Errorf("%d resolved events", n)
		}
	})
}

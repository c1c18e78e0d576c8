package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Team scoping (DESIGN I-22): every read and write of team X neither returns nor changes a row of
// team Y, whatever IDs the two teams share.
var scopingContracts = []contract{
	{"SameIDsInTwoTeams", testSameIDsInTwoTeams},
	{"ReadsOfAnotherTeam", testReadsOfAnotherTeam},
	{"WritesStayInTheirTeam", testWritesStayInTheirTeam},
	{"TxBelongsToOneTeam", testTxBelongsToOneTeam},
}

// bareTeam creates team with policy version 1 and the given profiles, nothing else.
func (e *env) bareTeam(team identity.TeamID, profiles ...identity.ProfileID) {
	e.t.Helper()
	e.must(e.s.TeamCreate(e.ctx, store.TeamCreateParams{Team: team, Name: "team " + string(team), CreatedAt: t0,
		Policy: store.Policy{ReviewTTL: reviewTTL, AutoWriteThreshold: 0.7, TimeZone: "UTC", CreatedBy: "host", CreatedAt: t0}}),
		"TeamCreate "+string(team))
	for _, p := range profiles {
		e.must(e.s.ProfileCreate(e.ctx, store.ProfileCreateParams{Team: team, Profile: p, Name: string(p) + "@" + string(team),
			Scopes: []identity.Scope{identity.ScopeRead}, CreatedAt: t0}), "ProfileCreate "+string(p))
	}
}

// testSameIDsInTwoTeams builds one world in two teams with the same IDs, makes them differ, and reads
// each team's own state back.
func testSameIDsInTwoTeams(e *env) {
	t, ctx := e.t, e.ctx
	x, y := e.world(e.team("tm_x")), e.world(e.team("tm_y"))
	sx, sy := x.disagreement("", t0, t0), y.disagreement("", t0, t0)
	if sx.ra.ID != sy.ra.ID || sx.cs.ID != sy.cs.ID || x.ada != y.ada {
		t.Fatalf("storetest: the two worlds were meant to share IDs: %s/%s, %s/%s", sx.ra.ID, sy.ra.ID, sx.cs.ID, sy.cs.ID)
	}
	// Y diverges: its copy of ra becomes a fact and its case is dismissed.
	ryWant := y.change(sy.ra, relationship.StatusActive, relationship.TierFact, nil, at(time.Minute))
	dismissed := sy.cs
	dismissed.Version, dismissed.Status = 2, conflict.StatusDismissed
	y.apply(store.WriteSet{
		CaseUpdates: []store.CaseUpdate{{Team: y.team, ID: sy.cs.ID, ExpectVersion: 1, Version: 2,
			Status: conflict.StatusDismissed, UpdatedAt: at(time.Minute)}},
		CaseEvents: []store.CaseEventRow{y.eventRow(dismissed, conflict.StatusOpen, store.ActorProfile, y.a, "dismissed", at(time.Minute))},
	})

	for _, c := range []struct {
		w    *world
		rel  relationship.Relationship
		cs   conflict.Status
		ver  int
		tran int
	}{{x, sx.ra, conflict.StatusOpen, 1, 1}, {y, ryWant, conflict.StatusDismissed, 2, 2}} {
		team := c.w.team
		got, err := e.s.RelationshipGet(ctx, team, c.rel.ID)
		e.must(err, "RelationshipGet")
		if got.Tier != c.rel.Tier || got.Version != c.rel.Version {
			t.Errorf("RelationshipGet(%s, %s) = %s v%d, want %s v%d", team, c.rel.ID, got.Tier, got.Version, c.rel.Tier, c.rel.Version)
		}
		pr, err := e.s.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: team, Profile: c.w.a})
		e.must(err, "PrincipalLoad")
		if want := string(c.w.a) + "@" + string(team); pr.Profile.Name != want || pr.Policy.Team != team {
			t.Errorf("PrincipalLoad(%s, %s): profile %q of team %s, want %q", team, c.w.a, pr.Profile.Name, pr.Policy.Team, want)
		}
		preds, err := e.s.PredicateList(ctx, team)
		e.must(err, "PredicateList")
		if len(preds) != 1 || preds[0].Description != "works on ("+string(team)+")" {
			t.Errorf("PredicateList(%s) = %+v, want the team's one predicate", team, preds)
		}
		td, err := e.s.TraceLoad(ctx, traceParams(team, c.rel.ID, 50))
		e.must(err, "TraceLoad")
		if len(td.Transitions) != c.tran || len(td.Supports) != 1 || len(td.Cases) != 1 {
			t.Errorf("TraceLoad(%s, %s): %d transitions, %d supports, %d cases; want %d, 1, 1", team, c.rel.ID,
				len(td.Transitions), len(td.Supports), len(td.Cases), c.tran)
		}
		prep, err := e.s.RememberPrepare(ctx, store.RememberPrepareParams{Team: team, Profile: c.w.a,
			Names: []store.NameLookup{lookup(kindProject, "Falcon")}, KnownEntities: []identity.EntityID{c.w.ada}})
		e.must(err, "RememberPrepare")
		if !slices.Equal(entityIDs(prep.Candidates), []identity.EntityID{c.w.falcon}) ||
			!slices.Equal(entityIDs(prep.Known), []identity.EntityID{c.w.ada}) || len(prep.Predicates) != 1 {
			t.Errorf("RememberPrepare(%s): candidates %v, known %v, %d predicates; want [%s], [%s], 1", team,
				entityIDs(prep.Candidates), entityIDs(prep.Known), len(prep.Predicates), c.w.falcon, c.w.ada)
		}
		if item := c.w.listedCase(sx.cs.ID); item == nil || item.Case.Status != c.cs || item.Case.Version != c.ver {
			t.Errorf("CaseList(%s): case %s = %+v, want %s v%d", team, sx.cs.ID, item, c.cs, c.ver)
		}
		det, err := e.s.RecallDetails(ctx, store.RecallDetailsParams{Team: team, Relationships: []relationship.ID{c.rel.ID}, Cases: true})
		e.must(err, "RecallDetails")
		if len(det.Views) != 1 || det.Views[0].Relationship.Version != c.rel.Version || len(det.Evidence) != 1 ||
			len(det.Cases) != 1 || det.Cases[0].Status != c.cs {
			t.Errorf("RecallDetails(%s): %d views, %d evidence, cases %+v; want the team's own", team, len(det.Views),
				len(det.Evidence), det.Cases)
		}
		var locked store.KeysLocked
		e.must(e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) (err error) {
			locked, err = tx.KeysLock(ctx, store.KeysLockParams{Team: team, Keys: []conflict.Key{c.w.key(c.w.ada, "")}})
			return err
		}), "KeysLock")
		live := 0
		if c.cs.Live() {
			live = 1
		}
		if len(locked.Relationships) != 2 || len(locked.Supports) != 2 || len(locked.Cases) != live {
			t.Errorf("KeysLock(%s): %d relationships, %d supports, %d live cases; want 2, 2, %d: the team's own", team,
				len(locked.Relationships), len(locked.Supports), len(locked.Cases), live)
		}
	}
}

// foreignRows is testReadsOfAnotherTeam's setting: team x's rows, and team y, which holds none of
// them and asks for them by their IDs.
type foreignRows struct {
	e  *env
	x  *world
	sx scene
	y  identity.TeamID
	// names looks up x's Ada and Falcon by name; known names them by ID.
	names []store.NameLookup
	known []identity.EntityID
}

// foreignRows writes team x's rows — a disagreement and its due case, a third profile pf_c, a second
// predicate, a review item and an idempotency record of key k1 — and creates team y with its one
// profile pf_a and nothing else.
func (e *env) foreignRows() foreignRows {
	x := e.world(e.team("tm_x"))
	sx := x.disagreement("", t0, t0)
	x.profile("pf_c")
	_, err := e.s.PredicateAppend(e.ctx, store.PredicateAppendParams{Team: x.team, CreatedBy: "host", CreatedAt: t0,
		Predicate: relationship.Predicate{Key: "leads", Kind: relationship.KindState, Cardinality: relationship.CardinalityMany}})
	e.must(err, "PredicateAppend")
	x.apply(store.WriteSet{
		ReviewItems: []store.ReviewItemRow{{Team: x.team, ID: "rev_1", IngestID: "ing_rev", PlacementItemID: "item_1",
			Kind: "relationship_held", Profile: x.a, ObservationID: "obs_x", RelationshipID: sx.ra.ID,
			Related: []string{string(sx.rb.ID)}, Choices: json.RawMessage(`[]`), CreatedAt: t0}},
		Idempotency: &store.IdempotencyRow{Team: x.team, Profile: x.a, Key: "k1", Operation: "remember", RequestHash: "h",
			IngestID: "ing_k1", Result: json.RawMessage(`{}`), CreatedAt: t0},
	})

	y := e.team("tm_y")
	e.bareTeam(y, "pf_a")
	return foreignRows{e: e, x: x, sx: sx, y: y, names: []store.NameLookup{lookup(kindPerson, "Ada"), lookup(kindProject, "Falcon")},
		known: []identity.EntityID{x.ada, x.falcon}}
}

// testReadsOfAnotherTeam reads, as a team that holds none of them, the IDs of another team's rows.
func testReadsOfAnotherTeam(e *env) {
	f := e.foreignRows()
	f.checkNotFound()
	f.checkPrepareReads()
	f.checkLocks()
	f.checkRecall()
	f.checkLists()
	f.checkReviewerReads()
	// The other team still reads its own.
	if _, err := e.s.RelationshipGet(e.ctx, f.x.team, f.sx.ra.ID); err != nil {
		e.t.Errorf("RelationshipGet(%s, %s): %v", f.x.team, f.sx.ra.ID, err)
	}
}

// checkNotFound reports each read of one of x's rows by y that does not fail with ErrNotFound.
func (f foreignRows) checkNotFound() {
	e, ctx, y := f.e, f.e.ctx, f.y
	e.t.Helper()
	_, err := e.s.RelationshipGet(ctx, y, f.sx.ra.ID)
	e.checkErr(err, store.ErrNotFound, "RelationshipGet of another team's relationship")
	_, err = e.s.TraceLoad(ctx, traceParams(y, f.sx.ra.ID, 10))
	e.checkErr(err, store.ErrNotFound, "TraceLoad of another team's relationship")
	_, err = e.s.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: y, Profile: "pf_c"})
	e.checkErr(err, store.ErrNotFound, "PrincipalLoad of another team's profile")
}

// checkPrepareReads reports any of x's rows that RememberPrepare or IdempotencyGet returns to y.
func (f foreignRows) checkPrepareReads() {
	e, t, ctx, y := f.e, f.e.t, f.e.ctx, f.y
	t.Helper()
	prep, err := e.s.RememberPrepare(ctx, store.RememberPrepareParams{Team: y, Profile: "pf_a", IdempotencyKey: "k1",
		Names: f.names, KnownEntities: f.known})
	e.must(err, "RememberPrepare")
	if prep.Principal == nil || prep.Principal.Profile.Team != y || len(prep.Predicates)+len(prep.Candidates)+len(prep.Known) != 0 ||
		prep.Idempotency != nil {
		t.Errorf("RememberPrepare(%s) read another team's rows: principal %+v, %d predicates, candidates %v, known %v, idempotency %+v",
			y, prep.Principal, len(prep.Predicates), entityIDs(prep.Candidates), entityIDs(prep.Known), prep.Idempotency)
	}
	rec, err := e.s.IdempotencyGet(ctx, y, "pf_a", "k1")
	e.must(err, "IdempotencyGet")
	if rec != nil {
		t.Errorf("IdempotencyGet(%s, pf_a, k1) = %+v, want nil: the record is another team's", y, rec)
	}
}

// checkLocks reports any of x's rows that IntakeLock or KeysLock returns in a transaction of y.
func (f foreignRows) checkLocks() {
	e, t, y := f.e, f.e.t, f.y
	t.Helper()
	e.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		il, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: y, Profile: "pf_a", IdempotencyKey: "k1", NameLocks: f.names,
			Names: f.names, KnownEntities: f.known})
		if err != nil {
			return err
		}
		if il.Idempotency != nil || len(il.Candidates)+len(il.Known) != 0 {
			t.Errorf("IntakeLock(%s) read another team's rows: idempotency %+v, candidates %v, known %v", y, il.Idempotency,
				entityIDs(il.Candidates), entityIDs(il.Known))
		}
		kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: y, Keys: []conflict.Key{{Team: y, Subject: f.x.ada,
			PredicateKey: predWorksOn}}, Cases: []conflict.ID{f.sx.cs.ID}, Predicates: true})
		if err != nil {
			return err
		}
		if len(kl.Relationships)+len(kl.Supports)+len(kl.Cases)+len(kl.Predicates) != 0 {
			t.Errorf("KeysLock(%s) read another team's rows: %d relationships, %d supports, %d cases, %d predicates", y,
				len(kl.Relationships), len(kl.Supports), len(kl.Cases), len(kl.Predicates))
		}
		return nil
	}), "Tx of the other team")
}

// checkRecall reports any of x's rows that RecallSearch or RecallDetails returns to y.
func (f foreignRows) checkRecall() {
	e, t, ctx, y := f.e, f.e.t, f.e.ctx, f.y
	t.Helper()
	rs, err := e.s.RecallSearch(ctx, store.RecallSearchParams{Team: y, Query: "Ada Falcon", Names: []string{"ada", "falcon"},
		ExpandFrom: []identity.EntityID{f.x.ada}, At: at(time.Hour), PerBranch: 10})
	e.must(err, "RecallSearch")
	if len(rs.FullText)+len(rs.EntityName) != 0 {
		t.Errorf("RecallSearch(%s) found another team's relationships: %+v %+v", y, rs.FullText, rs.EntityName)
	}
	det, err := e.s.RecallDetails(ctx, store.RecallDetailsParams{Team: y, Relationships: []relationship.ID{f.sx.ra.ID, f.sx.rb.ID},
		Cases: true})
	e.must(err, "RecallDetails")
	if len(det.Views)+len(det.Evidence)+len(det.Cases) != 0 {
		t.Errorf("RecallDetails(%s) read another team's rows: %d views, %d evidence, %d cases", y, len(det.Views),
			len(det.Evidence), len(det.Cases))
	}
}

// checkLists reports any of x's rows that a list read of y returns: its predicates, profiles, cases
// and review items.
func (f foreignRows) checkLists() {
	e, t, ctx, y := f.e, f.e.t, f.e.ctx, f.y
	t.Helper()
	preds, err := e.s.PredicateList(ctx, y)
	e.must(err, "PredicateList")
	if len(preds) != 0 {
		t.Errorf("PredicateList(%s) = %+v, want none", y, preds)
	}
	profiles, err := e.s.ProfileList(ctx, store.ProfileListParams{Team: y, Limit: 10})
	e.must(err, "ProfileList")
	if len(profiles.Items) != 1 || profiles.Items[0].ID != "pf_a" || profiles.Items[0].Team != y || profiles.More {
		t.Errorf("ProfileList(%s) = %+v, want only its own pf_a", y, profiles)
	}
	predPage, err := e.s.PredicateListPage(ctx, store.PredicateListPageParams{Team: y, Limit: 10})
	e.must(err, "PredicateListPage")
	cases, err := e.s.CaseList(ctx, store.CaseListParams{Team: y, Limit: 10, Statuses: []conflict.Status{conflict.StatusOpen}})
	e.must(err, "CaseList")
	items, err := e.s.ReviewItemList(ctx, store.ReviewItemListParams{Team: y, Status: "open", Limit: 10})
	e.must(err, "ReviewItemList")
	if len(predPage.Items)+len(cases.Items)+len(items.Items) != 0 {
		t.Errorf("list reads of %s returned another team's rows: %d predicates, %d cases, %d review items", y,
			len(predPage.Items), len(cases.Items), len(items.Items))
	}
}

// checkReviewerReads reports a claim by y of x's due case, and y among the teams with due cases.
func (f foreignRows) checkReviewerReads() {
	e, t, ctx, y := f.e, f.e.t, f.e.ctx, f.y
	t.Helper()
	claimed, err := e.rv.CaseClaimDue(ctx, dueClaim(y, "tok_y", at(time.Hour)))
	e.must(err, "CaseClaimDue")
	if len(claimed) != 0 {
		t.Errorf("CaseClaimDue(%s) claimed another team's cases: %+v", y, claimed)
	}
	teams, err := e.rv.TeamsWithDueCases(ctx, at(time.Hour))
	e.must(err, "TeamsWithDueCases")
	if teams = e.ownTeams(teams); !slices.Equal(teams, []identity.TeamID{f.x.team}) {
		t.Errorf("TeamsWithDueCases = %v, want [%s]: only it has a due case", teams, f.x.team)
	}
}

// dueClaim asks to claim team's due cases at now under token: up to ten, leased for five minutes, up
// to five attempts per run date.
func dueClaim(team identity.TeamID, token string, now time.Time) store.CaseClaimDueParams {
	return store.CaseClaimDueParams{Team: team, Now: now, RunDate: runDate, Batch: 10, Lease: 5 * time.Minute,
		Token: token, MaxAttempts: 5}
}

// teamPair is two teams built alike, so their rows share IDs, each with its disagreement: x changes
// its state at now and y reads its own.
type teamPair struct {
	e      *env
	x, y   *world
	sx, sy scene
	now    time.Time
}

// testWritesStayInTheirTeam changes every kind of state of one team and reads the same IDs in another.
func testWritesStayInTheirTeam(e *env) {
	x, y := e.world(e.team("tm_x")), e.world(e.team("tm_y"))
	sx, sy := x.disagreement("", t0, t0), y.disagreement("", t0, t0)
	p := teamPair{e: e, x: x, y: y, sx: sx, sy: sy, now: at(time.Hour)}
	p.changeX()
	p.checkYUnchanged()
	p.checkYReviewerFree()
	p.checkIdempotencyPerTeam()
	p.checkXClaimHeld()
}

// changeX changes every kind of x's state: it retracts sx.ra, disables profile b, appends a policy
// version and a predicate version, reserves the run date, claims the due case under tok_x and records
// key k of profile a.
func (p teamPair) changeX() {
	e, t, ctx, x, now := p.e, p.e.t, p.e.ctx, p.x, p.now
	t.Helper()
	x.change(p.sx.ra, relationship.StatusRetracted, p.sx.ra.Tier, nil, now)
	e.must(e.s.ProfileSetStatus(ctx, store.ProfileSetStatusParams{Team: x.team, Profile: x.b, Status: identity.ProfileDisabled,
		UpdatedAt: now}), "ProfileSetStatus")
	_, err := e.s.PolicyAppend(ctx, store.PolicyAppendParams{ExpectVersion: 1, Policy: store.Policy{Team: x.team,
		ReviewTTL: 10 * 24 * time.Hour, AutoWriteThreshold: 0.5, TimeZone: "Europe/Paris", CreatedBy: "host", CreatedAt: now}})
	e.must(err, "PolicyAppend")
	p2, err := e.s.PredicateAppend(ctx, store.PredicateAppendParams{Team: x.team, CreatedBy: "host", CreatedAt: now,
		Predicate: relationship.Predicate{Key: predWorksOn, Kind: relationship.KindState, Cardinality: relationship.CardinalityMany}})
	e.must(err, "PredicateAppend")
	if p2.Version != 2 {
		t.Errorf("PredicateAppend(%s, %s) = version %d, want 2", x.team, predWorksOn, p2.Version)
	}
	ok, err := e.rv.NightlyReserve(ctx, store.NightlyReserveParams{Team: x.team, RunDate: runDate, Worker: "w1", Now: now})
	e.must(err, "NightlyReserve")
	if !ok {
		t.Errorf("NightlyReserve(%s) = false on a fresh team", x.team)
	}
	claimed, err := e.rv.CaseClaimDue(ctx, dueClaim(x.team, "tok_x", now))
	e.must(err, "CaseClaimDue")
	if len(claimed) != 1 {
		t.Fatalf("CaseClaimDue(%s) claimed %d cases, want 1", x.team, len(claimed))
	}
	x.apply(store.WriteSet{Idempotency: &store.IdempotencyRow{Team: x.team, Profile: x.a, Key: "k", Operation: "forget",
		RequestHash: "hx", IngestID: "ing_x", Result: json.RawMessage(`{"team":"x"}`), CreatedAt: now}})
}

// checkYUnchanged reports y's relationship, profile, policy or predicate unless it is as y wrote it.
func (p teamPair) checkYUnchanged() {
	e, t, ctx, x, y := p.e, p.e.t, p.e.ctx, p.x, p.y
	t.Helper()
	r, err := e.s.RelationshipGet(ctx, y.team, p.sy.ra.ID)
	e.must(err, "RelationshipGet")
	if r.Status != relationship.StatusActive || r.Version != 1 {
		t.Errorf("%s's %s became %s v%d when %s's was retracted", y.team, p.sy.ra.ID, r.Status, r.Version, x.team)
	}
	pr, err := e.s.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: y.team, Profile: y.b})
	e.must(err, "PrincipalLoad")
	if pr.Profile.Status != identity.ProfileActive || pr.Policy.Version != 1 || pr.Policy.ReviewTTL != reviewTTL {
		t.Errorf("%s's %s is %s under policy v%d (TTL %s) after %s's changes; want active under v1", y.team, y.b,
			pr.Profile.Status, pr.Policy.Version, pr.Policy.ReviewTTL, x.team)
	}
	pol, err := e.s.PolicyGet(ctx, y.team)
	e.must(err, "PolicyGet")
	if pol.Version != 1 || pol.TimeZone != "UTC" {
		t.Errorf("PolicyGet(%s) = v%d in %s, want v1 in UTC", y.team, pol.Version, pol.TimeZone)
	}
	pols, err := e.s.PolicyVersions(ctx, y.team, []int{1, 2})
	e.must(err, "PolicyVersions")
	if len(pols) != 1 || pols[0].Version != 1 || pols[0].TimeZone != "UTC" {
		t.Errorf("PolicyVersions(%s, 1, 2) = %+v, want only its v1 in UTC", y.team, pols)
	}
	preds, err := e.s.PredicateList(ctx, y.team)
	e.must(err, "PredicateList")
	if len(preds) != 1 || preds[0].Version != 1 || preds[0].Cardinality != relationship.CardinalityOne {
		t.Errorf("PredicateList(%s) = %+v, want works_on v1", y.team, preds)
	}
}

// checkYReviewerFree reports x's reservation of the run date or x's claim of the case ID holding
// y's: y reserves the same run date and claims its own case under tok_y.
func (p teamPair) checkYReviewerFree() {
	e, t, ctx, y := p.e, p.e.t, p.e.ctx, p.y
	t.Helper()
	ok, err := e.rv.NightlyReserve(ctx, store.NightlyReserveParams{Team: y.team, RunDate: runDate, Worker: "w2", Now: p.now})
	e.must(err, "NightlyReserve")
	if !ok {
		t.Errorf("NightlyReserve(%s) = false: another team's reservation of the same date held it", y.team)
	}
	claimed, err := e.rv.CaseClaimDue(ctx, dueClaim(y.team, "tok_y", p.now))
	e.must(err, "CaseClaimDue")
	if len(claimed) != 1 || claimed[0].ID != p.sy.cs.ID || claimed[0].Key.Team != y.team {
		t.Errorf("CaseClaimDue(%s) = %+v, want its own case %s: another team's claim of the same ID held it", y.team, claimed, p.sy.cs.ID)
	}
	if c := y.lockedCase(e.s, p.sy.key, p.sy.cs.ID); c == nil || c.ClaimToken != "tok_y" || c.Version != 1 {
		t.Errorf("%s's case %s = %+v, want claimed by tok_y at version 1", y.team, p.sy.cs.ID, c)
	}
}

// checkIdempotencyPerTeam reports x's record of key k read by y, then has y record the same key for
// itself and reports either team reading a record not its own.
func (p teamPair) checkIdempotencyPerTeam() {
	e, t, ctx, x, y := p.e, p.e.t, p.e.ctx, p.x, p.y
	t.Helper()
	rec, err := e.s.IdempotencyGet(ctx, y.team, y.a, "k")
	e.must(err, "IdempotencyGet")
	if rec != nil {
		t.Errorf("IdempotencyGet(%s) = %+v, want nil: only %s recorded key k", y.team, rec, x.team)
	}
	// Y records the same key for itself.
	y.apply(store.WriteSet{Idempotency: &store.IdempotencyRow{Team: y.team, Profile: y.a, Key: "k", Operation: "forget",
		RequestHash: "hy", IngestID: "ing_y", Result: json.RawMessage(`{"team":"y"}`), CreatedAt: p.now}})
	for team, hash := range map[identity.TeamID]string{x.team: "hx", y.team: "hy"} {
		rec, err := e.s.IdempotencyGet(ctx, team, "pf_a", "k")
		e.must(err, "IdempotencyGet")
		if rec == nil || rec.RequestHash != hash {
			t.Errorf("IdempotencyGet(%s, pf_a, k) = %+v, want the team's own record (hash %s)", team, rec, hash)
		}
	}
}

// checkXClaimHeld reports a claim of x's case by another token while tok_x's lease runs.
func (p teamPair) checkXClaimHeld() {
	e, t, x := p.e, p.e.t, p.x
	t.Helper()
	claimed, err := e.rv.CaseClaimDue(e.ctx, dueClaim(x.team, "tok_other", p.now))
	e.must(err, "CaseClaimDue")
	if len(claimed) != 0 {
		t.Errorf("CaseClaimDue(%s) by another token claimed %+v under tok_x's lease", x.team, claimed)
	}
}

// testTxBelongsToOneTeam: a transaction opened for one team refuses a call or a row of another, and
// nothing of it remains in either.
func testTxBelongsToOneTeam(e *env) {
	t, ctx := e.t, e.ctx
	x, y := e.world(e.team("tm_x")), e.world(e.team("tm_y"))
	var ws store.WriteSet
	ghost := y.entityRows(&ws, kindProject, "Ghost", t0) // a row of team Y
	err := e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: x.team, Profile: x.a, IdempotencyKey: "k"}); err != nil {
			return err
		}
		return tx.WriteSetApply(ctx, ws)
	})
	if err == nil {
		t.Errorf("a transaction of %s wrote a row of %s", x.team, y.team)
	}
	err = e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: x.team, Profile: x.a, IdempotencyKey: "k"}); err != nil {
			return err
		}
		if _, err := tx.KeysLock(ctx, store.KeysLockParams{Team: y.team, Keys: []conflict.Key{y.key(y.ada, "")}}); err != nil {
			return err
		}
		return tx.WriteSetApply(ctx, ws)
	})
	if err == nil {
		t.Errorf("a transaction of %s locked the keys of %s and wrote its row", x.team, y.team)
	}
	for _, team := range []identity.TeamID{x.team, y.team} {
		prep, err := e.s.RememberPrepare(ctx, store.RememberPrepareParams{Team: team, Profile: "pf_a",
			Names: []store.NameLookup{lookup(kindProject, "Ghost")}, KnownEntities: []identity.EntityID{ghost}})
		e.must(err, "RememberPrepare")
		if len(prep.Candidates)+len(prep.Known) != 0 {
			t.Errorf("team %s holds the refused entity: candidates %v, known %v", team, entityIDs(prep.Candidates), entityIDs(prep.Known))
		}
	}
}

// traceParams asks for every list of a relationship's trace, limit rows each.
func traceParams(team identity.TeamID, id relationship.ID, limit int) store.TraceLoadParams {
	return store.TraceLoadParams{Team: team, RelationshipID: id, IncludeContent: true, IncludeVerifications: true,
		IncludeTransitions: true, Limit: limit, CaseSupports: 100, ContentBudget: 1 << 20}
}

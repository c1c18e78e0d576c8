package ledger

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

const team identity.TeamID = "team_1"

var (
	now  = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	jan  = day(2026, 1, 1)
	feb  = day(2026, 2, 1)
	mar  = day(2026, 3, 1)
	apr  = day(2026, 4, 1)
	dueT = now.Add(72 * time.Hour)

	alice = identity.ProfileID("prf_alice")
	bob   = identity.ProfileID("prf_bob")
	carol = identity.ProfileID("prf_carol")

	objA = relationship.Object{EntityID: "ent_a"}
	objB = relationship.Object{EntityID: "ent_b"}

	worksAt = relationship.Predicate{Key: "works_at", Version: 1, Kind: relationship.KindState,
		Cardinality: relationship.CardinalityOne}
	key = conflict.Key{Team: team, Subject: "ent_s", PredicateKey: "works_at"}
)

func day(y int, m time.Month, d int) *time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return &t
}

// newLedger is a ledger at now whose IDs count up per prefix: trn_1, trn_2, cf_1, …
func newLedger(actor Actor) *Ledger {
	n := map[string]int{}
	return &Ledger{Team: team, Actor: actor, IngestID: "ing_1", IdempotencyKey: "idem-1", Now: now,
		Policy: store.Policy{Team: team, Version: 3, ReviewTTL: 72 * time.Hour, AuthoritativeProfiles: []identity.ProfileID{bob}},
		NewID: func(prefix string) string {
			n[prefix]++
			return fmt.Sprintf("%s_%d", prefix, n[prefix])
		}}
}

// rel is an active validated_claim at version 1 of key.
func rel(id relationship.ID, owner identity.ProfileID, obj relationship.Object, from, to *time.Time) relationship.Relationship {
	return relationship.Relationship{ID: id, Owner: owner, Subject: key.Subject, PredicateKey: key.PredicateKey,
		PredicateVersion: 1, Object: obj, Polarity: relationship.PolarityPositive, Validity: relationship.Interval{From: from, To: to},
		Status: relationship.StatusActive, Tier: relationship.TierValidatedClaim, Version: 1}
}

// support is a standard support of id from its own source group.
func support(id relationship.ID, author identity.ProfileID) store.SupportRow {
	return store.SupportRow{RelationshipID: id, Group: "group:" + string(id), ContentHash: "hash:" + string(id),
		Authority: evidence.AuthorityStandard, Author: author}
}

func load(l *Ledger, rels []relationship.Relationship, cases ...store.CaseRow) {
	var sup []store.SupportRow
	for _, r := range rels {
		sup = append(sup, support(r.ID, r.Owner))
	}
	l.Load(store.KeysLocked{Relationships: rels, Supports: sup, Cases: cases}, []relationship.Predicate{worksAt})
}

// transition is the row a verb by alice records for relationship id, first of the transaction.
func transition(id relationship.ID, from, to relationship.Status, fromTo, toTo *time.Time, fromV int, reason string) store.TransitionRow {
	fromTier := relationship.TierValidatedClaim
	if fromV == 0 {
		fromTier = ""
	}
	return store.TransitionRow{Team: team, ID: "trn_1", RelationshipID: id, FromStatus: from, ToStatus: to,
		FromTier: fromTier, ToTier: relationship.TierValidatedClaim, FromValidTo: fromTo, ToValidTo: toTo,
		FromVersion: fromV, ToVersion: fromV + 1, Reason: reason, ActorKind: store.ActorProfile, ActorProfile: alice,
		IngestID: "ing_1", IdempotencyKey: "idem-1", CreatedAt: now}
}

func update(id relationship.ID, status relationship.Status, validTo *time.Time) []store.RelationshipUpdate {
	return []store.RelationshipUpdate{{Team: team, ID: id, ExpectVersion: 1, Status: status,
		Tier: relationship.TierValidatedClaim, ValidTo: validTo, UpdatedAt: now}}
}

// TestRelationshipVerbs checks that every relationship verb writes its change and its transition
// together, and moves the transaction's copy of the relationship along.
func TestRelationshipVerbs(t *testing.T) {
	newRel := rel("rel_9", alice, objA, feb, nil)
	reviewed := transition("rel_1", relationship.StatusActive, relationship.StatusSuperseded, nil, feb, 1, "conflict_resolved:cf_7")
	reviewed.ActorKind, reviewed.ActorProfile, reviewed.IdempotencyKey = store.ActorSystemConflictReviewer, "", ""
	tests := []struct {
		name  string
		actor Actor
		prior relationship.Relationship
		verb  func(l *Ledger, r *relationship.Relationship)
		want  store.WriteSet
		// wantRel is the transaction's copy of the verb's relationship afterwards.
		wantRel relationship.Relationship
	}{{
		name:  "create records the relationship with its first transition",
		actor: ProfileActor(alice),
		verb: func(l *Ledger, _ *relationship.Relationship) {
			r := newRel
			l.Create(&r, "obs_1", ReasonAccepted)
		},
		want: store.WriteSet{
			Relationships: []store.RelationshipRow{{Team: team, Relationship: newRel, ObservationID: "obs_1", IngestID: "ing_1", CreatedAt: now}},
			Transitions:   []store.TransitionRow{transition("rel_9", "", relationship.StatusActive, nil, nil, 0, "accepted")},
		},
		wantRel: newRel,
	}, {
		name:  "change moves status in place, fenced on the version",
		actor: ProfileActor(alice),
		prior: rel("rel_1", alice, objA, jan, nil),
		verb: func(l *Ledger, r *relationship.Relationship) {
			l.Change(r, relationship.StatusNeedsReview, r.Tier, ReasonEvidenceAcceptedHeld)
		},
		want: store.WriteSet{
			Updates: update("rel_1", relationship.StatusNeedsReview, nil),
			Transitions: []store.TransitionRow{transition("rel_1", relationship.StatusActive, relationship.StatusNeedsReview,
				nil, nil, 1, "evidence_accepted_held")},
		},
		wantRel: func() relationship.Relationship {
			r := rel("rel_1", alice, objA, jan, nil)
			r.Status, r.Version = relationship.StatusNeedsReview, 2
			return r
		}(),
	}, {
		name:  "supersede closes at the successor's valid_from",
		actor: ProfileActor(alice),
		prior: rel("rel_1", alice, objA, jan, nil),
		verb:  func(l *Ledger, r *relationship.Relationship) { l.Supersede(r, *feb, "rel_2", ReasonSuperseded) },
		want: store.WriteSet{
			Updates: update("rel_1", relationship.StatusSuperseded, feb),
			Transitions: []store.TransitionRow{func() store.TransitionRow {
				t := transition("rel_1", relationship.StatusActive, relationship.StatusSuperseded, nil, feb, 1, "superseded")
				t.Related = "rel_2"
				return t
			}()},
		},
		wantRel: func() relationship.Relationship {
			r := rel("rel_1", alice, objA, jan, feb)
			r.Status, r.Version = relationship.StatusSuperseded, 2
			return r
		}(),
	}, {
		name:  "supersede never closes before the relationship's own valid_from",
		actor: ProfileActor(alice),
		prior: rel("rel_1", alice, objA, mar, nil),
		verb:  func(l *Ledger, r *relationship.Relationship) { l.Supersede(r, *jan, "rel_2", ReasonSuperseded) },
		want: store.WriteSet{
			Updates: update("rel_1", relationship.StatusSuperseded, mar),
			Transitions: []store.TransitionRow{func() store.TransitionRow {
				t := transition("rel_1", relationship.StatusActive, relationship.StatusSuperseded, nil, mar, 1, "superseded")
				t.Related = "rel_2"
				return t
			}()},
		},
		wantRel: func() relationship.Relationship {
			r := rel("rel_1", alice, objA, mar, mar)
			r.Status, r.Version = relationship.StatusSuperseded, 2
			return r
		}(),
	}, {
		name:  "supersede never extends a valid_to the relationship had",
		actor: ProfileActor(alice),
		prior: rel("rel_1", alice, objA, jan, feb),
		verb:  func(l *Ledger, r *relationship.Relationship) { l.Supersede(r, *apr, "", ReasonSuperseded) },
		want: store.WriteSet{
			Updates: update("rel_1", relationship.StatusSuperseded, feb),
			Transitions: []store.TransitionRow{transition("rel_1", relationship.StatusActive, relationship.StatusSuperseded,
				feb, feb, 1, "superseded")},
		},
		wantRel: func() relationship.Relationship {
			r := rel("rel_1", alice, objA, jan, feb)
			r.Status, r.Version = relationship.StatusSuperseded, 2
			return r
		}(),
	}, {
		name:  "a reviewer's resolution names the case, refreshes as the change, and carries no idempotency key",
		actor: ReviewerActor,
		prior: rel("rel_1", alice, objA, jan, nil),
		verb:  func(l *Ledger, r *relationship.Relationship) { l.Supersede(r, *feb, "", Resolved("cf_7")) },
		want: store.WriteSet{
			Updates:     update("rel_1", relationship.StatusSuperseded, feb),
			Transitions: []store.TransitionRow{reviewed},
		},
		wantRel: func() relationship.Relationship {
			r := rel("rel_1", alice, objA, jan, feb)
			r.Status, r.Version = relationship.StatusSuperseded, 2
			return r
		}(),
	}, {
		name:  "retract records the caller's words and refreshes as retracted",
		actor: ProfileActor(alice),
		prior: rel("rel_1", alice, objA, jan, nil),
		verb:  func(l *Ledger, r *relationship.Relationship) { l.Retract(r, "moved: to the Berlin office") },
		want: store.WriteSet{
			Updates: update("rel_1", relationship.StatusRetracted, nil),
			Transitions: []store.TransitionRow{transition("rel_1", relationship.StatusActive, relationship.StatusRetracted,
				nil, nil, 1, "forget: moved: to the Berlin office")},
		},
		wantRel: func() relationship.Relationship {
			r := rel("rel_1", alice, objA, jan, nil)
			r.Status, r.Version = relationship.StatusRetracted, 2
			return r
		}(),
	}, {
		name:  "retract without words",
		actor: ProfileActor(alice),
		prior: rel("rel_1", alice, objA, jan, nil),
		verb:  func(l *Ledger, r *relationship.Relationship) { l.Retract(r, "") },
		want: store.WriteSet{
			Updates: update("rel_1", relationship.StatusRetracted, nil),
			Transitions: []store.TransitionRow{transition("rel_1", relationship.StatusActive, relationship.StatusRetracted,
				nil, nil, 1, "forget")},
		},
		wantRel: func() relationship.Relationship {
			r := rel("rel_1", alice, objA, jan, nil)
			r.Status, r.Version = relationship.StatusRetracted, 2
			return r
		}(),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(tt.actor)
			var prior []relationship.Relationship
			if tt.prior.ID != "" {
				prior = append(prior, tt.prior)
			}
			l.Load(store.KeysLocked{Relationships: prior}, []relationship.Predicate{worksAt})
			ks := l.Key(key)
			var r *relationship.Relationship
			if tt.prior.ID != "" {
				r = ks.Find(tt.prior.ID)
			}
			tt.verb(l, r)
			if diff := cmp.Diff(tt.want, l.WS); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if got := ks.Find(tt.wantRel.ID); got == nil || !cmp.Equal(*got, tt.wantRel) {
				t.Errorf("key state after the verb: %v, want %+v", got, tt.wantRel)
			}
			if !ks.Touched || len(l.Touched()) != 1 {
				t.Errorf("the key is not marked touched: %v, %d", ks.Touched, len(l.Touched()))
			}
			if got := l.LastTransitionID(); got != "trn_1" {
				t.Errorf("LastTransitionID() = %q, want trn_1", got)
			}
		})
	}
}

// TestSupportCountsAuthorityOnlyFromAuthoritativeProfiles checks that new support links name their
// relationship and count as the policy says: an authoritative label carries authority only from a
// profile the policy names.
func TestSupportCountsAuthorityOnlyFromAuthoritativeProfiles(t *testing.T) {
	l := newLedger(ProfileActor(alice))
	load(l, []relationship.Relationship{rel("rel_1", alice, objA, jan, nil)})
	l.Support("rel_1", []store.SupportLinkRow{
		{ID: "sup_1", SourceGroup: "g_alice", ContentHash: "h1", Authority: evidence.AuthorityAuthoritative, Author: alice},
		{ID: "sup_2", SourceGroup: "g_bob", ContentHash: "h2", Authority: evidence.AuthorityAuthoritative, Author: bob},
	})
	want := []evidence.Support{
		{Group: "group:rel_1", ContentHash: "hash:rel_1", Effective: true},
		{Group: "g_alice", ContentHash: "h1", Effective: true},
		{Group: "g_bob", ContentHash: "h2", Effective: true, AllowedAuthority: true},
	}
	if diff := cmp.Diff(want, l.Supports("rel_1")); diff != "" {
		t.Errorf("supports (-want +got):\n%s", diff)
	}
	for _, s := range l.WS.Supports {
		if s.RelationshipID != "rel_1" {
			t.Errorf("support link %s names relationship %q, want rel_1", s.ID, s.RelationshipID)
		}
	}
	if got := relationship.TierFor(l.Key(key).Members()[0].Supports); got != relationship.TierFact {
		t.Errorf("tier from the key's members = %s, want fact (allowed authority)", got)
	}
}

// TestCrossReferences checks the links a newly active relationship gets to other owners' active
// relationships of its key, and that its own and inactive ones get none.
func TestCrossReferences(t *testing.T) {
	retracted := rel("rel_4", carol, objB, jan, nil)
	retracted.Status = relationship.StatusRetracted
	others := []relationship.Relationship{
		rel("rel_1", bob, objA, jan, nil),   // same object: confirms
		rel("rel_2", carol, objB, jan, nil), // incompatible, earlier: corrected when confirmed
		rel("rel_3", alice, objB, jan, nil), // the actor's own: no link
		retracted,                           // not active: no link
		rel("rel_5", carol, objB, apr, nil), // incompatible, later: challenged
	}
	tests := []struct {
		name      string
		confirmed bool
		corrects  relationship.ID
		want      map[relationship.ID]relationship.CrossReferenceKind
	}{
		{"unconfirmed valid_from challenges", false, "",
			map[relationship.ID]relationship.CrossReferenceKind{"rel_1": "confirms", "rel_2": "challenges", "rel_5": "challenges"}},
		{"confirmed later valid_from corrects the earlier", true, "",
			map[relationship.ID]relationship.CrossReferenceKind{"rel_1": "confirms", "rel_2": "corrects", "rel_5": "challenges"}},
		{"a named correction corrects", false, "rel_5",
			map[relationship.ID]relationship.CrossReferenceKind{"rel_1": "confirms", "rel_2": "challenges", "rel_5": "corrects"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(ProfileActor(alice))
			load(l, others)
			mine := rel("rel_9", alice, objA, feb, nil)
			l.Create(&mine, "obs_1", ReasonAccepted)
			got := map[relationship.ID]relationship.CrossReferenceKind{}
			for _, x := range l.CrossReferences(&mine, tt.confirmed, tt.corrects, "ver_1") {
				got[x.To] = relationship.CrossReferenceKind(x.Kind)
				if x.From != "rel_9" || x.Author != alice || x.VerificationID != "ver_1" || x.FromVersion != 1 || x.ToVersion != 1 {
					t.Errorf("cross-reference %+v does not name its ends, author and verification", x)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("links (-want +got):\n%s", diff)
			}
			if len(l.WS.CrossRefs) != len(tt.want) {
				t.Errorf("%d cross-reference rows, want %d", len(l.WS.CrossRefs), len(tt.want))
			}
		})
	}
}

// liveCase is an open case of key with rels as its members, one position per object.
func liveCase(status conflict.Status, rels ...relationship.Relationship) store.CaseRow {
	c := store.CaseRow{Team: team, ID: "cf_7", Kind: conflict.KindCrossProfileCurrentState, Key: key, Status: status,
		Version: 1, OpenedAt: now.Add(-96 * time.Hour), ReviewDueAt: now.Add(-24 * time.Hour), PolicyVersion: 2,
		OpenedBy: alice, Positions: map[conflict.PositionKey]conflict.PositionID{}}
	for _, r := range rels {
		pk := conflict.PositionKey{Object: r.Object, Polarity: r.Polarity}
		if _, ok := c.Positions[pk]; !ok {
			c.Positions[pk] = conflict.PositionID("pos_" + r.Object.EntityID)
		}
		c.Members = append(c.Members, conflict.MemberRef{Position: pk, Relationship: r.ID, Version: r.Version, Owner: r.Owner})
	}
	return c
}

// caseSummary is what the case tests compare: the rows' shape without generated IDs and JSON.
type caseSummary struct {
	Ref         *CaseRef
	Inserts     int
	Updates     []store.CaseUpdate
	Reviews     []store.CaseReviewUpdate
	Positions   int
	Adds, Ends  []relationship.ID
	Events      []string // reason@version: prior→resulting by actor
	Transitions []string // relationship: reason
}

func summarize(l *Ledger, ref *CaseRef) caseSummary {
	s := caseSummary{Ref: ref, Inserts: len(l.WS.CaseInserts), Updates: l.WS.CaseUpdates, Reviews: l.WS.CaseReviews,
		Positions: len(l.WS.Positions)}
	for _, m := range l.WS.MemberAdds {
		s.Adds = append(s.Adds, m.Relationship)
	}
	for _, m := range l.WS.MemberEnds {
		s.Ends = append(s.Ends, m.Relationship)
	}
	for _, e := range l.WS.CaseEvents {
		s.Events = append(s.Events, fmt.Sprintf("%s@%d: %s→%s by %s%s", e.Reason, e.CaseVersion, e.PriorStatus,
			e.ResultingStatus, e.ActorKind, e.ActorProfile))
	}
	for _, t := range l.WS.Transitions {
		s.Transitions = append(s.Transitions, fmt.Sprintf("%s: %s", t.RelationshipID, t.Reason))
	}
	return s
}

// TestMaintain checks that placement's and Forget's case verb opens a case for a new cross-profile
// disagreement, repairs a live case's membership, dismisses one left without disagreement, and writes
// nothing when there is nothing to do.
func TestMaintain(t *testing.T) {
	r1, r2 := rel("rel_1", alice, objA, jan, nil), rel("rel_2", bob, objB, jan, nil)
	upd := func(status conflict.Status) []store.CaseUpdate {
		return []store.CaseUpdate{{Team: team, ID: "cf_7", ExpectVersion: 1, Version: 2, Status: status, UpdatedAt: now}}
	}
	tests := []struct {
		name  string
		rels  []relationship.Relationship
		cases []store.CaseRow
		verb  func(l *Ledger, ks *KeyState)
		want  caseSummary
	}{{
		name: "no disagreement, no case: nothing",
		rels: []relationship.Relationship{r1},
		verb: func(l *Ledger, ks *KeyState) { l.Touch(ks.Find("rel_1")) },
		want: caseSummary{},
	}, {
		name: "a new disagreement opens a case",
		rels: []relationship.Relationship{r1},
		verb: func(l *Ledger, _ *KeyState) {
			r := r2
			l.Create(&r, "obs_1", ReasonAccepted)
		},
		want: caseSummary{Ref: &CaseRef{ID: "cf_1", Version: 1, Status: conflict.StatusOpen}, Inserts: 1, Positions: 2,
			Adds: []relationship.ID{"rel_1", "rel_2"}, Events: []string{"opened@1: →open by profileprf_alice"},
			Transitions: []string{"rel_2: accepted"}},
	}, {
		name:  "a new member updates the live case's membership",
		rels:  []relationship.Relationship{r1, r2},
		cases: []store.CaseRow{liveCase(conflict.StatusOpen, r1, r2)},
		verb: func(l *Ledger, _ *KeyState) {
			r := rel("rel_3", carol, objA, jan, nil)
			l.Create(&r, "obs_1", ReasonAccepted)
		},
		want: caseSummary{Ref: &CaseRef{ID: "cf_7", Version: 2, Status: conflict.StatusOpen}, Updates: upd(conflict.StatusOpen),
			Adds: []relationship.ID{"rel_3"}, Events: []string{"membership_changed@2: open→open by profileprf_alice"},
			Transitions: []string{"rel_3: accepted"}},
	}, {
		name:  "a retraction that leaves no disagreement dismisses the case",
		rels:  []relationship.Relationship{r1, r2},
		cases: []store.CaseRow{liveCase(conflict.StatusOverdue, r1, r2)},
		verb:  func(l *Ledger, ks *KeyState) { l.Retract(ks.Find("rel_2"), "") },
		want: caseSummary{Ref: &CaseRef{ID: "cf_7", Version: 2, Status: conflict.StatusDismissed},
			Updates: upd(conflict.StatusDismissed), Ends: []relationship.ID{"rel_1", "rel_2"},
			Events:      []string{"dismissed_no_material_disagreement@2: overdue→dismissed by profileprf_alice"},
			Transitions: []string{"rel_2: forget"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(ProfileActor(alice))
			load(l, tt.rels, tt.cases...)
			tt.verb(l, l.Key(key))
			var ref *CaseRef
			for _, ks := range l.Touched() {
				ref = l.Maintain(ks)
			}
			if diff := cmp.Diff(tt.want, summarize(l, ref), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.want.Ref != nil && tt.want.Ref.Status == conflict.StatusDismissed && l.Key(key).Live != nil {
				t.Errorf("a dismissed case is still the key's live case")
			}
		})
	}
}

// TestMaintainOpensWithThePolicyInForce checks what a new case pins: the policy version, its review
// deadline from the policy's TTL, and the profile that opened it.
func TestMaintainOpensWithThePolicyInForce(t *testing.T) {
	l := newLedger(ProfileActor(bob))
	load(l, []relationship.Relationship{rel("rel_1", alice, objA, jan, nil)})
	r := rel("rel_2", bob, objB, jan, nil)
	l.Create(&r, "obs_1", ReasonAccepted)
	l.Maintain(l.Key(key))
	want := store.CaseRow{Team: team, ID: "cf_1", Kind: conflict.KindCrossProfileCurrentState, Key: key,
		Status: conflict.StatusOpen, Version: 1, OpenedAt: now, ReviewDueAt: dueT, NextReviewAt: now, PolicyVersion: 3,
		OpenedBy: bob}
	if diff := cmp.Diff([]store.CaseRow{want}, l.WS.CaseInserts, cmpopts.IgnoreFields(store.CaseRow{}, "Positions", "Members")); diff != "" {
		t.Errorf("case (-want +got):\n%s", diff)
	}
	ev := l.WS.CaseEvents[0]
	const positions = `[{"position_id":"pos_1","object":{"entity_id":"ent_a"},"polarity":"+","members":[{"relationship_id":"rel_1","version":1,"owner_profile_id":"prf_alice"}]},` +
		`{"position_id":"pos_2","object":{"entity_id":"ent_b"},"polarity":"+","members":[{"relationship_id":"rel_2","version":1,"owner_profile_id":"prf_bob"}]}]`
	if string(ev.Positions) != positions || string(ev.Referenced) != `{"rel_1":1,"rel_2":1}` || ev.PolicyVersion != 3 {
		t.Errorf("opening event records positions %s, referenced %s, policy %d", ev.Positions, ev.Referenced, ev.PolicyVersion)
	}
}

// TestReview checks the nightly reviewer's verb: each outcome of the policy becomes its rows, always
// with one review update fenced by the claim token.
func TestReview(t *testing.T) {
	r1, r2 := rel("rel_1", alice, objA, jan, nil), rel("rel_2", bob, objB, jan, nil)
	next := now.Add(24 * time.Hour)
	review := func(version int, status conflict.Status) store.CaseReviewUpdate {
		return store.CaseReviewUpdate{Team: team, ID: "cf_7", Token: "tok_1", ExpectVersion: 1, Version: version,
			Status: status, NextReviewAt: next, UpdatedAt: now}
	}
	resolved := review(2, conflict.StatusResolved)
	resolved.ResolvedAt, resolved.EffectiveAt, resolved.TimeBasis, resolved.Preferred = &now, feb, "evidence_time", "pos_ent_b"
	tests := []struct {
		name        string
		status      conflict.Status
		retract     relationship.ID
		decision    conflict.Decision
		wantOutcome conflict.Outcome
		want        caseSummary
	}{{
		name:        "resolve: the loser is superseded at the cutoff",
		status:      conflict.StatusOpen,
		decision:    conflict.Decision{Outcome: conflict.OutcomeResolve, Winner: 1, Cutoff: *feb, Basis: conflict.BasisEvidenceTime, Reason: conflict.ReasonPreTTLFloor},
		wantOutcome: conflict.OutcomeResolve,
		want: caseSummary{Reviews: []store.CaseReviewUpdate{resolved},
			Events:      []string{"pre_ttl_floor_met@2: open→resolved by system_conflict_reviewer"},
			Transitions: []string{"rel_1: conflict_resolved:cf_7"}},
	}, {
		name:        "overdue: one event when the case first becomes overdue",
		status:      conflict.StatusOpen,
		decision:    conflict.Decision{Outcome: conflict.OutcomeOverdue, Winner: -1, Reason: conflict.ReasonNoQualifyingPosition},
		wantOutcome: conflict.OutcomeOverdue,
		want: caseSummary{Reviews: []store.CaseReviewUpdate{review(2, conflict.StatusOverdue)},
			Events: []string{"overdue_no_qualifying_position@2: open→overdue by system_conflict_reviewer"}},
	}, {
		name:        "overdue again: no event, only the review update",
		status:      conflict.StatusOverdue,
		decision:    conflict.Decision{Outcome: conflict.OutcomeOverdue, Winner: -1, Reason: conflict.ReasonNoQualifyingPosition},
		wantOutcome: conflict.OutcomeOverdue,
		want:        caseSummary{Reviews: []store.CaseReviewUpdate{review(1, conflict.StatusOverdue)}},
	}, {
		name:        "keep open: no event",
		status:      conflict.StatusOpen,
		decision:    conflict.Decision{Outcome: conflict.OutcomeKeepOpen, Winner: -1, Reason: conflict.ReasonNoQualifyingPosition},
		wantOutcome: conflict.OutcomeKeepOpen,
		want:        caseSummary{Reviews: []store.CaseReviewUpdate{review(1, conflict.StatusOpen)}},
	}, {
		name:        "no disagreement left: dismissed with the same reason as a placement's dismissal",
		status:      conflict.StatusOpen,
		retract:     "rel_2",
		wantOutcome: conflict.OutcomeDismiss,
		want: caseSummary{Reviews: []store.CaseReviewUpdate{review(2, conflict.StatusDismissed)},
			Ends:        []relationship.ID{"rel_1", "rel_2"},
			Events:      []string{"dismissed_no_material_disagreement@2: open→dismissed by system_conflict_reviewer"},
			Transitions: []string{"rel_2: forget"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rels := []relationship.Relationship{r1, r2}
			if tt.retract != "" {
				rels[1].Status = relationship.StatusRetracted
			}
			l := newLedger(ReviewerActor)
			cs := liveCase(tt.status, r1, r2)
			load(l, rels, cs)
			decided := false
			got := l.Review(l.Key(key), l.Case("cf_7"), "tok_1", next, func(ps []conflict.Position) conflict.Decision {
				decided = true
				if len(ps) != 2 {
					t.Errorf("decide got %d positions, want 2", len(ps))
				}
				return tt.decision
			})
			if got != tt.wantOutcome {
				t.Errorf("outcome %s, want %s", got, tt.wantOutcome)
			}
			if decided == (tt.wantOutcome == conflict.OutcomeDismiss) {
				t.Errorf("decide called: %v, for outcome %s", decided, got)
			}
			if tt.retract != "" {
				tt.want.Transitions = nil // the fixture retracted it before the ledger; no transition is ours
			}
			if diff := cmp.Diff(tt.want, summarize(l, nil), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReviewResolutionEventRecordsTheTimeBasis checks the resolution event carries the decision's
// time basis and the loser's transition is its last one.
func TestReviewResolutionEventRecordsTheTimeBasis(t *testing.T) {
	r1, r2 := rel("rel_1", alice, objA, jan, nil), rel("rel_2", bob, objB, jan, nil)
	l := newLedger(ReviewerActor)
	load(l, []relationship.Relationship{r1, r2}, liveCase(conflict.StatusOpen, r1, r2))
	l.Review(l.Key(key), l.Case("cf_7"), "tok_1", now, func([]conflict.Position) conflict.Decision {
		return conflict.Decision{Outcome: conflict.OutcomeResolve, Winner: 0, Cutoff: *mar,
			Basis: conflict.BasisRecordedFallback, Reason: conflict.ReasonPostTTLMajority}
	})
	if got := l.WS.CaseEvents[0].TimeBasis; got != "recorded_fallback" {
		t.Errorf("resolution event time basis %q, want recorded_fallback", got)
	}
	loser := l.Key(key).Find("rel_2")
	if loser.Status != relationship.StatusSuperseded || !loser.Validity.To.Equal(*mar) || loser.Version != 2 {
		t.Errorf("loser after resolution: %+v", loser)
	}
	if w := l.Key(key).Find("rel_1"); w.Status != relationship.StatusActive || w.Version != 1 {
		t.Errorf("winner changed: %+v", w)
	}
}

// TestDecide: a decision records every change of its transaction, resolves its item before the items
// whose question the changes answered close, and a change out of review closes that relationship's
// open items (whoever made it).
func TestDecide(t *testing.T) {
	held := rel("r_held", alice, objB, nil, nil)
	held.Status = relationship.StatusNeedsReview
	prior := rel("r_prior", alice, objA, nil, nil)
	l := newLedger(ProfileActor(alice))
	load(l, []relationship.Relationship{prior, held})
	ks := l.Key(key)
	l.Supersede(ks.Find("r_prior"), now, "r_held", Decided("supersede_prior"))
	l.Change(ks.Find("r_held"), relationship.StatusActive, relationship.TierValidatedClaim, Decided("supersede_prior"))
	item := store.ReviewItem{ReviewItemRow: store.ReviewItemRow{ID: "rev_1", IngestID: "ing_0", PlacementItemID: "p1",
		RelationshipID: "r_held"}, Status: store.ReviewOpen}
	changes, err := l.Decide(Decision{ID: "dec_1", Item: item, Action: "supersede_prior", Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	end := now
	want := []Change{
		{RelationshipID: "r_prior", TransitionID: "trn_1",
			Before: State{Status: relationship.StatusActive, Tier: relationship.TierValidatedClaim, Version: 1},
			After:  State{Status: relationship.StatusSuperseded, Tier: relationship.TierValidatedClaim, ValidTo: &end, Version: 2}},
		{RelationshipID: "r_held", TransitionID: "trn_2",
			Before: State{Status: relationship.StatusNeedsReview, Tier: relationship.TierValidatedClaim, Version: 1},
			After:  State{Status: relationship.StatusActive, Tier: relationship.TierValidatedClaim, Version: 2}},
	}
	if d := cmp.Diff(want, changes); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]store.ReviewItemClose{{Team: team, ID: "rev_1", Status: store.ReviewResolved, ClosedAt: now,
		DecisionID: "dec_1"}}, l.WS.ItemCloses); d != "" {
		t.Errorf("item closes (-want +got):\n%s", d)
	}
	// Only the held relationship left review; the prior was never in it.
	if d := cmp.Diff([]store.ReviewItemCloseFor{{Team: team, RelationshipID: "r_held", Status: store.ReviewSuperseded,
		ClosedAt: now}}, l.WS.ItemClosesFor); d != "" {
		t.Errorf("closes of answered items (-want +got):\n%s", d)
	}
	if n := len(l.WS.Decisions); n != 1 || l.WS.Decisions[0].Profile != alice || l.WS.Decisions[0].ReviewID != "rev_1" ||
		l.WS.Decisions[0].IdempotencyKey != "idem-1" || l.WS.Decisions[0].IngestID != "ing_1" {
		t.Errorf("decision rows %+v, want one by alice on rev_1 under idem-1", l.WS.Decisions)
	}
}

// TestCarryAndPreview: each decision action changes what it says, and Preview reports the same
// changes without touching the ledger's own rows or state.
func TestCarryAndPreview(t *testing.T) {
	held := rel("r_held", alice, objB, feb, nil)
	held.Status = relationship.StatusNeedsReview
	prior := rel("r_prior", alice, objA, jan, nil)
	other := rel("r_bob", bob, objA, jan, nil)
	for _, tc := range []struct {
		action string
		want   map[relationship.ID]relationship.Status
	}{
		{ActionSupersedePrior, map[relationship.ID]relationship.Status{"r_prior": relationship.StatusSuperseded, "r_held": relationship.StatusActive}},
		{ActionKeepPriorRejectNew, map[relationship.ID]relationship.Status{"r_held": relationship.StatusRejected}},
		{ActionReject, map[relationship.ID]relationship.Status{"r_held": relationship.StatusRejected}},
		{ActionForget, map[relationship.ID]relationship.Status{"r_held": relationship.StatusRetracted}},
	} {
		t.Run(tc.action, func(t *testing.T) {
			l := newLedger(ProfileActor(alice))
			load(l, []relationship.Relationship{prior, held, other})
			ks := l.Key(key)
			preview := l.Preview(ks, "r_held", []relationship.ID{"r_prior"}, []string{tc.action})[tc.action]
			if len(l.WS.Transitions) != 0 || ks.Find("r_held").Status != relationship.StatusNeedsReview {
				t.Fatalf("Preview changed the ledger: %d transitions, held %s", len(l.WS.Transitions), ks.Find("r_held").Status)
			}
			xrefs := l.Carry(ks, ks.Find("r_held"), []relationship.ID{"r_prior"}, tc.action, "")
			got := map[relationship.ID]relationship.Status{}
			for _, ch := range l.Changes() {
				got[ch.RelationshipID] = ch.After.Status
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(l.Changes(), preview, cmpopts.IgnoreFields(Change{}, "TransitionID")); d != "" {
				t.Errorf("preview differs from what Carry did (-did +previewed):\n%s", d)
			}
			if tc.action == ActionSupersedePrior {
				if p := ks.Find("r_prior"); p.Validity.To == nil || !p.Validity.To.Equal(*feb) {
					t.Errorf("prior closed at %v, want the held statement's valid_from %v", p.Validity.To, feb)
				}
				if len(xrefs) != 1 || xrefs[0].To != "r_bob" || xrefs[0].Kind != string(relationship.CrossReferenceChallenges) {
					t.Errorf("cross-references %+v, want one challenges to bob's", xrefs)
				}
			}
		})
	}
}

// TestSettle: a held relationship becomes current once no active relationship of its owner
// contradicts it, and stays held while one does; its item is re-asked only when its question moved.
func TestSettle(t *testing.T) {
	held := rel("r_held", alice, objB, nil, nil)
	held.Status = relationship.StatusNeedsReview
	prior := rel("r_prior", alice, objA, nil, nil)
	bobs := rel("r_bob", bob, objA, nil, nil)
	item := store.ReviewItemRow{ID: "rev_0", Kind: ItemKindConflict, Profile: alice, ObservationID: "obs_0", RelationshipID: "r_held",
		Related: []string{"r_prior"}, RelationshipVersion: 1, RelatedVersions: []int{1}}

	l := newLedger(ProfileActor(alice))
	l.Load(store.KeysLocked{Relationships: []relationship.Relationship{prior, held, bobs}, Items: []store.ReviewItemRow{item}},
		[]relationship.Predicate{worksAt})
	ks := l.Key(key)
	ks.Touched = true
	l.Settle()
	if got := ks.Find("r_held").Status; got != relationship.StatusNeedsReview {
		t.Fatalf("held while its prior is active: %s, want needs_review", got)
	}
	if len(l.WS.ReviewItems) != 0 || len(l.WS.ItemClosesFor) != 0 {
		t.Fatalf("an item that still asks its question was re-asked: %+v, closes %+v", l.WS.ReviewItems, l.WS.ItemClosesFor)
	}
	l.Retract(ks.Find("r_prior"), "")
	l.Settle()
	if got := ks.Find("r_held").Status; got != relationship.StatusActive {
		t.Errorf("held after its prior was retracted: %s, want active", got)
	}
	if last := l.WS.Transitions[len(l.WS.Transitions)-1]; last.RelationshipID != "r_held" || last.Reason != string(ReasonPriorGone) {
		t.Errorf("last transition %+v, want r_held %s", last, ReasonPriorGone)
	}
	// Bob's relationship is another owner's: it never holds alice's back, it gets a cross-reference.
	if len(l.WS.CrossRefs) != 1 || l.WS.CrossRefs[0].To != "r_bob" {
		t.Errorf("cross-references %+v, want one to bob's", l.WS.CrossRefs)
	}
	if d := cmp.Diff([]store.ReviewItemCloseFor{{Team: team, RelationshipID: "r_held", Status: store.ReviewSuperseded,
		ClosedAt: now}}, l.WS.ItemClosesFor); d != "" {
		t.Errorf("item closes (-want +got):\n%s", d)
	}
	if len(l.WS.ReviewItems) != 0 {
		t.Errorf("items issued %+v, want none", l.WS.ReviewItems)
	}
}

// TestSettleReasksAMovedQuestion: a held statement whose prior was replaced by another current value of
// its owner is held again with a new item naming the new prior at its version; its old item closes.
func TestSettleReasksAMovedQuestion(t *testing.T) {
	held := rel("r_held", alice, objB, nil, nil)
	held.Status = relationship.StatusNeedsReview
	prior := rel("r_prior", alice, objA, nil, nil)
	item := store.ReviewItemRow{ID: "rev_0", Kind: ItemKindConflict, Profile: alice, ObservationID: "obs_0", RelationshipID: "r_held",
		Related: []string{"r_prior"}, RelationshipVersion: 1, RelatedVersions: []int{1}}
	l := newLedger(ProfileActor(alice))
	l.Load(store.KeysLocked{Relationships: []relationship.Relationship{prior, held}, Items: []store.ReviewItemRow{item}},
		[]relationship.Predicate{worksAt})
	ks := l.Key(key)
	next := rel("r_next", alice, relationship.Object{EntityID: "ent_c"}, feb, nil)
	l.Create(&next, "obs_1", ReasonAccepted)
	l.Supersede(ks.Find("r_prior"), *feb, next.ID, ReasonSuperseded)
	asked := l.Settle()
	if got := ks.Find("r_held").Status; got != relationship.StatusNeedsReview {
		t.Fatalf("held against the new value: %s, want needs_review", got)
	}
	if len(l.WS.ReviewItems) != 1 {
		t.Fatalf("items issued %+v, want one", l.WS.ReviewItems)
	}
	got := l.WS.ReviewItems[0]
	if got.RelationshipID != "r_held" || !slices.Equal(got.Related, []string{"r_next"}) || !slices.Equal(got.RelatedVersions, []int{1}) ||
		got.ObservationID != "obs_0" || got.Profile != alice {
		t.Errorf("new item %+v, want r_held against r_next v1 from obs_0", got)
	}
	if a, ok := asked["r_held"]; !ok || a.Review == nil || a.Review.ReviewID != got.ID {
		t.Errorf("asked %+v, want the new item", asked)
	}
	if len(l.WS.ItemClosesFor) != 1 || l.WS.ItemClosesFor[0].RelationshipID != "r_held" {
		t.Errorf("closes %+v, want r_held's old item closed", l.WS.ItemClosesFor)
	}
	n := len(l.WS.ReviewItems) + len(l.WS.ItemClosesFor) + len(l.WS.Transitions)
	l.Settle()
	if len(l.WS.ReviewItems)+len(l.WS.ItemClosesFor)+len(l.WS.Transitions) != n {
		t.Errorf("a second Settle changed rows")
	}
}

// TestSettleMakesADuplicateASupport: two identical held statements of one owner never become current
// side by side: once one is current, the other becomes a support of it.
func TestSettleMakesADuplicateASupport(t *testing.T) {
	first := rel("r_held1", alice, objB, nil, nil)
	first.Status = relationship.StatusNeedsReview
	second := rel("r_held2", alice, objB, nil, nil)
	second.Status = relationship.StatusNeedsReview
	prior := rel("r_prior", alice, objA, nil, nil)
	sup := support("r_held2", alice)
	sup.Group, sup.ContentHash, sup.ObservationID, sup.VerificationID, sup.Start, sup.End = "content:x", "hash:x", "obs_2", "ver_2", 0, 4
	l := newLedger(ProfileActor(alice))
	l.Load(store.KeysLocked{Relationships: []relationship.Relationship{prior, first, second},
		Supports: []store.SupportRow{support("r_held1", alice), sup}}, []relationship.Predicate{worksAt})
	ks := l.Key(key)
	l.Retract(ks.Find("r_prior"), "")
	l.Settle()
	if a, b := ks.Find("r_held1").Status, ks.Find("r_held2").Status; a != relationship.StatusActive || b != relationship.StatusRejected {
		t.Fatalf("after the prior went: %s and %s, want active and rejected", a, b)
	}
	if l.AbsorbedInto("r_held2") != "r_held1" {
		t.Errorf("r_held2 absorbed into %q, want r_held1", l.AbsorbedInto("r_held2"))
	}
	var links []store.SupportLinkRow
	for _, s := range l.WS.Supports {
		if s.RelationshipID == "r_held1" {
			links = append(links, s)
		}
	}
	if len(links) != 1 || links[0].ObservationID != "obs_2" || links[0].VerificationID != "ver_2" || links[0].SourceGroup != "content:x" {
		t.Errorf("links to the current one %+v, want r_held2's support linked again", links)
	}
	if got := ks.Find("r_held1").Tier; got != relationship.TierFact {
		t.Errorf("tier %s, want fact (two independent groups)", got)
	}
}

// TestCarryCorrectsOnAConfirmedValidFrom: a held statement whose later valid_from a verifier
// confirmed in a stored support corrects another owner's earlier one when a decision makes it
// current, as it would have at placement; unconfirmed, it only challenges it.
func TestCarryCorrectsOnAConfirmedValidFrom(t *testing.T) {
	for _, confirmed := range []bool{true, false} {
		held := rel("r_held", alice, objB, feb, nil)
		held.Status = relationship.StatusNeedsReview
		prior := rel("r_prior", alice, objA, jan, nil)
		other := rel("r_bob", bob, objA, jan, nil)
		sup := []store.SupportRow{support("r_held", alice), support("r_prior", alice), support("r_bob", bob)}
		if confirmed {
			sup[0].ConfirmedFrom = feb
		}
		l := newLedger(ProfileActor(alice))
		l.Load(store.KeysLocked{Relationships: []relationship.Relationship{prior, held, other}, Supports: sup},
			[]relationship.Predicate{worksAt})
		ks := l.Key(key)
		xrefs := l.Carry(ks, ks.Find("r_held"), []relationship.ID{"r_prior"}, ActionSupersedePrior, "")
		want := string(relationship.CrossReferenceChallenges)
		if confirmed {
			want = string(relationship.CrossReferenceCorrects)
		}
		if len(xrefs) != 1 || xrefs[0].Kind != want {
			t.Errorf("confirmed %v: cross-references %+v, want one %s", confirmed, xrefs, want)
		}
	}
}

// TestAdopts checks the adoption's cross-reference: from the adopter's relationship to one other
// owner's relationship of the key holding a support from the adopted fragment — its author's, before
// an earlier relationship of another adopter — and to nothing else; and that the adopted support,
// carrying the fragment's group and hash, adds no group.
func TestAdopts(t *testing.T) {
	superseded := rel("rel_3", carol, objB, jan, nil)
	superseded.Status = relationship.StatusSuperseded
	rels := []relationship.Relationship{
		rel("rel_0", carol, objA, jan, nil), // an earlier adopter of frg_b: not linked, its author is
		rel("rel_1", bob, objA, jan, nil),   // frg_b's author's: linked
		rel("rel_2", carol, objA, jan, nil),
		superseded,                          // supported by frg_b too: not linked, one link is enough
		rel("rel_4", alice, objB, jan, nil), // the actor's own, supported by frg_b: no link
	}
	frag := func(id relationship.ID, owner identity.ProfileID, f evidence.FragmentID) store.SupportRow {
		s := support(id, owner)
		s.FragmentID = f
		if f == "frg_b" {
			s.Group, s.ContentHash, s.Author = "content:b", "hash:b", bob
		}
		return s
	}
	l := newLedger(ProfileActor(alice))
	l.Load(store.KeysLocked{Relationships: rels, Supports: []store.SupportRow{frag("rel_0", carol, "frg_b"), frag("rel_1", bob, "frg_b"),
		frag("rel_2", carol, "frg_c"), frag("rel_3", carol, "frg_b"), frag("rel_4", alice, "frg_b")}},
		[]relationship.Predicate{worksAt})
	mine := rel("rel_9", alice, objA, feb, nil)
	l.Support(mine.ID, []store.SupportLinkRow{{Team: team, ID: "sup_1", FragmentID: "frg_b", SourceGroup: "content:b",
		ContentHash: "hash:b", Authority: evidence.AuthorityStandard, Author: bob, Profile: alice}})
	l.Create(&mine, "obs_1", ReasonAccepted)
	var got []string
	for _, x := range l.Adopts(&mine, "frg_b", "ver_1") {
		got = append(got, fmt.Sprintf("%s %s->%s v%d->v%d by %s ver %s", x.Kind, x.From, x.To, x.FromVersion, x.ToVersion, x.Author,
			x.VerificationID))
	}
	want := []string{"adopts_evidence_from rel_9->rel_1 v1->v1 by prf_alice ver ver_1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("adoption cross-references (-want +got):\n%s", d)
	}
	if len(l.WS.CrossRefs) != 1 {
		t.Errorf("write set holds %d cross-references, want 1", len(l.WS.CrossRefs))
	}
	// rel_1's one group and the adopter's support count as one group together.
	if n, _ := evidence.CountGroups(append(l.Supports("rel_1"), l.Supports(mine.ID)...)); n != 1 {
		t.Errorf("rel_1's and the adopted support count %d groups, want 1", n)
	}
}

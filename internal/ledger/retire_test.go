package ledger

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// fragSupport is a standard support of id by author from fragment frag of source group group.
func fragSupport(id relationship.ID, author identity.ProfileID, frag evidence.FragmentID, group string) store.SupportRow {
	return store.SupportRow{RelationshipID: id, FragmentID: frag, Group: group, ContentHash: "hash:" + string(frag),
		Authority: evidence.AuthorityStandard, Author: author}
}

// retirement retires fragment frag in the ledger's call.
func retirement(id string, frag evidence.FragmentID) store.RetirementRow {
	return store.RetirementRow{Team: team, ID: id, FragmentID: frag, Cause: store.RetiredBySourceRevision, ActorKind: store.ActorProfile,
		ActorProfile: alice, Reason: "source revision", IngestID: "ing_1", CreatedAt: now}
}

// state is a relationship's status and tier after Retire.
type state struct {
	Status relationship.Status
	Tier   relationship.Tier
}

// retireCase is one case of TestRetire: the loaded relationships and supports, the retirements, and
// what must follow.
type retireCase struct {
	name    string
	rels    []relationship.Relationship
	sups    []store.SupportRow
	retire  []store.RetirementRow
	want    map[relationship.ID]state
	reasons []string // the transitions' reasons, in order
	closes  int      // review item closes
	cases   conflict.Status
	// untouched: no support changed, so no key is touched
	untouched bool
}

// TestRetire: retiring fragments makes their supports ineffective and re-evaluates every relationship
// they supported, of any owner, by system transitions naming the retirement: no effective support
// left → pending_evidence (candidate); fewer groups → a lower tier; a support already ineffective, a
// closed or pending relationship → no change; the held statement of an owner whose prior left current
// state is re-planned; the touched keys' cases are repaired or dismissed by Maintain.
func TestRetire(t *testing.T) {
	held := rel("r_held", alice, objB, feb, nil)
	held.Status = relationship.StatusNeedsReview
	closed := rel("r_closed", carol, objA, jan, nil)
	closed.Status = relationship.StatusSuperseded
	fact := rel("r_fact", carol, objA, jan, nil)
	fact.Tier = relationship.TierFact
	tests := []retireCase{{
		name:   "the only support retired: pending_evidence, the case dismissed",
		rels:   []relationship.Relationship{rel("r_alice", alice, objA, jan, nil), rel("r_bob", bob, objB, feb, nil)},
		sups:   []store.SupportRow{fragSupport("r_alice", alice, "frg_1", "source:doc"), fragSupport("r_bob", bob, "frg_2", "source:other")},
		retire: []store.RetirementRow{retirement("ret_1", "frg_1")},
		want: map[relationship.ID]state{"r_alice": {relationship.StatusPendingEvidence, relationship.TierCandidate},
			"r_bob": {relationship.StatusActive, relationship.TierValidatedClaim}},
		reasons: []string{"support_retired:ret_1"},
		cases:   conflict.StatusDismissed,
	}, {
		name:    "one of two groups retired: the fact becomes a validated claim and stays current",
		rels:    []relationship.Relationship{fact},
		sups:    []store.SupportRow{fragSupport("r_fact", carol, "frg_1", "source:doc"), fragSupport("r_fact", bob, "frg_3", "source:mail")},
		retire:  []store.RetirementRow{retirement("ret_1", "frg_1")},
		want:    map[relationship.ID]state{"r_fact": {relationship.StatusActive, relationship.TierValidatedClaim}},
		reasons: []string{"support_retired:ret_1"},
	}, {
		name:    "two supports of one relationship retired: one transition naming the first retirement",
		rels:    []relationship.Relationship{rel("r_bob", bob, objA, jan, nil)},
		sups:    []store.SupportRow{fragSupport("r_bob", bob, "frg_1", "source:doc"), fragSupport("r_bob", bob, "frg_2", "source:doc")},
		retire:  []store.RetirementRow{retirement("ret_1", "frg_1"), retirement("ret_2", "frg_2")},
		want:    map[relationship.ID]state{"r_bob": {relationship.StatusPendingEvidence, relationship.TierCandidate}},
		reasons: []string{"support_retired:ret_1"},
	}, {
		name:   "a closed relationship keeps its state",
		rels:   []relationship.Relationship{closed},
		sups:   []store.SupportRow{fragSupport("r_closed", carol, "frg_1", "source:doc")},
		retire: []store.RetirementRow{retirement("ret_1", "frg_1")},
		want:   map[relationship.ID]state{"r_closed": {relationship.StatusSuperseded, relationship.TierValidatedClaim}},
	}, {
		name: "a support already retired changes nothing",
		rels: []relationship.Relationship{rel("r_bob", bob, objA, jan, nil)},
		sups: []store.SupportRow{func() store.SupportRow {
			s := fragSupport("r_bob", bob, "frg_1", "source:doc")
			s.Retirement = "ret_0"
			return s
		}(), fragSupport("r_bob", bob, "frg_2", "source:mail")},
		retire:    []store.RetirementRow{retirement("ret_1", "frg_1")},
		want:      map[relationship.ID]state{"r_bob": {relationship.StatusActive, relationship.TierValidatedClaim}},
		untouched: true,
	}, {
		name:   "the prior loses its support: the owner's held statement is re-planned current",
		rels:   []relationship.Relationship{rel("r_prior", alice, objA, jan, nil), held},
		sups:   []store.SupportRow{fragSupport("r_prior", alice, "frg_1", "source:doc"), fragSupport("r_held", alice, "frg_2", "source:mail")},
		retire: []store.RetirementRow{retirement("ret_1", "frg_1")},
		want: map[relationship.ID]state{"r_prior": {relationship.StatusPendingEvidence, relationship.TierCandidate},
			"r_held": {relationship.StatusActive, relationship.TierValidatedClaim}},
		reasons: []string{"support_retired:ret_1", "prior_gone"},
		closes:  1,
	}, {
		name:   "a held statement left without support waits for evidence; its question closes",
		rels:   []relationship.Relationship{rel("r_prior", alice, objA, jan, nil), held},
		sups:   []store.SupportRow{fragSupport("r_prior", alice, "frg_1", "source:doc"), fragSupport("r_held", alice, "frg_1", "source:doc")},
		retire: []store.RetirementRow{retirement("ret_1", "frg_1")},
		want: map[relationship.ID]state{"r_prior": {relationship.StatusPendingEvidence, relationship.TierCandidate},
			"r_held": {relationship.StatusPendingEvidence, relationship.TierCandidate}},
		reasons: []string{"support_retired:ret_1", "support_retired:ret_1"},
		closes:  1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRetire(t, tc)
		})
	}
}

// checkRetire runs Retire on a ledger loaded with rels and sups (and an open case of key when cases
// names the status Maintain must leave it in) and checks the states, the system transitions'
// reasons, the rows, the item closes and the touched key.
func checkRetire(t *testing.T, tc retireCase) {
	l := newLedger(ProfileActor(alice))
	var cases []store.CaseRow
	if tc.cases != "" {
		cases = append(cases, store.CaseRow{Team: team, ID: "cf_1", Kind: conflict.KindCrossProfileCurrentState, Key: key,
			Status: conflict.StatusOpen, Version: 1, PolicyVersion: 3, Positions: map[conflict.PositionKey]conflict.PositionID{}})
	}
	l.Load(store.KeysLocked{Relationships: tc.rels, Supports: tc.sups, Cases: cases}, []relationship.Predicate{worksAt})
	l.Retire(tc.retire)
	got := map[relationship.ID]state{}
	for _, r := range l.Key(key).Rels {
		got[r.ID] = state{r.Status, r.Tier}
	}
	if d := cmp.Diff(tc.want, got); d != "" {
		t.Errorf("states (-want +got):\n%s", d)
	}
	var reasons []string
	for _, tr := range l.WS.Transitions {
		reasons = append(reasons, tr.Reason)
		if tr.ActorKind != store.ActorSystem || tr.ActorProfile != "" || tr.IdempotencyKey != "" {
			t.Errorf("transition %s by %s %q (key %q), want the system", tr.Reason, tr.ActorKind, tr.ActorProfile, tr.IdempotencyKey)
		}
	}
	if d := cmp.Diff(tc.reasons, reasons); d != "" {
		t.Errorf("transition reasons (-want +got):\n%s", d)
	}
	if len(l.WS.Updates) != len(l.WS.Transitions) {
		t.Errorf("%d updates for %d transitions", len(l.WS.Updates), len(l.WS.Transitions))
	}
	if d := cmp.Diff(tc.retire, l.WS.Retirements); d != "" {
		t.Errorf("retirement rows (-want +got):\n%s", d)
	}
	if len(l.WS.ItemClosesFor) != tc.closes {
		t.Errorf("item closes %+v, want %d", l.WS.ItemClosesFor, tc.closes)
	}
	if l.Actor != ProfileActor(alice) {
		t.Errorf("the ledger's actor is %+v after Retire", l.Actor)
	}
	touched := l.Touched()
	if tc.untouched {
		if len(touched) != 0 {
			t.Errorf("touched keys %d, want none", len(touched))
		}
		return
	}
	if len(touched) != 1 {
		t.Fatalf("touched keys %d, want 1", len(touched))
	}
	if tc.cases != "" {
		if ref := l.Maintain(touched[0]); ref == nil || ref.Status != tc.cases {
			t.Errorf("case after Maintain %+v, want %s", ref, tc.cases)
		}
	}
}

package relationship_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

var (
	stateOne  = relationship.Predicate{Key: "deploys_from", Version: 1, Kind: relationship.KindState, Cardinality: relationship.CardinalityOne}
	stateMany = relationship.Predicate{Key: "works_on", Version: 1, Kind: relationship.KindState, Cardinality: relationship.CardinalityMany}
	eventOne  = relationship.Predicate{Key: "deployed", Version: 1, Kind: relationship.KindEvent, Cardinality: relationship.CardinalityOne}
	eventMany = relationship.Predicate{Key: "released", Version: 1, Kind: relationship.KindEvent, Cardinality: relationship.CardinalityMany}

	objMain    = relationship.Object{EntityID: identity.EntityID("ent_main")}
	objRelease = relationship.Object{EntityID: identity.EntityID("ent_release")}
	objHotfix  = relationship.Object{EntityID: identity.EntityID("ent_hotfix")}
	objValue   = relationship.Object{ValueID: "val_42"}

	jan, feb, mar, apr = day("2026-01-01"), day("2026-02-01"), day("2026-03-01"), day("2026-04-01")
)

const (
	pos = relationship.PolarityPositive
	neg = relationship.PolarityNegative
)

// rel is a relationship of the owner with the given state.
func rel(id relationship.ID, status relationship.Status, obj relationship.Object, pol relationship.Polarity, from, to *time.Time) relationship.Relationship {
	return relationship.Relationship{ID: id, Owner: "pf_a", Subject: "ent_production", PredicateKey: "deploys_from",
		PredicateVersion: 1, Object: obj, Polarity: pol, Validity: relationship.Interval{From: from, To: to},
		Status: status, Tier: relationship.TierValidatedClaim, Version: 1}
}

func active(id relationship.ID, obj relationship.Object, pol relationship.Polarity, from *time.Time) relationship.Relationship {
	return rel(id, relationship.StatusActive, obj, pol, from, nil)
}

func pending(id relationship.ID, obj relationship.Object, pol relationship.Polarity, from *time.Time) relationship.Relationship {
	return rel(id, relationship.StatusPendingEvidence, obj, pol, from, nil)
}

// prop is a proposal from `from`, confirmed or not.
func prop(obj relationship.Object, pol relationship.Polarity, from *time.Time, confirmed bool) relationship.Proposed {
	return relationship.Proposed{Object: obj, Polarity: pol, Validity: relationship.Interval{From: from}, ValidFromConfirmed: confirmed}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	support := func(target relationship.ID) relationship.Decision {
		return relationship.Decision{Action: relationship.ActionSupport, Target: target}
	}
	promote := func(target relationship.ID, action relationship.Action, priors ...relationship.ID) relationship.Decision {
		return relationship.Decision{Action: relationship.ActionSupport, Target: target, Promote: action, Priors: priors}
	}
	create := relationship.Decision{Action: relationship.ActionCreate}
	supersede := func(priors ...relationship.ID) relationship.Decision {
		return relationship.Decision{Action: relationship.ActionSupersede, Priors: priors}
	}
	hold := func(priors ...relationship.ID) relationship.Decision {
		return relationship.Decision{Action: relationship.ActionHold, Priors: priors}
	}

	tests := []struct {
		name  string
		pred  relationship.Predicate
		prop  relationship.Proposed
		owned []relationship.Relationship
		want  relationship.Decision
	}{
		// 1. Identical active or pending → support.
		{"identical active: support", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, support("rel_1")},
		{"identical active with overlapping validity: support", stateOne, prop(objMain, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan)}, support("rel_1")},
		{"identical value object: support", stateOne, prop(objValue, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objValue, pos, nil)}, support("rel_1")},
		{"identical negative: support", stateOne, prop(objMain, neg, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, neg, nil)}, support("rel_1")},
		{"identical active among incompatible ones: support", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{active("rel_0", objRelease, pos, nil), active("rel_1", objMain, pos, nil)}, support("rel_1")},
		{"two identical actives: oldest ID", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{active("rel_2", objMain, pos, nil), active("rel_1", objMain, pos, nil)}, support("rel_1")},
		{"identical active preferred over pending with an older ID", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{pending("rel_1", objMain, pos, nil), active("rel_2", objMain, pos, nil)}, support("rel_2")},
		{"identical pending, no other active: promote create", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{pending("rel_1", objMain, pos, nil)}, promote("rel_1", relationship.ActionCreate)},
		{"identical pending, compatible active: promote create", stateOne, prop(objMain, pos, mar, false),
			[]relationship.Relationship{pending("rel_1", objMain, pos, mar), rel("rel_2", relationship.StatusActive, objRelease, pos, jan, feb)},
			promote("rel_1", relationship.ActionCreate)},
		{"identical undated pending, incompatible active, confirmed later: the pending row's own validity decides: hold", stateOne,
			prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan), pending("rel_2", objRelease, pos, nil)},
			promote("rel_2", relationship.ActionHold, "rel_1")},
		{"identical pending, incompatible active, confirmed later: promote supersede", stateOne, prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan), pending("rel_2", objRelease, pos, mar)},
			promote("rel_2", relationship.ActionSupersede, "rel_1")},
		{"identical pending, incompatible active, unconfirmed: promote hold", stateOne, prop(objRelease, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan), pending("rel_2", objRelease, pos, nil)},
			promote("rel_2", relationship.ActionHold, "rel_1")},
		{"identical pending, incompatible active, confirmed earlier: promote hold", stateOne, prop(objRelease, pos, jan, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar), pending("rel_2", objRelease, pos, nil)},
			promote("rel_2", relationship.ActionHold, "rel_1")},
		{"identical pending of an event predicate: promote create", eventOne, prop(objMain, pos, mar, false),
			[]relationship.Relationship{pending("rel_1", objMain, pos, mar), active("rel_2", objRelease, pos, jan)},
			promote("rel_1", relationship.ActionCreate)},
		// A held (needs_review) twin: the same question again gains the support; a proposal that would
		// take effect where the held statement would not is placed on its own.
		{"identical needs_review held against an active prior: support, still held", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusNeedsReview, objMain, pos, nil, nil), active("rel_2", objRelease, pos, nil)},
			promote("rel_1", relationship.ActionHold, "rel_2")},
		{"identical needs_review whose prior is gone: support, becomes current", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusNeedsReview, objMain, pos, nil, nil)},
			promote("rel_1", relationship.ActionCreate)},
		{"identical needs_review, its own valid_from confirmed later: support, supersedes", stateOne, prop(objMain, pos, mar, true),
			[]relationship.Relationship{rel("rel_1", relationship.StatusNeedsReview, objMain, pos, mar, nil), active("rel_2", objRelease, pos, jan)},
			promote("rel_1", relationship.ActionSupersede, "rel_2")},
		{"identical undated needs_review, a confirmed later dated restatement: placed on its own, supersedes", stateOne,
			prop(objMain, pos, mar, true),
			[]relationship.Relationship{rel("rel_1", relationship.StatusNeedsReview, objMain, pos, nil, nil), active("rel_2", objRelease, pos, jan)},
			relationship.Decision{Action: relationship.ActionSupersede, Priors: []relationship.ID{"rel_2"}}},
		{"active twin preferred over a held one", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusNeedsReview, objMain, pos, nil, nil), active("rel_2", objMain, pos, nil)},
			support("rel_2")},
		{"pending twin preferred over a held one", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusNeedsReview, objMain, pos, nil, nil), pending("rel_3", objMain, pos, nil),
				active("rel_2", objRelease, pos, nil)},
			promote("rel_3", relationship.ActionHold, "rel_2")},
		{"identical superseded does not receive support", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusSuperseded, objMain, pos, nil, feb)}, create},
		{"identical retracted does not receive support", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusRetracted, objMain, pos, nil, nil)}, create},
		{"identical rejected does not receive support", stateOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusRejected, objMain, pos, nil, nil)}, create},
		{"same object, non-overlapping validity: not identical, coexists", stateOne, prop(objMain, pos, mar, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusActive, objMain, pos, jan, feb)}, create},

		// Event predicates: identical needs the same non-nil valid_from; otherwise coexist.
		{"event: same valid_from: support", eventOne, prop(objMain, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, day("2026-03-01"))}, support("rel_1")},
		{"event: same instant in another zone: support", eventOne, prop(objMain, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, ptr(mar.In(time.FixedZone("X", 7200))))}, support("rel_1")},
		{"event: different valid_from: create", eventOne, prop(objMain, pos, apr, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar)}, create},
		{"event: both valid_from nil: create", eventOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, create},
		{"event: proposal valid_from nil: create", eventOne, prop(objMain, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar)}, create},
		{"event: prior valid_from nil: create", eventOne, prop(objMain, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, create},
		{"event: other object, cardinality one: create", eventOne, prop(objRelease, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar)}, create},
		{"event: opposite polarity: create", eventOne, prop(objMain, neg, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar)}, create},
		{"event many: other object: create", eventMany, prop(objRelease, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar)}, create},

		// 2. Cardinality many coexists.
		{"many: other object: create", stateMany, prop(objRelease, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, create},
		{"many: opposite polarity: create", stateMany, prop(objMain, neg, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, create},
		{"many: identical: support", stateMany, prop(objMain, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, support("rel_1")},

		// 3. No incompatible active → create.
		{"nothing owned: create", stateOne, prop(objMain, pos, nil, false), nil, create},
		{"incompatible pending does not block", stateOne, prop(objRelease, pos, nil, false),
			[]relationship.Relationship{pending("rel_1", objMain, pos, nil)}, create},
		{"incompatible needs_review does not block", stateOne, prop(objRelease, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusNeedsReview, objMain, pos, nil, nil)}, create},
		{"incompatible superseded does not block", stateOne, prop(objRelease, pos, nil, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusSuperseded, objMain, pos, nil, nil)}, create},
		{"different object with negative proposal: compatible", stateOne, prop(objRelease, neg, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, create},
		{"different object with negative prior: compatible", stateOne, prop(objRelease, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, neg, nil)}, create},
		{"non-overlapping validity: compatible", stateOne, prop(objRelease, pos, mar, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusActive, objMain, pos, jan, feb)}, create},
		{"touching validity: compatible", stateOne, prop(objRelease, pos, feb, false),
			[]relationship.Relationship{rel("rel_1", relationship.StatusActive, objMain, pos, jan, feb)}, create},

		// 4. Incompatible active, replacement safely established → supersede.
		{"confirmed later valid_from: supersede", stateOne, prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan)}, supersede("rel_1")},
		{"prior without valid_from counts as earlier: supersede", stateOne, prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, supersede("rel_1")},
		{"all incompatible priors listed, sorted by ID", stateOne, prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_3", objHotfix, pos, feb), active("rel_1", objMain, pos, nil),
				rel("rel_2", relationship.StatusActive, objValue, pos, jan, feb), pending("rel_0", objMain, pos, nil)},
			supersede("rel_1", "rel_3")},
		{"same object opposite polarity, confirmed later: supersede", stateOne, prop(objMain, neg, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan)}, supersede("rel_1")},
		{"value object replaced, confirmed later: supersede", stateOne, prop(relationship.Object{ValueID: "val_43"}, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objValue, pos, jan)}, supersede("rel_1")},

		// 5. Otherwise → hold.
		{"confirmed equal valid_from: hold", stateOne, prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar)}, hold("rel_1")},
		{"confirmed earlier valid_from: hold", stateOne, prop(objRelease, pos, jan, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, mar)}, hold("rel_1")},
		{"unconfirmed later valid_from: hold", stateOne, prop(objRelease, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan)}, hold("rel_1")},
		{"unconfirmed, prior without valid_from: hold", stateOne, prop(objRelease, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, hold("rel_1")},
		{"no valid_from at all: hold", stateOne, prop(objRelease, pos, nil, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, hold("rel_1")},
		{"nil proposal valid_from marked confirmed: hold, no panic", stateOne, prop(objRelease, pos, nil, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, jan)}, hold("rel_1")},
		{"nil proposal valid_from marked confirmed, prior nil: hold", stateOne, prop(objRelease, pos, nil, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil)}, hold("rel_1")},
		{"several priors, one with a later valid_from: hold, all listed", stateOne, prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_2", objHotfix, pos, apr), active("rel_1", objMain, pos, jan)},
			hold("rel_1", "rel_2")},
		{"several priors, one with an equal valid_from: hold", stateOne, prop(objRelease, pos, mar, true),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil), active("rel_2", objHotfix, pos, mar)},
			hold("rel_1", "rel_2")},
		{"same object opposite polarity, unconfirmed: hold", stateOne, prop(objMain, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, neg, jan)}, hold("rel_1")},
		{"hold lists only the incompatible actives", stateOne, prop(objRelease, pos, mar, false),
			[]relationship.Relationship{active("rel_1", objMain, pos, nil), active("rel_2", objHotfix, neg, nil),
				rel("rel_3", relationship.StatusActive, objHotfix, pos, jan, feb), pending("rel_4", objHotfix, pos, nil)},
			hold("rel_1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := append([]relationship.Relationship(nil), tt.owned...)
			got := relationship.Decide(tt.pred, tt.prop, tt.owned)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.owned); diff != "" {
				t.Errorf("Decide changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDecideIsOrderIndependent(t *testing.T) {
	t.Parallel()
	owned := []relationship.Relationship{
		active("rel_3", objHotfix, pos, feb),
		pending("rel_0", objRelease, pos, mar),
		active("rel_1", objMain, pos, nil),
		rel("rel_2", relationship.StatusNeedsReview, objRelease, pos, nil, nil),
	}
	p := prop(objRelease, pos, mar, true)
	want := relationship.Decision{Action: relationship.ActionSupport, Target: "rel_0",
		Promote: relationship.ActionSupersede, Priors: []relationship.ID{"rel_1", "rel_3"}}
	for i := range owned {
		rotated := append(append([]relationship.Relationship(nil), owned[i:]...), owned[:i]...)
		if diff := cmp.Diff(want, relationship.Decide(stateOne, p, rotated)); diff != "" {
			t.Errorf("rotation %d: Decide (-want +got):\n%s", i, diff)
		}
	}
}

func TestIncompatible(t *testing.T) {
	t.Parallel()
	unbounded := relationship.Interval{}
	janFeb := relationship.Interval{From: jan, To: feb}
	febMar := relationship.Interval{From: feb, To: mar}
	fromJan := relationship.Interval{From: jan}
	tests := []struct {
		name       string
		pred       relationship.Predicate
		aObj, bObj relationship.Object
		aPol, bPol relationship.Polarity
		aVal, bVal relationship.Interval
		want       bool
	}{
		{"different objects, both positive", stateOne, objMain, objRelease, pos, pos, unbounded, unbounded, true},
		{"different objects, a negative", stateOne, objMain, objRelease, neg, pos, unbounded, unbounded, false},
		{"different objects, b negative", stateOne, objMain, objRelease, pos, neg, unbounded, unbounded, false},
		{"different objects, both negative", stateOne, objMain, objRelease, neg, neg, unbounded, unbounded, false},
		{"same object, opposite polarity", stateOne, objMain, objMain, pos, neg, unbounded, unbounded, true},
		{"same object, opposite polarity reversed", stateOne, objMain, objMain, neg, pos, unbounded, unbounded, true},
		{"same object, same positive polarity", stateOne, objMain, objMain, pos, pos, unbounded, unbounded, false},
		{"same object, same negative polarity", stateOne, objMain, objMain, neg, neg, unbounded, unbounded, false},
		{"entity and value objects differ", stateOne, objMain, objValue, pos, pos, unbounded, unbounded, true},
		{"overlapping validity", stateOne, objMain, objRelease, pos, pos, fromJan, febMar, true},
		{"touching validity", stateOne, objMain, objRelease, pos, pos, janFeb, febMar, false},
		{"disjoint validity, opposite polarity", stateOne, objMain, objMain, pos, neg, janFeb, relationship.Interval{From: mar}, false},
		{"cardinality many", stateMany, objMain, objRelease, pos, pos, unbounded, unbounded, false},
		{"cardinality many, opposite polarity", stateMany, objMain, objMain, pos, neg, unbounded, unbounded, false},
		{"event predicate", eventOne, objMain, objRelease, pos, pos, unbounded, unbounded, false},
		{"event predicate, opposite polarity", eventOne, objMain, objMain, pos, neg, unbounded, unbounded, false},
	}
	for _, tt := range tests {
		got := relationship.Incompatible(tt.pred, tt.aObj, tt.aPol, tt.aVal, tt.bObj, tt.bPol, tt.bVal)
		if got != tt.want {
			t.Errorf("%s: Incompatible(a, b) = %v, want %v", tt.name, got, tt.want)
		}
		got = relationship.Incompatible(tt.pred, tt.bObj, tt.bPol, tt.bVal, tt.aObj, tt.aPol, tt.aVal)
		if got != tt.want {
			t.Errorf("%s: Incompatible(b, a) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIdentical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pred relationship.Predicate
		r    relationship.Relationship
		prop relationship.Proposed
		want bool
	}{
		{"state, same everything", stateOne, active("r", objMain, pos, nil), prop(objMain, pos, nil, false), true},
		{"state, overlapping validity", stateOne, active("r", objMain, pos, jan), prop(objMain, pos, mar, true), true},
		{"state, disjoint validity", stateOne, rel("r", relationship.StatusActive, objMain, pos, jan, feb), prop(objMain, pos, mar, false), false},
		{"state, other object", stateOne, active("r", objMain, pos, nil), prop(objRelease, pos, nil, false), false},
		{"state, other polarity", stateOne, active("r", objMain, pos, nil), prop(objMain, neg, nil, false), false},
		{"event, same valid_from", eventOne, active("r", objMain, pos, mar), prop(objMain, pos, day("2026-03-01"), false), true},
		{"event, other valid_from", eventOne, active("r", objMain, pos, mar), prop(objMain, pos, apr, false), false},
		{"event, both nil", eventOne, active("r", objMain, pos, nil), prop(objMain, pos, nil, false), false},
		{"event, relationship nil", eventOne, active("r", objMain, pos, nil), prop(objMain, pos, mar, false), false},
		{"event, proposal nil", eventOne, active("r", objMain, pos, mar), prop(objMain, pos, nil, false), false},
	}
	for _, tt := range tests {
		if got := relationship.Identical(tt.pred, tt.r, tt.prop); got != tt.want {
			t.Errorf("%s: Identical = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

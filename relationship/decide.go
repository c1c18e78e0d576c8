package relationship

import "slices"

// Proposed is an accepted observation of the caller, about to be placed against the caller's own
// relationships of the same subject, predicate and scope.
type Proposed struct {
	Object   Object
	Polarity Polarity
	Validity Interval
	// ValidFromConfirmed is true when the verifier confirmed Validity.From in the cited text.
	ValidFromConfirmed bool
	// Corrects names the owner's relationship this proposal explicitly corrects; when it is the one
	// incompatible prior, the proposal supersedes it even without a later confirmed valid_from.
	Corrects ID
}

// Action is what an accepted observation does to the owner's current state.
type Action string

// Actions of the current-state decision.
const (
	// ActionSupport adds support to an identical active, pending or held relationship; no new row.
	ActionSupport Action = "support"
	// ActionCreate creates a new active relationship that coexists with the owner's others.
	ActionCreate Action = "create"
	// ActionSupersede creates a new active relationship and supersedes the incompatible priors.
	ActionSupersede Action = "supersede"
	// ActionHold stores the new relationship as needs_review; the priors stay current.
	ActionHold Action = "hold"
)

// Decision is the deterministic outcome of the same-owner current-state rules.
type Decision struct {
	Action Action
	// Target is the identical relationship that gains support (ActionSupport).
	Target ID
	// Promote applies to ActionSupport of a pending_evidence or needs_review target: what the newly
	// supported target does (ActionCreate: becomes active; ActionSupersede; ActionHold: is held).
	Promote Action
	// Priors are the owner's incompatible active relationships (ActionSupersede, ActionHold).
	Priors []ID
}

// Identical reports whether r states the same thing as the proposal: same object and polarity, and for
// state predicates overlapping validity, for event predicates the same non-null valid_from.
func Identical(p Predicate, r Relationship, prop Proposed) bool {
	if r.Object != prop.Object || r.Polarity != prop.Polarity {
		return false
	}
	if p.Kind == KindEvent {
		return r.Validity.From != nil && prop.Validity.From != nil && r.Validity.From.Equal(*prop.Validity.From)
	}
	return r.Validity.Overlaps(prop.Validity)
}

// Incompatible reports whether two statements of one subject, predicate and scope cannot both be
// current: cardinality one, comparable in time, and a different object with both polarities "+", or
// the same object with opposite polarities.
func Incompatible(p Predicate, aObj Object, aPol Polarity, aVal Interval, bObj Object, bPol Polarity, bVal Interval) bool {
	if p.Kind == KindEvent || p.Cardinality != CardinalityOne || !aVal.Overlaps(bVal) {
		return false
	}
	if aObj != bObj {
		return aPol == PolarityPositive && bPol == PolarityPositive
	}
	return aPol != bPol
}

// Decide applies the same-owner current-state rules to an accepted proposal. owned holds the owner's
// relationships with the same subject, predicate and scope, in any status. An identical relationship
// gains the proposal as support, preferring an active one, then a pending one, then a held one (the
// oldest ID first): a pending or held target is re-planned on its own terms (Promote, Priors). A
// held target gains it only when neither would take effect (both would be held: it is the same
// question again) or when the target itself now would; otherwise the proposal is placed on its own
// and the held statement, identical to what became current, is settled by the caller.
func Decide(p Predicate, prop Proposed, owned []Relationship) Decision {
	owned = slices.Clone(owned)
	rank := func(s Status) int {
		switch s {
		case StatusActive:
			return 0
		case StatusPendingEvidence:
			return 1
		}
		return 2
	}
	slices.SortFunc(owned, func(a, b Relationship) int {
		if ra, rb := rank(a.Status), rank(b.Status); ra != rb {
			return ra - rb
		}
		return compareIDs(a.ID, b.ID)
	})
	for _, r := range owned {
		if !Identical(p, r, prop) {
			continue
		}
		switch r.Status {
		case StatusActive:
			return Decision{Action: ActionSupport, Target: r.ID}
		case StatusPendingEvidence, StatusNeedsReview:
			// The target is re-planned on its own state: its own validity, confirmed only when the new
			// evidence confirmed exactly its valid_from.
			self := Proposed{Object: r.Object, Polarity: r.Polarity, Validity: r.Validity,
				ValidFromConfirmed: prop.ValidFromConfirmed && r.Validity.From != nil && prop.Validity.From != nil &&
					r.Validity.From.Equal(*prop.Validity.From)}
			others := slices.DeleteFunc(slices.Clone(owned), func(o Relationship) bool { return o.ID == r.ID })
			next := place(p, self, others)
			if r.Status == StatusNeedsReview && next.Action == ActionHold && place(p, prop, others).Action != ActionHold {
				continue
			}
			return Decision{Action: ActionSupport, Target: r.ID, Promote: next.Action, Priors: next.Priors}
		}
	}
	return place(p, prop, owned)
}

// place decides a new (or newly supported) relationship that has no identical current twin.
func place(p Predicate, prop Proposed, owned []Relationship) Decision {
	if p.Kind == KindEvent || p.Cardinality == CardinalityMany {
		return Decision{Action: ActionCreate}
	}
	var priors []Relationship
	for _, r := range owned {
		if r.Status == StatusActive && Incompatible(p, r.Object, r.Polarity, r.Validity, prop.Object, prop.Polarity, prop.Validity) {
			priors = append(priors, r)
		}
	}
	if len(priors) == 0 {
		return Decision{Action: ActionCreate}
	}
	ids := make([]ID, len(priors))
	replaces := prop.ValidFromConfirmed && prop.Validity.From != nil
	for i, r := range priors {
		ids[i] = r.ID
		if replaces && r.Validity.From != nil && !prop.Validity.From.After(*r.Validity.From) {
			replaces = false
		}
	}
	if replaces || (prop.Corrects != "" && len(ids) == 1 && ids[0] == prop.Corrects) {
		return Decision{Action: ActionSupersede, Priors: ids}
	}
	return Decision{Action: ActionHold, Priors: ids}
}

func compareIDs(a, b ID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

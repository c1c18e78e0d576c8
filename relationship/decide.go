package relationship

import (
	"slices"
	"time"
)

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

// ComparesByObject reports whether a statement of p is compared only with statements of the same
// object: so for an event or a predicate of cardinality many, where nothing is Incompatible, and
// Identical, CrossReference and CorrectsIdentity look at one object. A decision on such a key needs
// the key's relationships about the statement's object, not the others.
func (p Predicate) ComparesByObject() bool {
	return p.Kind == KindEvent || p.Cardinality != CardinalityOne
}

// Statement is what Incompatible compares of one relationship: its object, polarity and validity.
type Statement struct {
	Object   Object
	Polarity Polarity
	Validity Interval
}

// Contradicted reports, for each of the statements of one key, whether another of them is
// Incompatible with it. It answers what comparing every pair would, in O(n log n): a key whose
// predicate allows several current values (cardinality many, or an event) has none; otherwise a
// positive statement is contradicted by an overlapping positive one about another object, and any
// statement by an overlapping one about its object with the other polarity, so each is one question
// of overlap across groups (overlapsAcross).
func Contradicted(p Predicate, stmts []Statement) []bool {
	out := make([]bool, len(stmts))
	if p.ComparesByObject() {
		return out
	}
	var positive []int
	byObject := map[Object][]int{}
	for i, s := range stmts {
		if s.Polarity == PolarityPositive {
			positive = append(positive, i)
		}
		byObject[s.Object] = append(byObject[s.Object], i)
	}
	overlapsAcross(stmts, positive, func(s Statement) Object { return s.Object }, out)
	for _, idx := range byObject {
		overlapsAcross(stmts, idx, func(s Statement) Polarity { return s.Polarity }, out)
	}
	return out
}

// overlapsAcross sets out[i] for each statement i among idx whose validity overlaps (Interval.
// Overlaps) that of a statement among idx in another group. Sorted by valid_from, the statements
// that may overlap i are a prefix (those starting before i ends); i overlaps one of them in another
// group when the latest end among them, other than its own group's, is after i's start, so a
// running maximum of the two latest ends of distinct groups answers each statement in O(log n).
func overlapsAcross[K comparable](stmts []Statement, idx []int, group func(Statement) K, out []bool) {
	if len(idx) < 2 {
		return
	}
	idx = slices.Clone(idx)
	slices.SortFunc(idx, func(a, b int) int { return compareFrom(stmts[a].Validity.From, stmts[b].Validity.From) })
	type running struct {
		best, second    *time.Time // latest ends (nil: until further notice); second of another group than best
		bestGroup       K
		hasBest, hasSnd bool
	}
	prefix := make([]running, len(idx))
	var r running
	for k, i := range idx {
		end, g := stmts[i].Validity.To, group(stmts[i])
		switch {
		case !r.hasBest:
			r.best, r.bestGroup, r.hasBest = end, g, true
		case g == r.bestGroup:
			r.best = laterEnd(r.best, end)
		case laterEnd(r.best, end) == end: // end is the latest, of another group
			r.second, r.hasSnd = r.best, true
			r.best, r.bestGroup = end, g
		case !r.hasSnd:
			r.second, r.hasSnd = end, true
		default:
			r.second = laterEnd(r.second, end)
		}
		prefix[k] = r
	}
	for _, i := range idx {
		s := stmts[i]
		n, _ := slices.BinarySearchFunc(idx, s.Validity.To, func(j int, to *time.Time) int {
			if before(stmts[j].Validity.From, to) {
				return -1
			}
			return 1
		})
		if n == 0 {
			continue
		}
		p := prefix[n-1]
		end, ok := p.best, true
		if p.bestGroup == group(s) {
			end, ok = p.second, p.hasSnd
		}
		if ok && before(s.Validity.From, end) {
			out[i] = true
		}
	}
}

// compareFrom orders valid_from values, nil (since always) first.
func compareFrom(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Compare(*b)
}

// laterEnd returns the later of two valid_to values, nil (until further notice) being the latest.
func laterEnd(a, b *time.Time) *time.Time {
	if a == nil || b == nil {
		return nil
	}
	if b.After(*a) {
		return b
	}
	return a
}

// Package relationship owns the relationship lifecycle: statuses, tiers, predicates, validity
// intervals, the deterministic same-owner current-state decision, and tier computation from effective
// support. It is pure: no SQL, no clock reads, no I/O.
package relationship

import (
	"strings"
	"time"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
)

// ID identifies a relationship.
type ID string

// Status is a relationship's current lifecycle status.
type Status string

// Statuses. Only StatusActive is an edge of current knowledge.
const (
	StatusPendingEvidence Status = "pending_evidence"
	StatusActive          Status = "active"
	StatusNeedsReview     Status = "needs_review"
	StatusSuperseded      Status = "superseded"
	StatusRetracted       Status = "retracted"
	StatusRejected        Status = "rejected"
)

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusPendingEvidence, StatusActive, StatusNeedsReview, StatusSuperseded, StatusRetracted, StatusRejected:
		return true
	}
	return false
}

// Live reports whether s is a status of a relationship that can still change a decision or a case:
// active, pending_evidence or needs_review. The others (superseded, retracted, rejected) are closed
// for good.
func (s Status) Live() bool {
	return s == StatusActive || s == StatusPendingEvidence || s == StatusNeedsReview
}

// Statuses returns every status.
func Statuses() []Status {
	return []Status{StatusPendingEvidence, StatusActive, StatusNeedsReview, StatusSuperseded, StatusRetracted, StatusRejected}
}

// Tier is how well supported a relationship is. Clients never set it.
type Tier string

// Tiers, weakest first.
const (
	TierCandidate      Tier = "candidate"
	TierValidatedClaim Tier = "validated_claim"
	TierFact           Tier = "fact"
)

// Valid reports whether t is a known tier.
func (t Tier) Valid() bool { return t == TierCandidate || t == TierValidatedClaim || t == TierFact }

// Polarity says whether a relationship asserts (+) or denies (-) its statement.
type Polarity string

// Polarities.
const (
	PolarityPositive Polarity = "+"
	PolarityNegative Polarity = "-"
)

// Valid reports whether p is a known polarity.
func (p Polarity) Valid() bool { return p == PolarityPositive || p == PolarityNegative }

// Polarities returns every polarity.
func Polarities() []Polarity { return []Polarity{PolarityPositive, PolarityNegative} }

// Modality is how the source stated an observation. Only statements become relationships.
type Modality string

// Modalities.
const (
	ModalityStatement    Modality = "statement"
	ModalityHypothetical Modality = "hypothetical"
	ModalityQuestion     Modality = "question"
	ModalityPlan         Modality = "plan"
	ModalityQuote        Modality = "quote"
)

// Valid reports whether m is a known modality.
func (m Modality) Valid() bool {
	switch m {
	case ModalityStatement, ModalityHypothetical, ModalityQuestion, ModalityPlan, ModalityQuote:
		return true
	}
	return false
}

// Modalities returns every modality.
func Modalities() []Modality {
	return []Modality{ModalityStatement, ModalityHypothetical, ModalityQuestion, ModalityPlan, ModalityQuote}
}

// Kind is a predicate's relationship kind.
type Kind string

// Relationship kinds.
const (
	KindState Kind = "state"
	KindEvent Kind = "event"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == KindState || k == KindEvent }

// Kinds returns every relationship kind.
func Kinds() []Kind { return []Kind{KindState, KindEvent} }

// Cardinality is how many current values one subject may hold for a predicate.
type Cardinality string

// Cardinalities.
const (
	CardinalityOne  Cardinality = "one"
	CardinalityMany Cardinality = "many"
)

// Valid reports whether c is a known cardinality.
func (c Cardinality) Valid() bool { return c == CardinalityOne || c == CardinalityMany }

// Cardinalities returns every cardinality.
func Cardinalities() []Cardinality { return []Cardinality{CardinalityOne, CardinalityMany} }

// Predicate is one registered, immutable predicate version.
type Predicate struct {
	Key          string
	Version      int
	Kind         Kind
	Cardinality  Cardinality
	Aliases      []string
	SubjectKinds []string
	ObjectKinds  []string
	// ValueObject is true when the predicate's object is a literal value rather than an entity.
	ValueObject bool
	Description string
}

// NormalizePhrase folds a predicate phrase for matching: trimmed, lower case, spaces and hyphens to "_".
func NormalizePhrase(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.Join(strings.Fields(s), "_")
	return strings.ReplaceAll(s, "-", "_")
}

// MatchPredicate finds the predicate whose key or alias equals the normalised phrase. Preds holds the
// latest version of each registered key.
func MatchPredicate(phrase string, preds []Predicate) (Predicate, bool) {
	want := NormalizePhrase(phrase)
	for _, p := range preds {
		if p.Key == want {
			return p, true
		}
	}
	for _, p := range preds {
		for _, a := range p.Aliases {
			if NormalizePhrase(a) == want {
				return p, true
			}
		}
	}
	return Predicate{}, false
}

// AllowsSubject reports whether the predicate accepts a subject of the given entity kind.
func (p Predicate) AllowsSubject(kind string) bool {
	return len(p.SubjectKinds) == 0 || contains(p.SubjectKinds, kind)
}

// AllowsObject reports whether the predicate accepts an entity object of the given kind
// (entityKind != "") or a value object (entityKind == "").
func (p Predicate) AllowsObject(entityKind string) bool {
	if entityKind == "" {
		return p.ValueObject
	}
	return !p.ValueObject && (len(p.ObjectKinds) == 0 || contains(p.ObjectKinds, entityKind))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// NormalizeScope folds a scope: trimmed, lower case. Unscoped is "".
func NormalizeScope(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Object is a relationship's object: an entity or a literal value, never both.
type Object struct {
	EntityID identity.EntityID `json:"entity_id,omitempty"`
	ValueID  string            `json:"value_id,omitempty"`
}

// Interval is a validity interval [From, To); nil From means since always, nil To until further notice.
type Interval struct {
	From, To *time.Time
}

// Overlaps reports whether two intervals share an instant ("comparable in time").
func (a Interval) Overlaps(b Interval) bool {
	return before(a.From, b.To) && before(b.From, a.To)
}

// Contains reports whether t lies in [From, To).
func (a Interval) Contains(t time.Time) bool {
	return (a.From == nil || !t.Before(*a.From)) && (a.To == nil || t.Before(*a.To))
}

// before reports from < to where a nil from is -inf and a nil to is +inf.
func before(from, to *time.Time) bool {
	return from == nil || to == nil || from.Before(*to)
}

// Relationship is the current state of one authored relationship as the lifecycle rules see it.
type Relationship struct {
	ID               ID
	Owner            identity.ProfileID
	Subject          identity.EntityID
	PredicateKey     string
	PredicateVersion int
	Object           Object
	Polarity         Polarity
	Scope            string
	Validity         Interval
	Status           Status
	Tier             Tier
	Version          int
}

// CurrentAt reports whether r, in the state recorded at instant t, is current at t: active, and true
// in the world at t (its validity contains t). A superseded relationship is never current, even while
// its validity still contains t (a dated correction may start later), and an active one whose
// validity starts after t is not current yet.
func (r Relationship) CurrentAt(t time.Time) bool {
	return r.Status == StatusActive && r.Validity.Contains(t)
}

// TrueAt reports whether r, in its recorded state, held in the world at t: active or superseded (a
// superseded relationship stays true for its past interval) and its validity contains t. These are
// the relationships a valid_at recall returns (DESIGN §11).
func (r Relationship) TrueAt(t time.Time) bool {
	return (r.Status == StatusActive || r.Status == StatusSuperseded) && r.Validity.Contains(t)
}

// TierFor computes a tier from supports: no effective support is candidate; allowed authority or two
// independent source groups is fact; otherwise validated_claim.
func TierFor(supports []evidence.Support) Tier {
	groups, authority := evidence.CountGroups(supports)
	switch {
	case groups == 0:
		return TierCandidate
	case authority || groups >= 2:
		return TierFact
	}
	return TierValidatedClaim
}

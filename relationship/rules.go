package relationship

import "time"

// CloseAt is the valid_to of relationship r when it is closed at end, by a supersession (end is the
// successor's valid_from, or the correction's time) or by a conflict resolution (end is the cutoff):
// end, or r's own valid_from when r started after end (an empty interval: it was never true), and
// never later than a valid_to r already had.
func CloseAt(end time.Time, r Relationship) time.Time {
	if r.Validity.From != nil && r.Validity.From.After(end) {
		end = *r.Validity.From
	}
	if r.Validity.To != nil && r.Validity.To.Before(end) {
		end = *r.Validity.To
	}
	return end
}

// CrossReferenceKind is the kind of an append-only link from one owner's relationship to another
// owner's (DESIGN §6.5, §13).
type CrossReferenceKind string

// Cross-reference kinds.
const (
	CrossReferenceCorrects           CrossReferenceKind = "corrects"
	CrossReferenceChallenges         CrossReferenceKind = "challenges"
	CrossReferenceConfirms           CrossReferenceKind = "confirms"
	CrossReferenceAdoptsEvidenceFrom CrossReferenceKind = "adopts_evidence_from"
)

// Valid reports whether k is a known cross-reference kind.
func (k CrossReferenceKind) Valid() bool {
	switch k {
	case CrossReferenceCorrects, CrossReferenceChallenges, CrossReferenceConfirms, CrossReferenceAdoptsEvidenceFrom:
		return true
	}
	return false
}

// CorrectsIdentity reports whether mine, a caller's active relationship on an entity its evidence
// shows is not other's subject, corrects other, another owner's active relationship (DESIGN §6.5,
// the identity-correction path): the same predicate, scope, object and polarity, with overlapping
// validity — the statement other attributes to the combined identity.
func CorrectsIdentity(mine, other Relationship) bool {
	return mine.PredicateKey == other.PredicateKey && mine.Scope == other.Scope && mine.Object == other.Object &&
		mine.Polarity == other.Polarity && mine.Validity.Overlaps(other.Validity)
}

// CrossReference decides the link from mine, a caller's relationship that just became active, to
// other, another owner's active relationship of the same conflict key (DESIGN §6.5): incompatible
// ones are corrected when mine's valid_from is verifier-confirmed (fromConfirmed) and later than
// other's (a missing one counts as earlier), or when the caller named other in
// corrects_relationship_id (corrects), and challenged otherwise; identical ones with overlapping
// validity are confirmed; anything else gets no link (ok false).
func CrossReference(p Predicate, mine Relationship, fromConfirmed bool, corrects ID, other Relationship) (kind CrossReferenceKind, ok bool) {
	switch {
	case Incompatible(p, mine.Object, mine.Polarity, mine.Validity, other.Object, other.Polarity, other.Validity):
		if other.ID == corrects || (fromConfirmed && mine.Validity.From != nil &&
			(other.Validity.From == nil || mine.Validity.From.After(*other.Validity.From))) {
			return CrossReferenceCorrects, true
		}
		return CrossReferenceChallenges, true
	case mine.Object == other.Object && mine.Polarity == other.Polarity && mine.Validity.Overlaps(other.Validity):
		return CrossReferenceConfirms, true
	}
	return "", false
}

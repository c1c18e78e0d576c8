package relationship_test

import (
	"testing"
	"time"

	"github.com/densemem/densemem/relationship"
)

func TestCloseAt(t *testing.T) {
	t.Parallel()
	early, end, later, latest := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		from, to *time.Time
		want     time.Time
	}{
		{"since always: ends at end", nil, nil, end},
		{"started before: ends at end", &early, nil, end},
		{"started at end: empty interval at end", &end, nil, end},
		{"started after end: empty interval at its own valid_from", &later, nil, later},
		{"already ended before end: keeps its valid_to", &early, &later, end},
		{"already ended earlier than end: never later than it was", nil, &early, early},
		{"started after and ended: its own valid_to at most", &later, &latest, later},
	}
	for _, tt := range tests {
		r := relationship.Relationship{Validity: relationship.Interval{From: tt.from, To: tt.to}}
		if got := relationship.CloseAt(end, r); !got.Equal(tt.want) {
			t.Errorf("%s: CloseAt = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCrossReference(t *testing.T) {
	t.Parallel()
	one := relationship.Predicate{Key: "deploys_from", Kind: relationship.KindState, Cardinality: relationship.CardinalityOne}
	many := relationship.Predicate{Key: "works_on", Kind: relationship.KindState, Cardinality: relationship.CardinalityMany}
	jan, may := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	main, release := relationship.Object{EntityID: "ent_main"}, relationship.Object{EntityID: "ent_release"}
	rel := func(id relationship.ID, obj relationship.Object, from *time.Time) relationship.Relationship {
		return relationship.Relationship{ID: id, Object: obj, Polarity: relationship.PolarityPositive,
			Validity: relationship.Interval{From: from}}
	}
	tests := []struct {
		name      string
		p         relationship.Predicate
		mine      relationship.Relationship
		confirmed bool
		corrects  relationship.ID
		other     relationship.Relationship
		want      relationship.CrossReferenceKind
		ok        bool
	}{
		{"later confirmed valid_from corrects", one, rel("m", release, &may), true, "", rel("o", main, &jan), relationship.CrossReferenceCorrects, true},
		{"a missing other valid_from counts as earlier", one, rel("m", release, &may), true, "", rel("o", main, nil), relationship.CrossReferenceCorrects, true},
		{"unconfirmed valid_from challenges", one, rel("m", release, &may), false, "", rel("o", main, &jan), relationship.CrossReferenceChallenges, true},
		{"earlier valid_from challenges", one, rel("m", release, &jan), true, "", rel("o", main, &may), relationship.CrossReferenceChallenges, true},
		{"named in corrects_relationship_id corrects", one, rel("m", release, nil), false, "o", rel("o", main, nil), relationship.CrossReferenceCorrects, true},
		{"identical confirms", one, rel("m", main, nil), false, "", rel("o", main, nil), relationship.CrossReferenceConfirms, true},
		{"cardinality many: different objects coexist, no link", many, rel("m", release, nil), true, "", rel("o", main, nil), "", false},
	}
	for _, tt := range tests {
		got, ok := relationship.CrossReference(tt.p, tt.mine, tt.confirmed, tt.corrects, tt.other)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

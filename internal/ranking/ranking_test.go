package ranking

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/relationship"
)

func TestFuse(t *testing.T) {
	got := Fuse([]relationship.ID{"a", "b"}, []relationship.ID{"b", "c"}, nil)
	r1, r2 := 1/float64(K+1), 1/float64(K+2)
	// b is summed in branch order, as floating point adds it.
	want := map[relationship.ID]float64{"a": r1, "b": r2 + r1, "c": r2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Fuse (-want +got):\n%s", diff)
	}
}

func TestRank(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := t0.Add(time.Hour)
	tests := []struct {
		name  string
		cands []Candidate
		limit int
		want  []relationship.ID
	}{
		{"higher fused score first",
			[]Candidate{{ID: "a", Fused: 0.01}, {ID: "b", Fused: 0.02}}, 10, []relationship.ID{"b", "a"}},
		{"a fact outranks an equal claim",
			[]Candidate{{ID: "a", Fused: 0.02}, {ID: "b", Fused: 0.02, Fact: true}}, 10, []relationship.ID{"b", "a"}},
		{"authority boosts less than fact",
			[]Candidate{{ID: "a", Fused: 0.02, Authority: true}, {ID: "b", Fused: 0.02, Fact: true}}, 10,
			[]relationship.ID{"b", "a"}},
		{"fact and authority add up",
			[]Candidate{{ID: "a", Fused: 0.02, Fact: true}, {ID: "b", Fused: 0.02, Fact: true, Authority: true}}, 10,
			[]relationship.ID{"b", "a"}},
		{"ties by earlier creation",
			[]Candidate{{ID: "a", Fused: 0.02, CreatedAt: later}, {ID: "b", Fused: 0.02, CreatedAt: t0}}, 10,
			[]relationship.ID{"b", "a"}},
		{"then by ID",
			[]Candidate{{ID: "b", Fused: 0.02, CreatedAt: t0}, {ID: "a", Fused: 0.02, CreatedAt: t0}}, 10,
			[]relationship.ID{"a", "b"}},
		{"cut at the limit",
			[]Candidate{{ID: "a", Fused: 0.03}, {ID: "b", Fused: 0.02}, {ID: "c", Fused: 0.01}}, 2,
			[]relationship.ID{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []relationship.ID
			for _, r := range Rank(tt.cands, tt.limit) {
				got = append(got, r.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScore(t *testing.T) {
	c := Candidate{Fused: 0.5, Fact: true, Authority: true}
	boost := 1.0
	boost += FactBoost
	boost += AuthorityBoost
	if got, want := Score(c), 0.5*boost; got != want {
		t.Errorf("Score = %v, want %v", got, want)
	}
}

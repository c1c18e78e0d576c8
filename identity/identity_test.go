package identity_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/identity"
)

func TestNormalizeName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"already normal", "mark huang", "mark huang"},
		{"upper case", "MARK Huang", "mark huang"},
		{"leading and trailing space", "  Mark Huang \t", "mark huang"},
		{"inner runs collapse", "Mark \t\n  Huang", "mark huang"},
		{"no-break space", "Mark\u00a0Huang", "mark huang"},
		{"em space and ideographic space", "\u3000Mark\u2003\u2003Huang\u3000", "mark huang"},
		{"non-ASCII letters fold", "ZÜRICH Office", "zürich office"},
		{"hyphen is not white space", "Dense-Mem", "dense-mem"},
		{"only white space", " \t\u00a0 ", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, identity.NormalizeName(tt.in)); diff != "" {
				t.Errorf("NormalizeName(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestNormalizeContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{"nil", nil, map[string]string{}},
		{
			"keys and values folded",
			map[string]string{" Repository ": "Dense  Mem", "SYSTEM": "Billing\u00a0API"},
			map[string]string{"repository": "dense mem", "system": "billing api"},
		},
		{
			"empty keys and values dropped",
			map[string]string{"": "x", "team": "  ", "repo": "a"},
			map[string]string{"repo": "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, identity.NormalizeContext(tt.in)); diff != "" {
				t.Errorf("NormalizeContext(%v) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestNormalizeContextDeterministic: keys that fold to the same key ("Repo" and "repo") must not make
// the result, and with it identity resolution, depend on map iteration order.
func TestNormalizeContextDeterministic(t *testing.T) {
	t.Parallel()
	in := map[string]string{"Repo": "Dense-Mem", "repo": "Billing", " REPO ": "Payroll"}
	first := identity.NormalizeContext(in)
	for range 200 {
		if diff := cmp.Diff(first, identity.NormalizeContext(in)); diff != "" {
			t.Fatalf("NormalizeContext(%v) is not deterministic (-first +later):\n%s", in, diff)
		}
	}
}

func TestContextsAgree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b map[string]string
		want bool
	}{
		{"both empty", nil, nil, true},
		{"one empty", map[string]string{"repo": "a"}, nil, true},
		{"same", map[string]string{"repo": "a"}, map[string]string{"repo": "a"}, true},
		{"disjoint keys", map[string]string{"repo": "a"}, map[string]string{"team": "x"}, true},
		{"partial overlap agreeing", map[string]string{"repo": "a", "team": "x"}, map[string]string{"repo": "a"}, true},
		{"contradicting", map[string]string{"repo": "a"}, map[string]string{"repo": "b"}, false},
		{"one contradiction among agreements", map[string]string{"repo": "a", "team": "x"}, map[string]string{"repo": "a", "team": "y"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := identity.ContextsAgree(tt.a, tt.b); got != tt.want {
				t.Errorf("ContextsAgree(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := identity.ContextsAgree(tt.b, tt.a); got != tt.want {
				t.Errorf("ContextsAgree(%v, %v) (swapped) = %v, want %v", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

// entity builds an entity whose names are stored normalised, as the store keeps them.
func entity(id identity.EntityID, kind string, ctx map[string]string, canonical string, aliases ...string) identity.Entity {
	e := identity.Entity{ID: id, Kind: kind, Context: ctx,
		Names: []identity.Name{{Name: canonical, Normalized: identity.NormalizeName(canonical), Kind: identity.NameCanonical}}}
	for _, a := range aliases {
		e.Names = append(e.Names, identity.Name{Name: a, Normalized: identity.NormalizeName(a), Kind: identity.NameAlias})
	}
	return e
}

func withCreator(e identity.Entity, by identity.ProfileID) identity.Entity {
	e.CreatedBy = by
	return e
}

func TestResolve(t *testing.T) {
	t.Parallel()
	mark := identity.Mention{Ref: "mark", Name: "  MARK   Huang ", Kind: "person"}
	markDense := entity("ent_mark_dense", "person", map[string]string{"project": "Dense-Mem"}, "Mark Huang")
	markBilling := entity("ent_mark_billing", "person", map[string]string{"project": "Billing"}, "Mark Huang")
	markAlias := entity("ent_mark_alias", "person", nil, "Marcus Huang", "Mark Huang")
	markProject := entity("ent_mark_project", "project", nil, "Mark Huang")
	other := entity("ent_other", "person", nil, "Someone Else")

	var many []identity.Entity
	var firstTwenty []identity.EntityID
	for i := 25; i >= 1; i-- { // reverse order: the result must be sorted anyway
		id := identity.EntityID(fmt.Sprintf("ent_%02d", i))
		many = append(many, entity(id, "person", nil, "Mark Huang"))
	}
	for i := 1; i <= identity.MaxCandidates; i++ {
		firstTwenty = append(firstTwenty, identity.EntityID(fmt.Sprintf("ent_%02d", i)))
	}

	tests := []struct {
		name    string
		mention identity.Mention
		known   []identity.Entity
		want    identity.Resolution
	}{
		{
			name:    "no entities: created",
			mention: mark,
			want:    identity.Resolution{Decision: identity.DecisionCreated},
		},
		{
			name: "distinct from one of two: the other is reused",
			mention: identity.Mention{Ref: "mark", Name: "Mark Huang", Kind: "person",
				DistinctFrom: []identity.EntityID{"ent_mark_billing"}},
			known: []identity.Entity{markDense, markBilling},
			want:  identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name: "distinct from every candidate: created",
			mention: identity.Mention{Ref: "mark", Name: "Mark Huang", Kind: "person",
				DistinctFrom: []identity.EntityID{"ent_mark_billing", "ent_mark_dense"}},
			known: []identity.Entity{markDense, markBilling},
			want:  identity.Resolution{Decision: identity.DecisionCreated},
		},
		{
			name:    "no name match: created",
			mention: mark,
			known:   []identity.Entity{other},
			want:    identity.Resolution{Decision: identity.DecisionCreated},
		},
		{
			name:    "one candidate by canonical name: reused",
			mention: mark,
			known:   []identity.Entity{other, markDense},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name:    "one candidate by alias: reused",
			mention: mark,
			known:   []identity.Entity{markAlias, other},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_alias"},
		},
		{
			name:    "two candidates: ambiguous, sorted",
			mention: mark,
			known:   []identity.Entity{markDense, markBilling},
			want: identity.Resolution{Decision: identity.DecisionAmbiguous,
				Candidates: []identity.EntityID{"ent_mark_billing", "ent_mark_dense"}},
		},
		{
			name:    "more than MaxCandidates: truncated to the first 20 sorted",
			mention: mark,
			known:   many,
			want:    identity.Resolution{Decision: identity.DecisionAmbiguous, Candidates: firstTwenty, Truncated: true},
		},
		{
			name:    "exactly MaxCandidates: not truncated",
			mention: mark,
			known:   many[len(many)-identity.MaxCandidates:],
			want:    identity.Resolution{Decision: identity.DecisionAmbiguous, Candidates: firstTwenty},
		},
		{
			name:    "same name different kind never merges",
			mention: mark,
			known:   []identity.Entity{markProject},
			want:    identity.Resolution{Decision: identity.DecisionCreated},
		},
		{
			name:    "same name different kind is not a second candidate",
			mention: mark,
			known:   []identity.Entity{markProject, markDense},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name:    "contradicting identity context excluded",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{"project": "Billing"}},
			known:   []identity.Entity{markDense, markBilling},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_billing"},
		},
		{
			name:    "context compared after normalisation",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{" PROJECT ": "dense-mem"}},
			known:   []identity.Entity{markDense, markBilling},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name:    "only contradicting contexts: created",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{"project": "Payroll"}},
			known:   []identity.Entity{markDense, markBilling},
			want:    identity.Resolution{Decision: identity.DecisionCreated},
		},
		{
			name:    "agreeing and partial contexts included",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{"project": "Dense-Mem", "team": "core"}},
			known:   []identity.Entity{markDense, markBilling, markAlias},
			want: identity.Resolution{Decision: identity.DecisionAmbiguous,
				Candidates: []identity.EntityID{"ent_mark_alias", "ent_mark_dense"}},
		},
		{
			name:    "several candidates, one states every discriminator: reused",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{"project": "Dense-Mem"}},
			known:   []identity.Entity{markAlias, markDense},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name: "a narrower mention of another profile's broader entity: ambiguous, broader",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{"team": "billing"},
				By: "prof_b"},
			known: []identity.Entity{withCreator(entity("ent_mark", "person", nil, "Mark Huang"), "prof_a")},
			want: identity.Resolution{Decision: identity.DecisionAmbiguous, Candidates: []identity.EntityID{"ent_mark"},
				Broader: true},
		},
		{
			name: "a narrower mention of the caller's own broader entity: reused",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{"team": "billing"},
				By: "prof_a"},
			known: []identity.Entity{withCreator(entity("ent_mark", "person", nil, "Mark Huang"), "prof_a")},
			want:  identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark"},
		},
		{
			name:    "a mention as broad as another profile's entity: reused",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", Context: map[string]string{"project": "dense-mem"}, By: "prof_b"},
			known:   []identity.Entity{withCreator(markDense, "prof_a")},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name:    "a context-less mention of another profile's entity: reused",
			mention: identity.Mention{Name: "Mark Huang", Kind: "person", By: "prof_b"},
			known:   []identity.Entity{withCreator(markDense, "prof_a")},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name:    "duplicates in the input counted once",
			mention: mark,
			known:   []identity.Entity{markDense, markDense, markDense},
			want:    identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_mark_dense"},
		},
		{
			name:    "duplicates among several candidates listed once",
			mention: mark,
			known:   []identity.Entity{markDense, markBilling, markDense},
			want: identity.Resolution{Decision: identity.DecisionAmbiguous,
				Candidates: []identity.EntityID{"ent_mark_billing", "ent_mark_dense"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := identity.Resolve(tt.mention, tt.known)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEntityCanonicalName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    identity.Entity
		want string
	}{
		{"no names", identity.Entity{}, ""},
		{"canonical after alias", identity.Entity{Names: []identity.Name{
			{Name: "Marcus", Kind: identity.NameAlias}, {Name: "Mark Huang", Kind: identity.NameCanonical}}}, "Mark Huang"},
		{"no canonical: first name", identity.Entity{Names: []identity.Name{
			{Name: "Marcus", Kind: identity.NameAlias}, {Name: "Mark", Kind: identity.NameAlias}}}, "Marcus"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.e.CanonicalName()); diff != "" {
			t.Errorf("%s: CanonicalName (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestEnumsValid(t *testing.T) {
	t.Parallel()
	for _, s := range []identity.Scope{identity.ScopeRead, identity.ScopeWrite, identity.ScopeVocabulary, identity.ScopeErasure} {
		if !s.Valid() {
			t.Errorf("Scope(%q).Valid() = false", s)
		}
	}
	for _, s := range []identity.Scope{"", "Read", "admin"} {
		if s.Valid() {
			t.Errorf("Scope(%q).Valid() = true", s)
		}
	}
	for _, s := range []identity.ProfileStatus{identity.ProfileActive, identity.ProfileDisabled} {
		if !s.Valid() {
			t.Errorf("ProfileStatus(%q).Valid() = false", s)
		}
	}
	for _, s := range []identity.ProfileStatus{"", "Active", "deleted"} {
		if s.Valid() {
			t.Errorf("ProfileStatus(%q).Valid() = true", s)
		}
	}
}

func TestFormatIDLayout(t *testing.T) {
	t.Parallel()
	// 48-bit ms, 32-bit sequence, 48-bit tail: the time is the first ten characters, and IDs of one
	// millisecond sort by sequence.
	a := identity.FormatID("rel", 1, 1, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	b := identity.FormatID("rel", 1, 2, [6]byte{})
	c := identity.FormatID("rel", 2, 0, [6]byte{})
	if len(a) != len("rel_")+26 || a[:4] != "rel_" {
		t.Fatalf("FormatID = %q, want rel_ and 26 characters", a)
	}
	if !(a < b && b < c) {
		t.Errorf("IDs do not sort by time, then sequence: %q %q %q", a, b, c)
	}
	if got := identity.FormatID("x", 0, 0, [6]byte{}); got != "x_00000000000000000000000000" {
		t.Errorf("zero ID = %q", got)
	}
}

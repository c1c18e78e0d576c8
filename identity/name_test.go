package identity_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/identity"
)

// TestNormalizeNameUnicodeVariants: every variant of a name that renders the same or differs only in
// case, width or invisible characters has the same key.
func TestNormalizeNameUnicodeVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"NFC, NFD, upper case", []string{"café", "cafe\u0301", "CAFÉ", "CAFE\u0301", "Café"}, "café"},
		{"full-width letters", []string{"ｃａｆé", "ＣＡＦＥ\u0301"}, "café"},
		{"zero-width and format characters", []string{"ca\u200bfé", "c\u200daf\u200cé", "\ufeffcafé", "ca\u2060fé", "caf\u00adé"}, "café"},
		{"variation selectors", []string{"café\ufe0f", "ca\U000E0100fé"}, "café"},
		{"full case folding", []string{"Straße", "STRASSE", "strasse"}, "strasse"},
		{"compatibility forms", []string{"ﬁle", "FILE", "ｆｉｌｅ"}, "file"},
		{"white space of every kind", []string{"Mark\u00a0Huang", "\u3000Mark\u2003\u2003Huang\u3000", " mark \t huang "}, "mark huang"},
		{"bidi controls", []string{"\u202eprod\u202c", "\u2066prod\u2069"}, "prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, in := range tt.in {
				if diff := cmp.Diff(tt.want, identity.NormalizeName(in)); diff != "" {
					t.Errorf("NormalizeName(%+q) (-want +got):\n%s", in, diff)
				}
			}
		})
	}
}

func TestNameProblem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"production":       "",
		"生产":               "",
		"🚀":                "", // a symbol is visible
		"#1":               "",
		"\u200b\u200d":     "has no visible character",
		"\u3164":           "has no visible character", // Hangul filler
		"\ufe0f\u200c ":    "has no visible character",
		"\u0301\u0302":     "has no visible character", // marks alone
		" \t\u00a0":        "has no visible character",
		"prod\u0007":       "must not contain control characters",
		"\u001b[31mred":    "must not contain control characters",
		"line\nbreak name": "",
	} {
		if got := identity.NameProblem(in); got != want {
			t.Errorf("NameProblem(%+q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfusable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want bool
	}{
		{"production", "pr\u043eduction", true}, // Cyrillic о inside Latin
		{"production", "production", false},     // equal keys are exact matches, not look-alikes
		{"corn", "com", false},                  // one script each, the same: ordinary words
		{"a", "\u03b1", true},                   // Latin a, Greek alpha
		{"сор", "cop", true},                    // whole-script Cyrillic against Latin
		{"paypal", "p\u0430yp\u0430l", true},
		{"release", "main", false},
	}
	for _, tt := range tests {
		if got := identity.Confusable(identity.NormalizeName(tt.a), identity.NormalizeName(tt.b)); got != tt.want {
			t.Errorf("Confusable(%+q, %+q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestResolveLookAlike: a mention that matches no name exactly but looks like an existing entity's
// name across scripts is ambiguous with that entity as candidate, never a silent second entity; an
// exact match wins over a look-alike.
func TestResolveLookAlike(t *testing.T) {
	t.Parallel()
	latin := entity("ent_latin", "environment", nil, "production")
	cyrillic := entity("ent_cyrillic", "environment", nil, "pr\u043eduction")
	mention := identity.Mention{Name: "pr\u043eduction", Kind: "environment"}
	if diff := cmp.Diff(identity.Resolution{Decision: identity.DecisionAmbiguous, Candidates: []identity.EntityID{"ent_latin"}, LookAlike: true},
		identity.Resolve(mention, []identity.Entity{latin})); diff != "" {
		t.Errorf("look-alike (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_cyrillic"},
		identity.Resolve(mention, []identity.Entity{latin, cyrillic})); diff != "" {
		t.Errorf("exact beside look-alike (-want +got):\n%s", diff)
	}
	nfd := identity.Mention{Name: "Cafe\u0301", Kind: "place"}
	if diff := cmp.Diff(identity.Resolution{Decision: identity.DecisionReused, EntityID: "ent_cafe"},
		identity.Resolve(nfd, []identity.Entity{entity("ent_cafe", "place", nil, "café")})); diff != "" {
		t.Errorf("NFD against NFC (-want +got):\n%s", diff)
	}
	corn := identity.Mention{Name: "corn", Kind: "place"}
	if got := identity.Resolve(corn, []identity.Entity{entity("ent_com", "place", nil, "com")}); got.Decision != identity.DecisionCreated {
		t.Errorf("corn against com: %+v, want created", got)
	}
}

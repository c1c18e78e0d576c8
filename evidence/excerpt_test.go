package evidence_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/densemem/densemem/evidence"
)

// excerptTexts are texts whose characters take several bytes, several code points, or both.
var excerptTexts = map[string]string{
	"ascii":       "deploys from the release branch since May; ",
	"accented":    "Le déploiement de la production se fait depuis la branche « release » désormais. ",
	"cjk":         "生产环境现在从发布分支部署，自五月起生效。",
	"emoji":       "ship it 🚀 now 👩🏽‍💻 and 🇫🇷 flags ",
	"combining":   "cafe\u0301 re\u0301sume\u0301 nai\u0308ve a\u0300 la carte ",
	"zalgo":       "e\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308",
	"nospace_mix": "日本語テキスト😀e\u0301한국어",
}

// graphemeBoundaries returns every byte offset of s at which a grapheme cluster starts or s ends.
func graphemeBoundaries(s string) map[int]bool {
	out := map[int]bool{0: true}
	state := -1
	for rest := s; rest != ""; {
		_, rest, _, state = uniseg.StepString(rest, state)
		out[len(s)-len(rest)] = true
	}
	return out
}

// TestExcerptNeverCutsACharacter cuts texts of every script at every length around the limit, as a
// whole span and as a prefix with lookahead, and checks that each excerpt is valid UTF-8, at most
// the limit, a prefix of the text ending on a grapheme cluster boundary, and not far below the limit.
func TestExcerptNeverCutsACharacter(t *testing.T) {
	const max = 60
	for name, unit := range excerptTexts {
		full := strings.Repeat(unit, 1+4*max/len(unit))
		bounds := graphemeBoundaries(full)
		for n := max - 8; n <= max+2*evidence.ExcerptLookahead && n <= len(full); n++ {
			span := full[:n]
			if !utf8.ValidString(span) {
				continue // spans are cited on character boundaries; prefixes below need not be
			}
			for _, prefix := range []bool{false, true} {
				text, complete := span, true
				if prefix {
					// As recall reads it: at most max+lookahead bytes of the span, possibly mid-character.
					if len(span) > max+evidence.ExcerptLookahead {
						text, complete = span[:max+evidence.ExcerptLookahead], false
					}
				}
				got, cut := evidence.Excerpt(text, max, complete)
				switch {
				case !utf8.ValidString(got):
					t.Fatalf("%s n=%d prefix=%v: invalid UTF-8 %q", name, n, prefix, got)
				case len(got) > max:
					t.Fatalf("%s n=%d prefix=%v: %d bytes, more than %d", name, n, prefix, len(got), max)
				case !strings.HasPrefix(span, got):
					t.Fatalf("%s n=%d prefix=%v: %q is not a prefix of the span", name, n, prefix, got)
				case cut != (got != span):
					t.Fatalf("%s n=%d prefix=%v: cut=%v for %q of %q", name, n, prefix, cut, got, span)
				}
				if got == span {
					continue
				}
				if !bounds[len(got)] && name != "zalgo" {
					t.Fatalf("%s n=%d prefix=%v: excerpt of %d bytes ends inside a character: %q|%q", name, n, prefix, len(got), got, span[len(got):])
				}
				if name != "zalgo" && len(got) < max-max/4-16 {
					t.Fatalf("%s n=%d prefix=%v: excerpt of %d bytes, far below the limit %d", name, n, prefix, len(got), max)
				}
			}
		}
	}
}

// TestExcerptPrefersWordBoundaries: Latin text is cut after a whole word near the limit.
func TestExcerptPrefersWordBoundaries(t *testing.T) {
	text := strings.Repeat("alpha beta gamma delta ", 10)
	got, cut := evidence.Excerpt(text, 50, true)
	if !cut || strings.HasSuffix(got, " ") || !strings.HasSuffix(got, "a") {
		t.Fatalf("got %q (cut %v), want whole words without trailing space", got, cut)
	}
	if got, cut := evidence.Excerpt("short", 50, true); got != "short" || cut {
		t.Fatalf("short text: %q %v", got, cut)
	}
	// One character longer than the limit is cut on a code point boundary.
	long := "e" + strings.Repeat("\u0301", 40)
	if got, _ := evidence.Excerpt(long, 9, true); !utf8.ValidString(got) || len(got) > 9 || got == "" {
		t.Fatalf("long cluster: %q", got)
	}
}

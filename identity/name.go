package identity

import (
	"strings"
	"unicode"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// folder is Unicode full case folding (golang.org/x/text/cases); it is safe for concurrent use.
var folder = cases.Fold()

// NormalizeName returns a name's lookup key: default-ignorable code points (zero-width characters,
// joiners, format controls, variation selectors) removed, Unicode NFKC, full case folding, NFKC
// again (folding can leave a string unnormalised), then white space trimmed and every inner run of
// white space collapsed to one space. Names whose keys are equal name the same thing for lookup: the
// NFC and NFD forms of "café", full-width letters and "CAFE" all fold to "café"/"cafe". The verbatim
// name is kept for display; only the key is compared.
func NormalizeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if ignorable(r) {
			return -1
		}
		return r
	}, s)
	s = norm.NFKC.String(folder.String(norm.NFKC.String(s)))
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// ignorable reports whether r is a default-ignorable code point (Unicode's Default_Ignorable_Code_Point
// property, derived from the unicode package's tables: Other_Default_Ignorable_Code_Point, variation
// selectors, and format characters other than the prepended concatenation marks), which render as
// nothing and must not make two names different.
func ignorable(r rune) bool {
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) ||
		(unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r))
}

// NameProblem says why a name cannot identify anything, or "" when it can: a name must not hold
// control characters and must keep a visible character (a letter, number, punctuation mark or
// symbol) once default-ignorable characters are removed.
func NameProblem(s string) string {
	for _, r := range s {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return "must not contain control characters"
		}
	}
	for _, r := range NormalizeName(s) {
		if unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) {
			return ""
		}
	}
	return "has no visible character"
}

// Skeleton returns the confusable skeleton of a name key (Unicode Technical Standard #39, from the
// confusables table of github.com/mtibben/confusables): keys that look alike, such as Latin
// "production" and "prоduction" with a Cyrillic "о", share a skeleton. Equal keys have equal
// skeletons, so one index probe per skeleton finds a name's exact and look-alike matches.
func Skeleton(key string) string {
	return confusables.Skeleton(key)
}

// Confusable reports whether two different name keys look alike across scripts: they share a
// skeleton and they are not both written in one single script. "corn" and "com" share a skeleton
// but are plain Latin words, so they are not confusable here; Latin "production" and the same word
// with a Cyrillic "о" are.
func Confusable(a, b string) bool {
	if a == b || Skeleton(a) != Skeleton(b) {
		return false
	}
	sa, sb := scripts(a), scripts(b)
	if len(sa) != 1 || len(sb) != 1 {
		return true
	}
	for s := range sa {
		if !sb[s] {
			return true
		}
	}
	return false
}

// scripts returns the scripts of the characters of s, leaving out Common and Inherited (digits,
// punctuation, combining marks), which belong to every script.
func scripts(s string) map[string]bool {
	out := map[string]bool{}
	for _, r := range s {
		if unicode.In(r, unicode.Common, unicode.Inherited) {
			continue
		}
		if unicode.Is(unicode.Latin, r) {
			out["Latin"] = true
			continue
		}
		for name, table := range unicode.Scripts {
			if unicode.Is(table, r) {
				out[name] = true
				break
			}
		}
	}
	return out
}

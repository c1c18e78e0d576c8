package evidence

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// MaxExcerptBytes bounds the excerpt of a cited span that recall returns.
const MaxExcerptBytes = 600

// ExcerptLookahead is how many bytes past the limit a caller reading a prefix of a longer span should
// pass to Excerpt: enough to see whether the character at the cut goes on (combining marks, emoji
// sequences), so the cut never splits one.
const ExcerptLookahead = 64

// Excerpt returns the longest prefix of text that fits in max bytes without cutting a user-perceived
// character (a Unicode grapheme cluster), preferring a line-break opportunity (after a word, or
// between ideographs) in the last quarter of the limit, with trailing white space removed, and
// reports whether it cut anything. complete says whether text is the whole span; when it is only a
// prefix, an incomplete UTF-8 sequence at its end is ignored, and so is the last character, which may
// go on in the bytes not passed.
//
// For valid UTF-8 the result is valid UTF-8 and at most max bytes long. A single character longer
// than max (a long run of combining marks) is cut on a code point boundary instead.
func Excerpt(text string, max int, complete bool) (excerpt string, cut bool) {
	if complete && len(text) <= max {
		return text, false
	}
	if max <= 0 {
		return "", true
	}
	if !complete {
		text = trimIncompleteRune(text)
	}
	graphemeCut, lineCut := 0, 0
	state := -1
	for rest := text; rest != ""; {
		var boundaries int
		_, rest, boundaries, state = uniseg.StepString(rest, state)
		end := len(text) - len(rest)
		if end > max || (rest == "" && !complete) {
			break
		}
		graphemeCut = end
		if boundaries&uniseg.MaskLine != uniseg.LineDontBreak {
			lineCut = end
		}
	}
	at := graphemeCut
	if lineCut > 0 && lineCut >= max-max/4 {
		at = lineCut
	}
	if at == 0 {
		// One character longer than max: cut on a code point boundary.
		at = min(max, len(text))
		for at > 0 && at < len(text) && !utf8.RuneStart(text[at]) {
			at--
		}
		return text[:at], true
	}
	if out := strings.TrimRightFunc(text[:at], unicode.IsSpace); out != "" {
		return out, true
	}
	return text[:at], true
}

// trimIncompleteRune drops a partial UTF-8 sequence at the end of s.
func trimIncompleteRune(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			return s
		}
	}
	return s
}

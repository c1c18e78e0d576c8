// Package request holds what the root package and internal/placement share about a request beyond
// its public types (package memtype): the accumulation of its problems, the primitive checks and
// canonical forms of its values and citations, and a citation as an observation stores it.
package request

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/relationship"
)

// CanonicalValue returns the canonical text of a literal of at most maxBytes bytes, or why it is
// invalid.
func CanonicalValue(v memtype.ObjectValue, maxBytes int) (string, error) {
	if !v.Type.Valid() {
		names := make([]string, 0, len(memtype.ValueTypes()))
		for _, t := range memtype.ValueTypes() {
			names = append(names, string(t))
		}
		return "", fmt.Errorf("unknown value type %q (one of: %s)", v.Type, strings.Join(names, ", "))
	}
	if !utf8.ValidString(v.Value) || strings.ContainsRune(v.Value, 0) {
		return "", fmt.Errorf("value must be valid UTF-8 without NUL bytes")
	}
	if len(v.Value) > maxBytes {
		return "", fmt.Errorf("value is longer than %d bytes", maxBytes)
	}
	s := strings.TrimSpace(v.Value)
	switch v.Type {
	case memtype.ValueString:
		if s == "" {
			return "", fmt.Errorf("string value is empty")
		}
		return s, nil
	case memtype.ValueNumber:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", fmt.Errorf("%q is not a finite number", s)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case memtype.ValueBoolean:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return "", fmt.Errorf("%q is not a boolean", s)
		}
		return strconv.FormatBool(b), nil
	case memtype.ValueDate:
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return "", fmt.Errorf("%q is not a YYYY-MM-DD date", s)
		}
		if t.Year() < 1 {
			return "", fmt.Errorf("%q is outside years 0001..9999", s)
		}
		return t.Format(time.DateOnly), nil
	default:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return "", fmt.Errorf("%q is not an RFC 3339 date-time", s)
		}
		if y := t.UTC().Year(); y < 1 || y > 9999 {
			return "", fmt.Errorf("%q is outside years 0001..9999 in UTC", s)
		}
		return t.UTC().Format(time.RFC3339Nano), nil
	}
}

// Normalize returns the defaults-applied polarity, modality and scope of r.
func Normalize(r memtype.ProposedRelationship) (relationship.Polarity, relationship.Modality, string) {
	pol, mod := r.Polarity, r.Modality
	if pol == "" {
		pol = relationship.PolarityPositive
	}
	if mod == "" {
		mod = relationship.ModalityStatement
	}
	return pol, mod, relationship.NormalizeScope(r.Scope)
}

// CheckSpan adds to ps the problems of citation cp's byte span [start, end) of content, an evidence
// item's text (evidence[index]): within the content, non-empty, on UTF-8 character boundaries and
// valid text. Remember checks a new item's citations with it before anything is read, and an adopted
// fragment's once its stored content is read.
func CheckSpan(ps *Problems, cp string, content string, index, start, end int) {
	bad := false
	if start < 0 {
		ps.Add(cp+".start", "must not be negative")
		bad = true
	}
	if end > len(content) {
		ps.Add(cp+".end", "%d is past the end of evidence[%d] (%d bytes)", end, index, len(content))
		bad = true
	}
	switch {
	case bad:
	case start >= end:
		ps.Add(cp+".end", "must be greater than start")
	case !utf8.RuneStart(content[start]):
		ps.Add(cp+".start", "must be on a UTF-8 character boundary")
	case end < len(content) && !utf8.RuneStart(content[end]):
		ps.Add(cp+".end", "must be on a UTF-8 character boundary")
	case !utf8.ValidString(content[start:end]):
		ps.Add(cp, "cited text is not valid UTF-8")
	}
}

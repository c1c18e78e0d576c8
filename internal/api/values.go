package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/densemem/densemem/relationship"
)

// CanonicalValue returns the canonical text of a literal of at most maxBytes bytes, or why it is
// invalid.
func CanonicalValue(v ObjectValue, maxBytes int) (string, error) {
	if !v.Type.Valid() {
		return "", fmt.Errorf("unknown value type %q", v.Type)
	}
	if !utf8.ValidString(v.Value) || strings.ContainsRune(v.Value, 0) {
		return "", fmt.Errorf("value must be valid UTF-8 without NUL bytes")
	}
	if len(v.Value) > maxBytes {
		return "", fmt.Errorf("value is longer than %d bytes", maxBytes)
	}
	s := strings.TrimSpace(v.Value)
	switch v.Type {
	case ValueString:
		if s == "" {
			return "", fmt.Errorf("string value is empty")
		}
		return s, nil
	case ValueNumber:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", fmt.Errorf("%q is not a finite number", s)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case ValueBoolean:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return "", fmt.Errorf("%q is not a boolean", s)
		}
		return strconv.FormatBool(b), nil
	case ValueDate:
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
func Normalize(r ProposedRelationship) (relationship.Polarity, relationship.Modality, string) {
	pol, mod := r.Polarity, r.Modality
	if pol == "" {
		pol = relationship.PolarityPositive
	}
	if mod == "" {
		mod = relationship.ModalityStatement
	}
	return pol, mod, relationship.NormalizeScope(r.Scope)
}

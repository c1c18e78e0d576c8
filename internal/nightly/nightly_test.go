package nightly

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/densemem/densemem/store"
)

// TestErrorText: the run ledger keeps an error's text as valid UTF-8 without NUL, at most
// store.MaxNightlyErrorBytes, cut at a character boundary with an ellipsis.
func TestErrorText(t *testing.T) {
	long := strings.Repeat("é", store.MaxNightlyErrorBytes) // two bytes each
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "lock timeout", "lock timeout"},
		{"NUL and invalid bytes", "a\x00b\xffc", "ab\uFFFDc"},
		{"exactly the bound", strings.Repeat("x", store.MaxNightlyErrorBytes), strings.Repeat("x", store.MaxNightlyErrorBytes)},
		{"long, cut between characters", long, strings.Repeat("é", (store.MaxNightlyErrorBytes-3)/2) + "…"},
	} {
		got := errorText(errors.New(tc.in))
		if got != tc.want || len(got) > store.MaxNightlyErrorBytes || !utf8.ValidString(got) {
			t.Errorf("%s: errorText = %q (%d bytes), want %q", tc.name, got, len(got), tc.want)
		}
	}
}

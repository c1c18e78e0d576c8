package bearer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/densemem/densemem"
)

func TestParseBindsProfilesAndHosts(t *testing.T) {
	file := fmt.Sprintf(`[{"token_sha256": %q, "team_id": "tm_a", "profile_id": "pf_a"},
		{"token_sha256": %q, "team_id": "tm_a", "host": true}]`, Hash("alice"), strings.ToUpper(Hash("host")))
	s, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]densemem.Principal{
		"alice": {TeamID: "tm_a", ProfileID: "pf_a"},
		"host":  densemem.HostPrincipal("tm_a"),
	} {
		if got, ok := s.Lookup(token); !ok || got != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", token, got, ok, want)
		}
	}
	for _, token := range []string{"", "bob", Hash("alice")} {
		if _, ok := s.Lookup(token); ok {
			t.Errorf("Lookup(%q) found a principal", token)
		}
	}
}

func TestParseRefusesBadFiles(t *testing.T) {
	h := Hash("t")
	for name, file := range map[string]string{
		"not JSON":             `{`,
		"unknown field":        fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "profile_id": "p", "role": "x"}]`, h),
		"short hash":           `[{"token_sha256": "abc", "team_id": "t", "profile_id": "p"}]`,
		"no team":              fmt.Sprintf(`[{"token_sha256": %q, "profile_id": "p"}]`, h),
		"no profile, no host":  fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t"}]`, h),
		"a host with profile":  fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "profile_id": "p", "host": true}]`, h),
		"twice":                fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "host": true}, {"token_sha256": %q, "team_id": "u", "host": true}]`, h, h),
		"data after the array": fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "host": true}] []`, h),
	} {
		if _, err := Parse([]byte(file)); err == nil {
			t.Errorf("%s: parsed, want an error", name)
		}
	}
}

func TestFromHeader(t *testing.T) {
	for header, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "": ""} {
		if got, _ := FromHeader(header); got != want {
			t.Errorf("FromHeader(%q) = %q, want %q", header, got, want)
		}
	}
}

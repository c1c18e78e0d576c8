package review_test

import (
	"strings"
	"testing"

	"github.com/densemem/densemem/review"
)

// TestTimeZone: IANA zone names load, whatever the machine's zone database holds (the zone data is
// embedded); names time.LoadLocation would resolve to the machine's own zone or to files of a zone
// database installation, and names that are not zone names, are refused with the reason.
func TestTimeZone(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "America/Port-au-Prince", "Etc/GMT+2",
		"Etc/GMT-14", "EST5EDT", "GMT0", "Asia/Kolkata"} {
		loc, err := review.TimeZone(name)
		if err != nil || loc.String() != name {
			t.Errorf("TimeZone(%q) = %v, %v; want the zone", name, loc, err)
		}
	}
	for name, why := range map[string]string{
		"Local":               "machine",
		"localtime":           "machine",
		"posixrules":          "zone database",
		"posix/Europe/Berlin": "posix/",
		"right/UTC":           "right/",
		"":                    "not an IANA zone name",
		"UTC+2":               "unknown",
		"europe/berlin":       "unknown",
		"Mars/Olympus_Mons":   "unknown",
		"Europe//Berlin":      "not an IANA zone name",
		"Europe/Berlin/":      "not an IANA zone name",
		"./UTC":               "not an IANA zone name",
		"../UTC":              "not an IANA zone name",
		"/etc/localtime":      "not an IANA zone name",
		"zone.tab":            "not an IANA zone name",
		" UTC":                "not an IANA zone name",
		"+VERSION":            "not an IANA zone name",
		"Europe/Berlin\x00":   "not an IANA zone name",
	} {
		loc, err := review.TimeZone(name)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("TimeZone(%q) = %v, %v; want an error saying %q", name, loc, err, why)
		}
	}
}

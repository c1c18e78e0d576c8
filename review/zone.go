package review

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // a zone accepted here loads on every host, with or without a zone database
)

// TimeZone returns the location of name, the IANA time zone whose calendar dates a team's nightly
// runs (DESIGN §14). It is the one check of a team policy's time zone: SetTeamPolicy refuses what it
// refuses, and the nightly reviewer reads run dates through it.
//
// It accepts the names of the IANA time zone database as the database spells them ("UTC",
// "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+2"), and refuses, with an error saying
// why, names that time.LoadLocation would still resolve on some machine: "Local" and "localtime" (the
// zone of the machine the process runs on, which may differ between replicas), "posixrules" and the
// "posix/" and "right/" copies of a system's zone database (files of an installation, not zone names),
// and names with an empty, "." or ".." part or characters a zone name never has.
func TimeZone(name string) (*time.Location, error) {
	switch name {
	case "Local", "localtime":
		return nil, fmt.Errorf("%q is the zone of the machine the process runs on, which differs between machines, not an IANA zone name", name)
	case "posixrules":
		return nil, fmt.Errorf("%q is a file of a system's zone database, not an IANA zone name", name)
	}
	parts := strings.Split(name, "/")
	if parts[0] == "posix" || parts[0] == "right" {
		return nil, fmt.Errorf("%q names a system's %s/ copy of the zone database, not an IANA zone name", name, parts[0])
	}
	for _, part := range parts {
		if !zonePart(part) {
			return nil, fmt.Errorf("%q is not an IANA zone name: its parts start with a letter, hold only ASCII letters, digits, "+
				"'_', '-' and '+', and are separated by single '/'", name)
		}
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown IANA time zone %q", name)
	}
	return loc, nil
}

// zonePart reports whether s can be one '/'-separated part of an IANA zone name.
func zonePart(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !('0' <= c && c <= '9') && c != '_' && c != '-' && c != '+' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

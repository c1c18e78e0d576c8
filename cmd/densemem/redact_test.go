package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The redactor hides the passwords of URLs and keyword/value strings, escaped or not, in anything
// written through it, and redactErr in an error's text while errors.Is still reaches the cause.
func TestRedactorHidesPasswords(t *testing.T) {
	t.Parallel()
	secrets := passwords("postgres://u:p%40ss%2Fw0rd@db:5432/app", "host=db user=u password='k3y w0rd' dbname=app",
		"postgres://r:plain-pw@db/app")
	secrets = append(secrets, passwords(flagValues([]string{"team", "create", "--database-url=postgres://x:from-flag@h/d",
		"--reviewer-database-url", "postgres://y:from-flag-2@h/d"}, "database-url", "reviewer-database-url")...)...)
	var out bytes.Buffer
	w := redactor(&out, secrets)
	for _, s := range []string{"p@ss/w0rd", "p%40ss%2Fw0rd", "k3y w0rd", "plain-pw", "from-flag", "from-flag-2"} {
		fmt.Fprintf(w, "connect to postgres://u:%s@db failed\n", s)
	}
	if got := out.String(); strings.Contains(got, "w0rd") || strings.Contains(got, "plain-pw") || strings.Contains(got, "from-flag") ||
		strings.Count(got, redacted) != 6 {
		t.Errorf("redacted output:\n%s", got)
	}
	cause := errors.New("dial postgres://r:plain-pw@db/app: refused")
	err := redactErr(cause, "postgres://r:plain-pw@db/app")
	if strings.Contains(err.Error(), "plain-pw") || !errors.Is(err, cause) {
		t.Errorf("redactErr: %q (Is cause: %v)", err, errors.Is(err, cause))
	}
}

// Package golden holds what the examples' tests share: comparing a program's output with its golden
// file, and checking the error a program gives when no database answers.
package golden

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	// The examples' tests fall back to a PostgreSQL container as every test of the project does.
	_ "github.com/densemem/densemem/densememtest/container"
	"github.com/densemem/densemem/internal/testsupport/exampledb"
	"github.com/densemem/densemem/internal/testsupport/testdb"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

// generatedID matches an identifier the library generates (prefix, underscore, 26 Crockford base32
// characters): a golden story prints names and placeholders instead.
var generatedID = regexp.MustCompile(`\b[a-z]+_[0-9a-hjkmnp-tv-z]{26}\b`)

// Check compares every run's output with testdata/<name>.golden, and fails a run that prints a
// generated ID. With -update it first rewrites the file from the first run.
func Check(t *testing.T, name string, runs ...[]byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update && len(runs) > 0 {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, runs[0], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	for i, got := range runs {
		if id := generatedID.Find(got); id != nil {
			t.Errorf("run %d prints the generated ID %s", i+1, id)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("run %d differs from %s (-want +got):\n%s\nrun the test with -update if the change is intended",
				i+1, path, lineDiff(string(want), string(got)))
		}
	}
}

// UnreachableURL is a database URL with a password where nothing listens.
const UnreachableURL = "postgres://postgres:s3cret@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"

// CheckNoDatabase checks what a program did given UnreachableURL: it failed, its error says how to
// provide a database (mentioning envVar and the default server) without the URL's password, and it
// printed nothing first.
func CheckNoDatabase(t *testing.T, err error, out []byte, envVar string) {
	t.Helper()
	if err == nil {
		t.Fatal("run succeeded without a database")
	}
	msg := err.Error()
	for _, want := range []string{"cannot connect", envVar, "127.0.0.1:5432"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error leaks the password:\n%s", msg)
	}
	if len(out) != 0 {
		t.Errorf("printed %q before failing", out)
	}
}

// lineDiff is a small line-by-line diff: enough to show where a golden file drifted.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		switch {
		case i >= len(g):
			b.WriteString("-" + w[i] + "\n")
		case i >= len(w):
			b.WriteString("+" + g[i] + "\n")
		case w[i] != g[i]:
			b.WriteString("-" + w[i] + "\n+" + g[i] + "\n")
		}
	}
	return b.String()
}

// Story is an example program's story: it writes to w against the database at dsn.
type Story func(ctx context.Context, w io.Writer, dsn string) error

// CheckStory runs story twice against one fresh database and compares each output with the golden
// file testdata/<name>.golden: a rerun creates a fresh team and must print exactly the same story.
func CheckStory(t *testing.T, name string, story Story) {
	t.Helper()
	dsn := testdb.NewHostURL(t)
	tellTwice(t, name, story, dsn)
}

// CheckStoryEmbedded is CheckStory on a private PostgreSQL (package embedded) in a fresh data
// directory, whatever else answers: the first run prepares the server, the second reuses its data.
func CheckStoryEmbedded(t *testing.T, name string, story Story) {
	t.Helper()
	dsn := exampledb.EmbeddedPrefix + t.TempDir()
	tellTwice(t, name, story, dsn)
}

// CheckStoryOnCitus is CheckStoryAsRuntime on the Citus cluster testdb.EnvCitusURL names (skipped
// without one), on its one distributed database, migrated and distributed by testdb.Citus: each
// run creates teams of its own, so the story prints the same on a database other runs wrote to.
func CheckStoryOnCitus(t *testing.T, name string, story Story) {
	t.Helper()
	pool := testdb.Citus(t)
	dsn := pool.Config().ConnString()
	tellTwice(t, name, story, exampledb.RuntimePrefix+dsn)
}

// CheckStoryAsRuntime is CheckStory with the story's store connected as the runtime role, with the
// database's binding key, under row-level security (exampledb.RuntimePrefix), as a host's service
// runs; the database is migrated as the test server's superuser.
func CheckStoryAsRuntime(t *testing.T, name string, story Story) {
	t.Helper()
	tellTwice(t, name, story, exampledb.RuntimePrefix+testdb.NewHostURL(t))
}

// tellTwice runs story twice on dsn and checks both outputs with Check.
func tellTwice(t *testing.T, name string, story Story, dsn string) {
	t.Helper()
	var first, second bytes.Buffer
	if err := story(context.Background(), &first, dsn); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := story(context.Background(), &second, dsn); err != nil {
		t.Fatalf("second run: %v", err)
	}
	Check(t, name, first.Bytes(), second.Bytes())
}

// CheckStoryNoDatabase runs story against UnreachableURL and checks its error as CheckNoDatabase
// does, for the examples' environment variable.
func CheckStoryNoDatabase(t *testing.T, story Story) {
	t.Helper()
	var out bytes.Buffer
	err := story(context.Background(), &out, UnreachableURL)
	CheckNoDatabase(t, err, out.Bytes(), exampledb.EnvURL)
}

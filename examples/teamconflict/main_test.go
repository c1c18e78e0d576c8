package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/densemem/densemem/internal/testdb"
)

var update = flag.Bool("update", false, "rewrite testdata/teamconflict.golden from the current output")

var golden = filepath.Join("testdata", "teamconflict.golden")

// generatedID matches an identifier the library generates (prefix, underscore, 26 Crockford base32
// characters): the story must print names and placeholders instead, or it could not be golden.
var generatedID = regexp.MustCompile(`\b[a-z]+_[0-9a-hjkmnp-tv-z]{26}\b`)

// TestTeamConflictGolden runs the story twice against one isolated database and compares each output
// with the golden file: a rerun creates a fresh team and must print exactly the same story.
func TestTeamConflictGolden(t *testing.T) {
	t.Parallel()
	dsn := testdb.NewURL(t)
	var first, second bytes.Buffer
	if err := run(context.Background(), &first, dsn); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := run(context.Background(), &second, dsn); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, first.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run `go test ./examples/teamconflict -update` to create it)", err)
	}
	for i, got := range [][]byte{first.Bytes(), second.Bytes()} {
		if id := generatedID.Find(got); id != nil {
			t.Errorf("run %d prints the generated ID %s", i+1, id)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("run %d differs from %s (-want +got):\n%s\nrun `go test ./examples/teamconflict -update` if the change is intended",
				i+1, golden, lineDiff(string(want), string(got)))
		}
	}
}

// TestTeamConflictNoDatabase checks that an unreachable server gives an error that says how to
// provide one, without the URL's password.
func TestTeamConflictNoDatabase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), &out, "postgres://postgres:s3cret@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("run succeeded without a database")
	}
	msg := err.Error()
	for _, want := range []string{"cannot connect", envDatabaseURL, "127.0.0.1:5432"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error leaks the password:\n%s", msg)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q before failing", out.String())
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

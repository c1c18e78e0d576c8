package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/densemem/densemem/internal/exampledb"
	"github.com/densemem/densemem/internal/golden"
	"github.com/densemem/densemem/internal/testdb"
)

// TestTeamConflictGolden runs the story twice against one isolated database and compares each output
// with the golden file: a rerun creates a fresh team and must print exactly the same story.
func TestTeamConflictGolden(t *testing.T) {
	t.Parallel()
	dsn := testdb.NewHostURL(t)
	var first, second bytes.Buffer
	if err := run(context.Background(), &first, dsn); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := run(context.Background(), &second, dsn); err != nil {
		t.Fatalf("second run: %v", err)
	}
	golden.Check(t, "teamconflict", first.Bytes(), second.Bytes())
}

// TestTeamConflictNoDatabase checks that an unreachable server gives an error that says how to
// provide one, without the URL's password.
func TestTeamConflictNoDatabase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), &out, golden.UnreachableURL)
	golden.CheckNoDatabase(t, err, out.Bytes(), exampledb.EnvURL)
}

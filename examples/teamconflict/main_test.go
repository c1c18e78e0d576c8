package main

import (
	"testing"

	"github.com/densemem/densemem/internal/testsupport/golden"
)

// TestTeamConflictGolden runs the story twice against one isolated database and compares each output
// with the golden file: a rerun creates a fresh team and must print exactly the same story.
func TestTeamConflictGolden(t *testing.T) {
	t.Parallel()
	golden.CheckStory(t, "teamconflict", run)
}

// TestTeamConflictNoDatabase checks that an unreachable server gives an error that says how to
// provide one, without the URL's password.
func TestTeamConflictNoDatabase(t *testing.T) {
	t.Parallel()
	golden.CheckStoryNoDatabase(t, run)
}

// TestTeamConflictGoldenOnCitus tells the story twice on the Citus cluster of DENSEMEM_CITUS_URL (skipped without one):
// the same golden file as on one node.
func TestTeamConflictGoldenOnCitus(t *testing.T) {
	golden.CheckStoryOnCitus(t, "teamconflict", run)
}

// The story as the runtime role with the binding key, under row-level security.
func TestGoldenAsRuntime(t *testing.T) {
	golden.CheckStoryAsRuntime(t, "teamconflict", run)
}

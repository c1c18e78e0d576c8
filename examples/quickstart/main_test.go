package main

import (
	"testing"

	"github.com/densemem/densemem/internal/testsupport/golden"
)

// TestQuickstartGolden runs the story twice against one isolated database and compares each output
// with the golden file: a rerun creates a fresh team and must print exactly the same story.
func TestQuickstartGolden(t *testing.T) {
	t.Parallel()
	golden.CheckStory(t, "quickstart", run)
}

// TestQuickstartGoldenEmbedded tells the story twice on a private PostgreSQL in a data directory of
// its own, as `go run ./examples/quickstart` does on a machine with no server: the same golden file.
func TestQuickstartGoldenEmbedded(t *testing.T) {
	t.Parallel()
	golden.CheckStoryEmbedded(t, "quickstart", run)
}

// TestQuickstartNoDatabase checks that an unreachable server gives an error that says how to
// provide one, without the URL's password.
func TestQuickstartNoDatabase(t *testing.T) {
	t.Parallel()
	golden.CheckStoryNoDatabase(t, run)
}

// TestQuickstartGoldenOnCitus tells the story twice on the Citus cluster of DENSEMEM_CITUS_URL (skipped without one):
// the same golden file as on one node.
func TestQuickstartGoldenOnCitus(t *testing.T) {
	golden.CheckStoryOnCitus(t, "quickstart", run)
}

// The story as the runtime role with the binding key, under row-level security.
func TestGoldenAsRuntime(t *testing.T) {
	golden.CheckStoryAsRuntime(t, "quickstart", run)
}

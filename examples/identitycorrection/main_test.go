package main

import (
	"testing"

	"github.com/densemem/densemem/internal/testsupport/golden"
)

// TestIdentityCorrectionGolden runs the story twice against one isolated database and compares each output
// with the golden file: a rerun creates a fresh team and must print exactly the same story.
func TestIdentityCorrectionGolden(t *testing.T) {
	t.Parallel()
	golden.CheckStory(t, "identitycorrection", run)
}

// TestIdentityCorrectionNoDatabase checks that an unreachable server gives an error that says how to
// provide one, without the URL's password.
func TestIdentityCorrectionNoDatabase(t *testing.T) {
	t.Parallel()
	golden.CheckStoryNoDatabase(t, run)
}

package densemem_test

import (
	"testing"

	"github.com/densemem/densemem"
)

func TestRememberAcceptsAndSupersedes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.remember(e.A, deploy("production", "main"))
	if first.Category != densemem.CategoryAccepted || first.Status != "active" || first.Tier != "validated_claim" {
		t.Fatalf("first: %+v", first)
	}
	e.clock.Advance(1)
	second := e.remember(e.A, deploy("production", "release").since(date("2026-05-01")))
	if second.Category != densemem.CategorySupersededPrior {
		t.Fatalf("second: %+v", second)
	}
	status, _, validTo, version := e.relationshipState(first.RelationshipID)
	if status != "superseded" || validTo == nil || !validTo.Equal(date("2026-05-01")) || version != 2 {
		t.Fatalf("prior: %s %v %d", status, validTo, version)
	}
}

package densememtest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/densememtest"
	"github.com/densemem/densemem/migrations"
)

// TestNewGivesAHostAWorkingClient uses the package as a host's test would: a fresh database, a
// client connected as the runtime role and a nightly review as the reviewer role, isolated from every
// other test's database.
func TestNewGivesAHostAWorkingClient(t *testing.T) {
	t.Parallel()
	db := densememtest.New(t, nil)
	ctx := t.Context()
	team, err := db.Client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Client.RegisterPredicate(ctx, densemem.HostPrincipal(team), densemem.PredicateDefinition{
		Key: "works_on", RelationshipKind: "state", CurrentCardinality: "many"}); err != nil {
		t.Fatal(err)
	}
	id, err := db.Client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "w", Scopes: []densemem.Scope{"read", "write"}})
	if err != nil {
		t.Fatal(err)
	}
	text := "Ada works on the Atlas project."
	pl, err := db.Client.Remember(ctx, densemem.Principal{TeamID: team, ProfileID: id}, densemem.RememberRequest{
		IdempotencyKey: "k", Evidence: []densemem.EvidenceInput{{Content: text, SourceType: "manual"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{{Ref: "a", Name: "Ada", EntityKind: "person"}, {Ref: "p", Name: "Atlas", EntityKind: "project"}},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "r", SubjectRef: "a", Predicate: "works_on", ObjectRef: "p",
				Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(text)}}}},
		}})
	if err != nil || pl.RelationshipOutcomes[0].Category != densemem.CategoryAccepted {
		t.Fatalf("remember: %+v, %v", pl, err)
	}
	if _, err := db.Client.RunNightlyReview(ctx, densemem.NightlyReviewRequest{}); err != nil {
		t.Fatalf("nightly review as the reviewer role: %v", err)
	}
	for pool, want := range map[string]string{"runtime": migrations.DefaultRuntimeRole, "reviewer": migrations.DefaultReviewerRole} {
		p := db.Runtime
		if pool == "reviewer" {
			p = db.Reviewer
		}
		var user string
		if err := p.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil || user != want {
			t.Errorf("%s pool connects as %q (%v), want %s", pool, user, err, want)
		}
	}
	var n int
	if err := db.Admin.QueryRow(ctx, "SELECT count(*) FROM relationships").Scan(&n); err != nil || n != 1 {
		t.Errorf("admin pool sees %d relationships (%v), want 1", n, err)
	}
}

// TestDoesNotImportDocker: a host importing densememtest does not import testcontainers-go or
// Docker's client (so `go mod tidy` adds neither to its go.mod); package densememtest/container does.
func TestDoesNotImportDocker(t *testing.T) {
	t.Parallel()
	deps := func(pkg string) string {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return string(out)
	}
	for _, forbidden := range []string{"github.com/testcontainers/", "github.com/moby/", "go.opentelemetry.io/"} {
		if strings.Contains(deps("github.com/densemem/densemem/densememtest"), forbidden) {
			t.Errorf("densememtest imports %s...: a host's go.mod would list it", forbidden)
		}
	}
	if !strings.Contains(deps("github.com/densemem/densemem/densememtest/container"), "github.com/testcontainers/testcontainers-go") {
		t.Error("densememtest/container does not import testcontainers-go: the container fallback is gone")
	}
}

package densemem_test

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// tour is the README's API tour, word for word (TestReadmeTourIsTheExample holds the two together):
// Example_tour runs it against the test server.
func tour(ctx context.Context, ownerDSN, runtimeDSN, reviewerDSN string) error {
	// Migrate once, as the owner: the schema densemem and the roles densemem_owner, densemem_runtime
	// and densemem_reviewer. Roles are cluster-wide: every database on the server shares them.
	owner, err := pgxpool.New(ctx, ownerDSN)
	if err != nil {
		return err
	}
	defer owner.Close()
	if err := migrations.Up(ctx, owner, nil); err != nil {
		return err
	}

	// The binding key ties each transaction to its team: only the owner may read it, and the
	// runtime and reviewer roles reach no team without it (keep it with the DSNs' secrets).
	key, err := migrations.BindingKey(ctx, owner, nil)
	if err != nil {
		return err
	}
	opts := &postgres.Options{BindingKey: key}

	// The library runs as the runtime role; the nightly reviewer as the reviewer role.
	st, err := postgres.Open(ctx, runtimeDSN, opts) // ErrNotMigrated while the schema is behind
	if err != nil {
		return err
	}
	defer st.Close() // Open's pool; a Store from postgres.New leaves its pool to the caller
	rv, err := postgres.Open(ctx, reviewerDSN, opts)
	if err != nil {
		return err
	}
	defer rv.Close()
	client, err := densemem.New(st, &densemem.Config{Nightly: densemem.NightlyConfig{Store: rv}})
	if err != nil {
		return err
	}

	// Provisioning, as the host. Register predicates first: a phrase no predicate knows is held
	// for a vocabulary review, not stored.
	team, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "acme"})
	if err != nil {
		return err
	}
	host := densemem.HostPrincipal(team) // every scope but write; never hand it to an agent
	if _, err := client.RegisterPredicate(ctx, host, densemem.PredicateDefinition{Key: "deploys_from",
		RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"}}); err != nil {
		return err
	}
	aliceID, err := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "alice",
		Scopes: []densemem.Scope{"read", "write"}}) // identity.Scopes() lists them all
	if err != nil {
		return err
	}
	alice := densemem.Principal{TeamID: team, ProfileID: aliceID}

	// Remember: verbatim evidence plus the host's proposal. A citation is the UTF-8 byte range
	// [Start, End) of an evidence item, and the default verifier (evidence.SpanVerifier) grants
	// support only when the cited text names the subject and the object.
	remember := func(key, text, branch string) (densemem.RelationshipOutcome, error) {
		at := strings.Index(text, "production")
		pl, err := client.Remember(ctx, alice, densemem.RememberRequest{
			IdempotencyKey: key,
			Evidence:       []densemem.EvidenceInput{{Content: text, SourceType: "manual"}}, // evidence.SourceTypes()
			Proposal: densemem.Proposal{
				Entities: []densemem.ProposedEntity{{Ref: "env", Name: "production", EntityKind: "environment"},
					{Ref: "branch", Name: branch, EntityKind: "git_branch"}},
				Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "env",
					Predicate: "deploys from", ObjectRef: "branch",
					Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: at, End: len(text)}}}},
			},
		})
		if err != nil {
			return densemem.RelationshipOutcome{}, err
		}
		return pl.RelationshipOutcomes[0], nil
	}
	first, err := remember("k1", "Today production deploys from main.", "main")
	if err != nil {
		return err
	}
	fmt.Println(first.Category, first.Status) // relationship_accepted active
	// An undated contradiction of alice's own statement is held for her review.
	second, err := remember("k2", "Today production deploys from release.", "release")
	if err != nil {
		return err
	}
	fmt.Println(second.Category, second.Review.Kind)

	// Review items list the open questions with their exact choices; Resolve answers one.
	items, err := client.ListReviewItems(ctx, alice, densemem.ListReviewItemsRequest{})
	if err != nil {
		return err
	}
	fmt.Println(len(items.ReviewItems), "open item:", items.ReviewItems[0].Prompt.Question != "")
	dec, err := client.Resolve(ctx, alice, densemem.ResolveRequest{IngestID: items.ReviewItems[0].IngestID,
		PlacementItemID: items.ReviewItems[0].PlacementItemID, Action: densemem.ActionSupersedePrior,
		Decision: &densemem.ResolveDecision{Reason: "alice says release replaced main"}, IdempotencyKey: "d1"})
	if err != nil {
		return err
	}
	fmt.Println("resolved:", dec.Action)

	// Recall and Trace read what the team knows, down to the evidence.
	rc, err := client.Recall(ctx, alice, densemem.RecallRequest{Query: "what does production deploy from"})
	if err != nil {
		return err
	}
	fmt.Println("recall:", rc.Results[0].Relationship.Object.Name)
	tr, err := client.Trace(ctx, alice, densemem.TraceRequest{RelationshipID: first.RelationshipID, IncludeTransitions: true})
	if err != nil {
		return err
	}
	fmt.Println("the first is now", tr.Relationship.Status)

	// The nightly Conflict reviewer, from the host's scheduler; Forget retracts the caller's own.
	if _, err := client.RunNightlyReview(ctx, densemem.NightlyReviewRequest{WorkerID: "replica-1"}); err != nil {
		return err
	}
	_, err = client.Forget(ctx, alice, densemem.ForgetRequest{RelationshipID: second.RelationshipID,
		Reason: "release branch retired", IdempotencyKey: "f1"})
	return err
}

// Example_tour runs the README's API tour against the test server: the owner is the server's
// maintenance user, the runtime and reviewer roles log in without a password (trust).
func Example_tour() {
	owner := exampleDSN()
	as := func(role string) string {
		u, err := url.Parse(owner)
		if err != nil {
			log.Fatal(err)
		}
		u.User = url.User(role)
		return u.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tour(ctx, owner, as(migrations.DefaultRuntimeRole), as(migrations.DefaultReviewerRole)); err != nil {
		log.Fatal(err)
	}
	// Output:
	// relationship_accepted active
	// relationship_needs_review relationship_conflict
	// 1 open item: true
	// resolved: supersede_prior
	// recall: release
	// the first is now superseded
}

package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// TestNameKeyMigrationRecomputesKeysAndOpensReviewForCollisions: names stored under the old keys
// (lower case only) get Unicode keys and skeletons; two entities that come to share a key are not
// merged but recorded with an open identity review, after which a mention of the name is ambiguous
// with both as candidates; entities that already shared a key, and two spellings of one entity's
// name, are left alone.
func TestNameKeyMigrationRecomputesKeysAndOpensReviewForCollisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	if err := migrations.UpTo(ctx, pool, 5, nil); err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC) }
	client, err := densemem.New(postgres.New(pool, nil), &densemem.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	team, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	admin, _ := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "admin", Scopes: []densemem.Scope{"read", "vocabulary"}})
	writer, _ := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "w", Scopes: []densemem.Scope{"read", "write"}})
	if _, err := client.RegisterPredicate(ctx, densemem.Principal{TeamID: team, ProfileID: admin}, densemem.PredicateDefinition{
		Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one"}); err != nil {
		t.Fatal(err)
	}
	// Entities as the old write path stored them: key = lower case with collapsed white space.
	for _, row := range []struct{ id, kind, name, oldKey, nameKind string }{
		{"ent_nfc", "environment", "café", "café", "canonical"},
		{"ent_nfd", "environment", "cafe\u0301", "cafe\u0301", "canonical"},
		{"ent_main1", "git_branch", "main", "main", "canonical"},
		{"ent_main2", "git_branch", "main", "main", "canonical"},
		{"ent_prod", "environment", "Prod", "prod", "canonical"},
		{"ent_prod", "environment", "ＰＲＯＤ", "ｐｒｏｄ", "alias"},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO entities (team_id, entity_id, entity_kind, identity_context, created_by, ingest_id, created_at)
			VALUES ($1, $2, $3, '{}', $4, 'ing_old', $5) ON CONFLICT DO NOTHING`, team, row.id, row.kind, writer, clock()); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO entity_names (team_id, entity_id, name, normalized_name, name_kind, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, team, row.id, row.name, row.oldKey, row.nameKind, clock()); err != nil {
			t.Fatal(err)
		}
	}

	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}

	rows, err := pool.Query(ctx, `SELECT entity_id || ':' || name || '=' || normalized_name, skeleton = $1
		FROM entity_names ORDER BY entity_id, name`, identity.Skeleton("café"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for rows.Next() {
		var k string
		var cafeSkeleton bool
		if err := rows.Scan(&k, &cafeSkeleton); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"ent_main1:main=main", "ent_main2:main=main", "ent_nfc:café=café", "ent_nfd:cafe\u0301=café",
		"ent_prod:Prod=prod", "ent_prod:ＰＲＯＤ=prod"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys after the migration (-want +got):\n%s", diff)
	}
	var collisions []string
	var reviewID string
	if err := pool.QueryRow(ctx, `SELECT entity_ids, review_id FROM entity_name_collisions WHERE team_id = $1`, team).
		Scan(&collisions, &reviewID); err != nil {
		t.Fatalf("one collision recorded: %v", err)
	}
	if diff := cmp.Diff([]string{"ent_nfc", "ent_nfd"}, collisions); diff != "" {
		t.Errorf("collision (-want +got):\n%s", diff)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM entity_name_collisions`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d collisions recorded (%v), want only café", n, err)
	}
	var status, kind string
	var related []string
	if err := pool.QueryRow(ctx, `SELECT status, kind, related_ids FROM review_items WHERE review_id = $1`, reviewID).
		Scan(&status, &kind, &related); err != nil || status != "open" || kind != "identity" || len(related) != 2 {
		t.Errorf("review item %s: %s %s %v (%v), want an open identity item naming both entities", reviewID, status, kind, related, err)
	}

	// A mention of the name is now ambiguous between the two.
	content := "café deploys from main."
	pl, err := client.Remember(ctx, densemem.Principal{TeamID: team, ProfileID: writer}, densemem.RememberRequest{
		IdempotencyKey: "after-migration",
		Evidence:       []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{{Ref: "s", Name: "café", EntityKind: "environment"},
				{Ref: "o", Name: "release", EntityKind: "git_branch"}},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "p", SubjectRef: "s", Predicate: "deploys_from", ObjectRef: "o",
				Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := pl.Entities[0]; got.Decision != identity.DecisionAmbiguous || len(got.Candidates) != 2 {
		t.Errorf("café after the migration: %+v, want ambiguous between both entities", got)
	}
}

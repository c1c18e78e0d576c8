package migrations_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/testsupport/testdb"
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
	// The store opens its transactions with migration 27's function: lend it to the old schema.
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "SET LOCAL search_path = densemem; "+migrations.TransactionSettingsSQL)
		return err
	}); err != nil {
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

	if _, err := pool.Exec(ctx, "DROP FUNCTION densemem.densemem_begin(text, text, text, text)"); err != nil {
		t.Fatal(err)
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

// hostGoose is a host's own goose history in public: two migrations of its own, numbered like ours.
func hostGoose(t *testing.T, ctx context.Context, pool *pgxpool.Pool, upTo int64) *goose.Provider {
	t.Helper()
	hostFS := fstest.MapFS{
		"00001_host_teams.sql": {Data: []byte("-- +goose Up\nCREATE TABLE public.teams (id serial PRIMARY KEY, title text NOT NULL);\n" +
			"-- +goose Down\nDROP TABLE public.teams;\n")},
		"00002_host_more.sql": {Data: []byte("-- +goose Up\nALTER TABLE public.teams ADD COLUMN size int;\n" +
			"-- +goose Down\nALTER TABLE public.teams DROP COLUMN size;\n")},
	}
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = "public"
	hpool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hpool.Close)
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(hpool), hostFS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, upTo); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMigrateBesideHostTables: a host database with its own public.teams and its own goose history
// in public.goose_db_version is migrated; Dense-Mem's objects all land in the densemem schema with
// their own version table, the host's table, rows and history are untouched, the library works, and
// the host's goose goes on migrating.
func TestMigrateBesideHostTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	host := hostGoose(t, ctx, pool, 1)
	if _, err := pool.Exec(ctx, `INSERT INTO public.teams (title) VALUES ('host team')`); err != nil {
		t.Fatal(err)
	}
	hostHistory := func() string {
		var h string
		if err := pool.QueryRow(ctx, `SELECT string_agg(version_id::text, ',' ORDER BY id) FROM public.goose_db_version`).Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := hostHistory()

	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	var publicObjects []string
	rows, err := pool.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		_ = rows.Scan(&name)
		publicObjects = append(publicObjects, name)
	}
	rows.Close()
	if diff := cmp.Diff([]string{"goose_db_version", "goose_db_version_id_seq", "teams", "teams_id_seq", "teams_pkey",
		"goose_db_version_pkey"}, publicObjects, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("objects in public after the migration (-want +got):\n%s", diff)
	}
	if got := hostHistory(); got != before {
		t.Errorf("host goose history %s, want %s untouched", got, before)
	}
	var title string
	if err := pool.QueryRow(ctx, `SELECT title FROM public.teams`).Scan(&title); err != nil || title != "host team" {
		t.Errorf("host row: %q, %v", title, err)
	}
	if v, err := migrations.Version(ctx, pool, nil); err != nil || v != migrations.Latest() {
		t.Errorf("densemem version %d (%v), want %d", v, err, migrations.Latest())
	}

	// Both systems keep working: the library on its schema, the host's goose on its history.
	client, err := densemem.New(postgres.New(pool, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "acme"}); err != nil {
		t.Fatalf("library beside the host: %v", err)
	}
	if _, err := host.Up(ctx); err != nil {
		t.Fatalf("host goose after the library migrated: %v", err)
	}
	if got := hostHistory(); got != before+",2" {
		t.Errorf("host goose history %s, want %s,2", got, before)
	}
	statuses, err := migrations.Status(ctx, pool, nil)
	if err != nil || len(statuses) == 0 {
		t.Fatalf("status: %v, %v", statuses, err)
	}
	for _, s := range statuses {
		if !s.Applied {
			t.Errorf("migration %d (%s) pending after Up", s.Version, s.Source)
		}
	}
}

// TestMigrateAdoptsLegacyInstallation: an installation from before the library had its own schema
// (objects and goose history in public, at version 5) is moved into the schema with its rows, its
// history is carried into the schema's version table, the rest of the migrations apply, and public's
// goose table (possibly a host's) is left as it was.
func TestMigrateAdoptsLegacyInstallation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	// The old way: the SQL migrations up to 5 applied with public as search_path and goose's default table.
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = "public"
	lpool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lpool.Close()
	legacy, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(lpool), migrations.FS())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := legacy.UpTo(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := lpool.Exec(ctx, `INSERT INTO public.teams (team_id, name, created_at) VALUES ('tm_old', 'old', now())`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	var inPublic, name string
	if err := pool.QueryRow(ctx, `SELECT COALESCE(to_regclass('public.teams')::text, ''), (SELECT name FROM densemem.teams)`).
		Scan(&inPublic, &name); err != nil || inPublic != "" || name != "old" {
		t.Errorf("after adoption: public.teams %q, densemem.teams row %q, %v", inPublic, name, err)
	}
	var history string
	if err := pool.QueryRow(ctx, `SELECT string_agg(version_id::text, ',' ORDER BY version_id) FROM densemem.goose_db_version`).
		Scan(&history); err != nil {
		t.Fatal(err)
	}
	if want := "0,1,2,3,4,5,6,7,8"; !strings.HasPrefix(history, want) {
		t.Errorf("densemem history %s, want it to start %s", history, want)
	}
	var publicHistory string
	if err := pool.QueryRow(ctx, `SELECT string_agg(version_id::text, ',' ORDER BY id) FROM public.goose_db_version`).
		Scan(&publicHistory); err != nil || publicHistory != "0,1,2,3,4,5" {
		t.Errorf("public goose history %q (%v), want it untouched", publicHistory, err)
	}
	// The append-only triggers came along and still run, with their functions' new search_path.
	if _, err := pool.Exec(ctx, `UPDATE densemem.teams SET name = 'x'`); err != nil {
		t.Fatalf("teams is mutable: %v", err)
	}
	if _, err := pool.Exec(ctx, `TRUNCATE densemem.team_policies`); err == nil || !strings.Contains(err.Error(), "DM001") {
		t.Errorf("truncate of an append-only table after adoption: %v, want DM001", err)
	}
}

// TestMigrateIntoAnotherSchema: the schema is configurable at migration and at open.
func TestMigrateIntoAnotherSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	opts := &migrations.Options{Schema: "memory_x"}
	if err := migrations.Up(ctx, pool, opts); err != nil {
		t.Fatal(err)
	}
	if v, err := migrations.Version(ctx, pool, nil); err != nil || v != 0 {
		t.Errorf("default schema version %d (%v), want 0: nothing was created there", v, err)
	}
	client, err := densemem.New(postgres.New(pool, &postgres.Options{Schema: "memory_x"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	team, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM memory_x.teams WHERE team_id = $1`, team).Scan(&n); err != nil || n != 1 {
		t.Errorf("team in memory_x: %d, %v", n, err)
	}
	for _, bad := range []string{"public", "Bad-Name", "pg_x", ""} {
		if bad == "" {
			continue
		}
		if err := migrations.Up(ctx, pool, &migrations.Options{Schema: bad}); err == nil {
			t.Errorf("schema %q accepted", bad)
		}
	}
}

package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/postgres"
)

// listBulk is how many cases and review items each team of the List plan test holds.
const listBulk = 10000

// TestListPlansReadOnlyAPage checks, with EXPLAIN ANALYZE under custom and generic plans, that each
// List read reads about one page of rows however many the team holds: two teams, each with 10k
// conflict cases of the four statuses, 10k review items of ten profiles, 2k profiles and 2k
// predicates of three versions each; first pages and pages from the middle of the list.
func TestListPlansReadOnlyAPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	teams := seedListTeams(t, ctx, pool)
	team := teams[0]
	const limit = 50
	due := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Add(listBulk / 2 * time.Minute)
	mid := "cf_005001"
	type query struct {
		name string
		sql  string
		args []any
		// bound is the most rows the query may read of any table.
		bound int
	}
	all := []string{"overdue", "open", "resolved", "dismissed"}
	none := []*time.Time{nil, nil, nil, nil}
	noIDs := []*string{nil, nil, nil, nil}
	queries := []query{
		{"profiles", postgres.ListSQL["profiles"], []any{team, "", limit + 1}, 2 * (limit + 1)},
		{"profiles after", postgres.ListSQL["profiles"], []any{team, "pf_001000", limit + 1}, 2 * (limit + 1)},
		// Three versions per key, each probed once by the anti-join.
		{"predicates", postgres.ListSQL["predicates"], []any{team, "", limit + 1}, 2 * 3 * (limit + 1)},
		{"predicates after", postgres.ListSQL["predicates"], []any{team, "key_001000", limit + 1}, 2 * 3 * (limit + 1)},
		// One LIMITed index scan per status, then the page's cases.
		{"conflicts", postgres.ListSQL["conflicts"], []any{team, all, none, noIDs, limit + 1}, 5 * (limit + 1)},
		{"conflicts after", postgres.ListSQL["conflicts"], []any{team, all[1:], []*time.Time{&due, nil, nil},
			[]*string{&mid, nil, nil}, limit + 1}, 5 * (limit + 1)},
	}
	for _, p := range []store.ReviewItemListParams{
		{Team: team, Status: "open", Limit: limit},
		{Team: team, Status: "open", Profile: "pf_000003", Limit: limit},
		{Team: team, Status: "open", Limit: limit, After: &store.ReviewItemKey{Profile: "pf_000005", CreatedAt: due, ID: "rev_005001"}},
		{Team: team, Status: "resolved", Profile: "pf_000006", Limit: limit,
			After: &store.ReviewItemKey{Profile: "pf_000006", CreatedAt: due, ID: "rev_005005"}},
	} {
		sql, args, err := postgres.ReviewItemListSQL(p)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, query{fmt.Sprintf("review items %s %q after=%v", p.Status, p.Profile, p.After != nil), sql, args,
			2 * (limit + 1)})
	}
	for _, q := range queries {
		for _, mode := range []string{"auto", "force_generic_plan"} {
			read, plan := explainReads(t, ctx, pool, mode, q.sql, q.args)
			if testing.Verbose() {
				t.Logf("%s (%s):\n%s", q.name, mode, plan)
			}
			for table, n := range read {
				if n > float64(q.bound) {
					t.Errorf("%s (%s): reads %.0f rows of %s for a page of %d (bound %d)\n%s", q.name, mode, n, table, limit,
						q.bound, plan)
				}
			}
		}
	}

	// The reads return pages in order, each row once, and only the team's rows.
	st := postgres.New(pool, nil)
	seen := map[string]bool{}
	var after *store.CaseListKey
	statuses := []string{}
	for pages := 0; ; pages++ {
		page, err := st.CaseList(ctx, store.CaseListParams{Team: team, Statuses: []conflict.Status{"overdue", "open", "resolved", "dismissed"},
			After: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if seen[string(it.Case.ID)] {
				t.Fatalf("case %s listed twice", it.Case.ID)
			}
			seen[string(it.Case.ID)] = true
			if len(statuses) == 0 || statuses[len(statuses)-1] != string(it.Case.Status) {
				statuses = append(statuses, string(it.Case.Status))
			}
			if it.SubjectName != "production" || len(it.Case.Positions) != 2 || it.Case.Key.Team != team {
				t.Fatalf("case %+v", it)
			}
		}
		if !page.More {
			break
		}
		last := page.Items[len(page.Items)-1].Case
		after = &store.CaseListKey{Status: last.Status, ReviewDueAt: last.ReviewDueAt, ID: last.ID}
	}
	if len(seen) != listBulk || fmt.Sprint(statuses) != "[overdue open resolved dismissed]" {
		t.Errorf("listed %d cases in status runs %v, want %d in [overdue open resolved dismissed]", len(seen), statuses, listBulk)
	}
}

// seedListTeams creates two teams and gives each, in bulk, listBulk conflict cases (statuses in
// turn, each with one event holding two positions), listBulk review items of ten profiles (open and
// resolved in turn), 2,000 profiles and 2,000 predicate keys of three versions each.
func seedListTeams(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []identity.TeamID {
	t.Helper()
	client, err := densemem.New(postgres.New(pool, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	var teams []identity.TeamID
	for _, name := range []string{"one", "two"} {
		team, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		teams = append(teams, team)
	}
	n := fmt.Sprint(listBulk)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		t.Fatal(err)
	}
	const base = `'2026-06-01T00:00:00Z'::timestamptz`
	for _, team := range teams {
		for _, sql := range []string{
			`INSERT INTO profiles (team_id, profile_id, name, status, scopes, created_at, updated_at)
			 SELECT $1, 'pf_' || lpad(g::text, 6, '0'), 'profile ' || g, 'active', '{read}', ` + base + `, ` + base + `
			 FROM generate_series(1, 2000) g`,
			`INSERT INTO predicate_definitions (team_id, predicate_key, version, relationship_kind, current_cardinality, aliases,
			   subject_kinds, object_kinds, value_object, description, created_by, created_at)
			 SELECT $1, 'key_' || lpad(g::text, 6, '0'), v, 'state', 'one', '{}', '{}', '{}', false, '', 'host', ` + base + `
			 FROM generate_series(1, 2000) g, generate_series(1, 3) v`,
			`INSERT INTO entities (team_id, entity_id, entity_kind, identity_context, created_by, ingest_id, created_at)
			 VALUES ($1, 'ent_prod', 'environment', '{}', 'pf_000001', 'ing_seed', ` + base + `)`,
			`INSERT INTO entity_names (team_id, entity_id, name, normalized_name, skeleton, name_kind, created_at)
			 VALUES ($1, 'ent_prod', 'production', 'production', 'production', 'canonical', ` + base + `)`,
			`INSERT INTO conflict_cases (team_id, conflict_id, kind, subject_entity_id, predicate_key, scope, status, version,
			   opened_at, review_due_at, next_review_at, policy_version, opened_by_profile_id, updated_at)
			 SELECT $1, 'cf_' || lpad(g::text, 6, '0'), 'cross_profile_current_state', 'ent_prod', 'deploys_from', 's' || g,
			        (ARRAY['open', 'overdue', 'resolved', 'dismissed'])[g % 4 + 1], 1, ` + base + `,
			        ` + base + ` + g * interval '1 minute', ` + base + `, 1, 'pf_000001', ` + base + `
			 FROM generate_series(1, ` + n + `) g`,
			`INSERT INTO conflict_events (team_id, event_id, conflict_id, case_version, resulting_status, actor_kind,
			   actor_profile_id, reason_code, policy_version, referenced, positions, ingest_id, created_at)
			 SELECT $1, 'cfe_' || g, 'cf_' || lpad(g::text, 6, '0'), 1, 'open', 'profile', 'pf_000001', 'opened', 1, '{}',
			        '[{"position_id": "pos_a", "object": {"entity_id": "ent_main"}, "polarity": "+", "members": []},
			          {"position_id": "pos_b", "object": {"entity_id": "ent_release"}, "polarity": "+", "members": []}]',
			        'ing_seed', ` + base + `
			 FROM generate_series(1, ` + n + `) g`,
			`INSERT INTO review_items (team_id, review_id, ingest_id, placement_item_id, kind, status, profile_id, observation_id,
			   related_ids, choices, created_at)
			 SELECT $1, 'rev_' || lpad(g::text, 6, '0'), 'ing_' || g, 'item', 'pending_evidence',
			        (ARRAY['open', 'resolved'])[g % 2 + 1], 'pf_' || lpad((g % 10 + 1)::text, 6, '0'), 'obs_' || g, '{}', '{}',
			        ` + base + ` + g * interval '1 minute'
			 FROM generate_series(1, ` + n + `) g`,
		} {
			if _, err := tx.Exec(ctx, sql, team); err != nil {
				t.Fatalf("%v\n%s", err, sql)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	return teams
}

package benchload_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/benchload"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/store/postgres"
)

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// newTeam creates, through the public client, a team with an owner profile and the two predicates
// Load uses, and returns Params for it.
func newTeam(t *testing.T, pool *pgxpool.Pool) benchload.Params {
	t.Helper()
	ctx := context.Background()
	client, err := densemem.New(postgres.New(pool, nil), &densemem.Config{Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	team, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "admin", Scopes: []densemem.Scope{"read", "vocabulary"}})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "owner", Scopes: []densemem.Scope{"read", "write"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []densemem.PredicateDefinition{
		{Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", SubjectKinds: []string{"environment"},
			ObjectKinds: []string{"git_branch"}},
		{Key: "works_on", RelationshipKind: "state", CurrentCardinality: "many"},
	} {
		if _, err := client.RegisterPredicate(ctx, densemem.Principal{TeamID: team, ProfileID: admin}, def); err != nil {
			t.Fatal(err)
		}
	}
	return benchload.Params{Team: string(team), Owner: string(owner), Start: t0.Add(time.Minute)}
}

func TestLoadWritesConsistentRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	p := newTeam(t, pool)
	p.Active, p.Subjects = 400, 5
	if err := benchload.Load(ctx, pool, p); err != nil {
		t.Fatal(err)
	}
	rels := p.Active + p.Subjects // each query subject also has one superseded relationship
	filler := p.Filler()
	if filler != 400-4*5 {
		t.Fatalf("Filler() = %d", filler)
	}
	want := map[string]int{
		"entities":                 2*filler + p.Subjects*(1+benchload.PerSubject),
		"entity_names":             2*filler + p.Subjects*(1+benchload.PerSubject),
		"evidence_fragments":       rels,
		"fragment_contents":        rels,
		"observations":             rels,
		"verification_events":      rels,
		"entity_resolution_events": 2 * rels,
		"relationships":            rels,
		"support_links":            rels,
		"relationship_transitions": rels + p.Subjects,
		"semantic_edges":           p.Active,
	}
	for table, n := range want {
		var got int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE team_id = $1", p.Team).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("%s: %d rows, want %d", table, got, n)
		}
	}

	checks := []struct{ name, sql string }{
		{"relationships whose last transition differs from their row", `SELECT count(*) FROM relationships r
			JOIN LATERAL (SELECT * FROM relationship_transitions t WHERE t.team_id = r.team_id AND t.relationship_id = r.relationship_id
			              ORDER BY t.to_version DESC LIMIT 1) t ON true
			WHERE r.team_id = $1 AND (t.to_version, t.to_status, t.to_tier) IS DISTINCT FROM (r.version, r.status, r.tier)
			   OR t.to_valid_to IS DISTINCT FROM r.valid_to`},
		{"relationships recorded before their transitions", `SELECT count(*) FROM relationships r
			JOIN relationship_transitions t ON t.team_id = r.team_id AND t.relationship_id = r.relationship_id
			WHERE r.team_id = $1 AND t.created_at < r.created_at`},
		{"entity names shared by two entities", `SELECT count(*) FROM (SELECT normalized_name FROM entity_names
			WHERE team_id = $1 GROUP BY 1 HAVING count(*) > 1) d`},
		{"supports whose span is outside their fragment", `SELECT count(*) FROM support_links s
			JOIN evidence_fragments f USING (team_id, fragment_id) WHERE s.team_id = $1 AND s.span_end > f.content_length`},
		{"fragments whose length is not their content's", `SELECT count(*) FROM evidence_fragments f
			JOIN fragment_contents c USING (team_id, fragment_id) WHERE f.team_id = $1 AND octet_length(c.content) <> f.content_length`},
		{"fragments matching a query subject that do not cite one", `SELECT count(*) FROM fragment_contents c
			WHERE c.team_id = $1 AND c.search @@ to_tsquery('english', 'qsubject') AND c.content NOT LIKE '%qsubject-%'`},
		{"filler fragments matching a query subject", `SELECT count(*) FROM fragment_contents c
			JOIN support_links s USING (team_id, fragment_id) JOIN relationships r USING (team_id, relationship_id)
			JOIN entity_names n ON n.team_id = r.team_id AND n.entity_id = r.subject_entity_id
			WHERE c.team_id = $1 AND c.search @@ to_tsquery('english', 'qsubject') AND n.name NOT LIKE 'qsubject-%'`},
	}
	for _, c := range checks {
		var n int
		if err := pool.QueryRow(ctx, c.sql, p.Team).Scan(&n); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n != 0 {
			t.Errorf("%s: %d", c.name, n)
		}
	}

	// IDs have the library's shape, so ID-ordered reads behave as on real data.
	shape := regexp.MustCompile(`^rel_[0-9a-hjkmnp-tv-z]{26}$`)
	rows, err := pool.Query(ctx, "SELECT relationship_id FROM relationships WHERE team_id = $1", p.Team)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if !shape.MatchString(id) {
			t.Fatalf("relationship ID %q does not look like the library's", id)
		}
	}
}

func TestLoadRejectsBadParams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	p := newTeam(t, pool)
	for name, mod := range map[string]func(*benchload.Params){
		"too few active":      func(p *benchload.Params) { p.Active = 10 },
		"no start":            func(p *benchload.Params) { p.Active, p.Start = 100, time.Time{} },
		"unknown predicate":   func(p *benchload.Params) { p.Active, p.ManyPredicate = 100, "likes" },
		"too many subjects":   func(p *benchload.Params) { p.Active, p.Subjects = 1000, 101 },
		"owner of other team": func(p *benchload.Params) { p.Active, p.Owner = 100, "pf_nobody" },
	} {
		q := p
		mod(&q)
		if err := benchload.Load(ctx, pool, q); err == nil {
			t.Errorf("%s: Load succeeded", name)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM relationships").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("failed loads left %d relationships", n)
	}
}

func TestWantIsStableAcrossSizes(t *testing.T) {
	t.Parallel()
	small := benchload.Params{Active: 10_000}
	large := benchload.Params{Active: 100_000}
	for i := range small.SubjectCount() {
		for _, v := range benchload.Views {
			a, b := fmt.Sprint(small.Want(i, v)), fmt.Sprint(large.Want(i, v))
			if a != b {
				t.Errorf("subject %d view %s: %s at 10k, %s at 100k", i, v, a, b)
			}
		}
	}
}

// TestVerifyFindsWhatTheTriggersWould checks that the set-based checks standing in for the row
// triggers during a load catch a broken foreign key and a transition without its relationship change.
func TestVerifyFindsWhatTheTriggersWould(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	p := newTeam(t, pool)
	p.Active, p.Subjects = 40, 2
	if err := benchload.Load(ctx, pool, p); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		breakIt    []string
	}{
		{"dangling foreign key", "fragment_contents(team_id, fragment_id) without its evidence_fragments row",
			[]string{"INSERT INTO fragment_contents (team_id, fragment_id, content) VALUES ('" + p.Team + "', 'frg_missing', 'x')"}},
		{"transition ahead of its relationship", "transition without its relationship change", []string{
			"CREATE TEMP TABLE broken ON COMMIT DROP AS SELECT * FROM relationship_transitions LIMIT 1",
			"UPDATE broken SET transition_id = 'trn_broken', from_version = to_version, to_version = to_version + 5",
			"INSERT INTO relationship_transitions SELECT * FROM broken"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if err := benchload.Verify(ctx, tx, []string{"fragment_contents", "relationship_transitions"}); err != nil {
				t.Fatalf("verify before breaking: %v", err)
			}
			for _, sql := range append([]string{"SET LOCAL session_replication_role = replica"}, c.breakIt...) {
				if _, err := tx.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			err = benchload.Verify(ctx, tx, []string{"fragment_contents", "relationship_transitions"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("verify = %v, want an error naming %q", err, c.want)
			}
		})
	}
}

// TestLoadPopularAndHistory: Popular adds one subject per entry with that many active relationships
// on one key, History one subject with that many versions on one key, all but the last superseded by
// the next from its valid_from; the rows pass Load's checks.
func TestLoadPopularAndHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	p := newTeam(t, pool)
	p.Active, p.Subjects, p.Popular, p.History = 40, 2, []int{30, 5}, 12
	if err := benchload.Load(ctx, pool, p); err != nil {
		t.Fatal(err)
	}
	keys := func(name string) string {
		var out string
		if err := pool.QueryRow(ctx, `SELECT string_agg(DISTINCT r.predicate_key || ' ' || r.status || ' ' || n, ', ')
FROM (SELECT r.*, count(*) OVER (PARTITION BY r.predicate_key, r.status) n FROM relationships r
      JOIN entity_names e ON e.team_id = r.team_id AND e.entity_id = r.subject_entity_id
      WHERE r.team_id = $1 AND e.name = $2) r`, p.Team, name).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for name, want := range map[string]string{
		benchload.PopularName(30): "works_on active 30",
		benchload.PopularName(5):  "works_on active 5",
		benchload.HistoryName(12): "deploys_from active 1, deploys_from superseded 11",
	} {
		if got := keys(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	var gaps int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM relationships a JOIN relationships b
    ON b.team_id = a.team_id AND b.subject_entity_id = a.subject_entity_id AND b.predicate_key = a.predicate_key
   AND b.valid_from = a.valid_to
WHERE a.team_id = $1 AND a.status = 'superseded' AND a.subject_entity_id = (SELECT entity_id FROM entity_names
    WHERE team_id = $1 AND name = $2)`, p.Team, benchload.HistoryName(12)).Scan(&gaps); err != nil {
		t.Fatal(err)
	}
	if gaps != 11 {
		t.Errorf("%d closed versions end where the next begins, want 11", gaps)
	}
}

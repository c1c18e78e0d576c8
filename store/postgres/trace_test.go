package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/store/postgres"
)

// traceBulk is how many rows the plan test gives each long list.
const traceBulk = 10000

// TestTracePlansReadOnlyAPage checks, with EXPLAIN ANALYZE under custom and generic plans, that each
// Trace list reads about one page of rows from every table however long the list is: a hub subject
// with 10k resolution events from other observations, a relationship with 10k supports (each with
// its observation, verification and resolution events), 10k incoming cross-references, 10k review
// items about it, and a case with 10k events.
func TestTracePlansReadOnlyAPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	team, rel := seedTraceHub(t, ctx, pool)
	const limit = 50
	neg := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for list, sql := range postgres.TraceListSQL {
		args := []any{team, rel, neg, "", limit + 1}
		switch list {
		case "evidence":
			args = []any{team, rel, neg, "", "", "", limit + 1, true, int64(1 << 20)}
		case "verifications":
			args = []any{team, rel, neg, "", "", limit + 1}
		case "transitions":
			args = []any{team, rel, 0, limit + 1}
		case "conflict_events":
			args = append(args, []string{}, []int32{})
		case "conflict_supports":
			args = append(args, limit+1) // the case's members have more than 10k support links
		}
		for _, mode := range []string{"auto", "force_generic_plan"} {
			read, plan := explainReads(t, ctx, pool, mode, sql, args)
			if testing.Verbose() {
				t.Logf("%s (%s):\n%s", list, mode, plan)
			}
			for table, n := range read {
				if n > 4*(limit+1) {
					t.Errorf("%s (%s): reads %.0f rows of %s for a page of %d\n%s", list, mode, n, table, limit, plan)
				}
			}
		}
	}
}

// explainReads runs sql under EXPLAIN (ANALYZE, FORMAT JSON) with the given plan_cache_mode, in a
// transaction set up as TraceLoad's is, and returns the rows each table's scans produced or filtered
// out, with the plan for messages.
func explainReads(t *testing.T, ctx context.Context, pool *pgxpool.Pool, mode, sql string, args []any) (map[string]float64, string) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, set := range []string{postgres.TraceNoParallelSQL, "SELECT set_config('plan_cache_mode', '" + mode + "', true)",
		fmt.Sprintf("SELECT set_config('densemem.team', '%s', true)", args[0])} {
		if _, err := tx.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) "+sql, args...).Scan(&raw); err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	type node struct {
		Type     string  `json:"Node Type"`
		Relation string  `json:"Relation Name"`
		Rows     float64 `json:"Actual Rows"`
		Loops    float64 `json:"Actual Loops"`
		Removed  float64 `json:"Rows Removed by Filter"`
		Recheck  float64 `json:"Rows Removed by Index Recheck"`
		Plans    []node  `json:"Plans"`
	}
	var plans []struct{ Plan node }
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	read := map[string]float64{}
	var lines []string
	var walk func(n node, depth int)
	walk = func(n node, depth int) {
		lines = append(lines, fmt.Sprintf("%s%s %s rows=%.0f loops=%.0f removed=%.0f", strings.Repeat("  ", depth), n.Type,
			n.Relation, n.Rows, n.Loops, n.Removed+n.Recheck))
		if n.Relation != "" {
			read[n.Relation] += (n.Rows + n.Removed + n.Recheck) * n.Loops
		}
		for _, c := range n.Plans {
			walk(c, depth+1)
		}
	}
	walk(plans[0].Plan, 0)
	return read, strings.Join(lines, "\n")
}

// seedTraceHub builds, through the client and then in bulk, a team whose relationship "production
// deploys_from main" has long lists, and returns the team and the relationship.
func seedTraceHub(t *testing.T, ctx context.Context, pool *pgxpool.Pool) (densemem.TeamID, densemem.RelationshipID) {
	t.Helper()
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	client, err := densemem.New(postgres.New(pool, nil), &densemem.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	team, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "hub"})
	if err != nil {
		t.Fatal(err)
	}
	var ps []densemem.Principal
	for _, name := range []string{"a", "b"} {
		pf, err := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: name,
			Scopes: []densemem.Scope{"read", "write", "vocabulary"}})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, densemem.Principal{TeamID: team, ProfileID: pf})
	}
	if _, err := client.RegisterPredicate(ctx, ps[0], densemem.PredicateDefinition{Key: "deploys_from", RelationshipKind: "state",
		CurrentCardinality: "one", Aliases: []string{"deploys from"}, Description: "the branch an environment deploys from"}); err != nil {
		t.Fatal(err)
	}
	remember := func(p densemem.Principal, key, branch string) densemem.RelationshipID {
		content := "The production environment deploys from the " + branch + " branch."
		pl, err := client.Remember(ctx, p, densemem.RememberRequest{IdempotencyKey: key,
			Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
			Proposal: densemem.Proposal{Entities: []densemem.ProposedEntity{{Ref: "s", Name: "production", EntityKind: "environment"},
				{Ref: "o", Name: branch, EntityKind: "git_branch"}},
				Relationships: []densemem.ProposedRelationship{{ProposalID: "p", SubjectRef: "s", Predicate: "deploys_from", ObjectRef: "o",
					Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
		return pl.RelationshipOutcomes[0].RelationshipID
	}
	rel := remember(ps[0], "k1", "main")
	remember(ps[0], "k2", "main")
	remember(ps[1], "k3", "dev") // a cross-reference to rel and a case with it
	n := fmt.Sprint(traceBulk)
	// Bulk rows go in with row triggers off, as internal/testsupport/benchload copies: the foreign-key checks
	// would run with plans cached while the tables were nearly empty (decision 32).
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		// Observations of other relationships naming the hub (the relationship's subject), each
		// with its resolution event; then observations supporting the relationship, each with its
		// verification, support link and two resolution events.
		`INSERT INTO observations (team_id, observation_id, ingest_id, profile_id, proposal_id, subject_ref, subject_name,
		   predicate_phrase, predicate_key, predicate_version, object_ref, object_name, object_value, polarity, modality, scope,
		   valid_from, valid_to, citations, created_at)
		 SELECT o.team_id, k || g, 'ing_' || k || g, o.profile_id, o.proposal_id, o.subject_ref, o.subject_name,
		        o.predicate_phrase, o.predicate_key, o.predicate_version, o.object_ref, o.object_name, o.object_value, o.polarity,
		        o.modality, o.scope, o.valid_from, o.valid_to, o.citations, o.created_at + g * interval '1 second'
		 FROM observations o JOIN relationships r ON r.team_id = o.team_id AND r.observation_id = o.observation_id,
		      generate_series(1, ` + n + `) g, (VALUES ('obs_hub_'), ('obs_sup_')) v(k)
		 WHERE r.team_id = $1 AND r.relationship_id = $2`,
		`INSERT INTO entity_resolution_events (team_id, resolution_id, observation_id, mention_ref, mention_name, entity_kind,
		   entity_id, decision, candidate_ids, profile_id, ingest_id, created_at)
		 SELECT e.team_id, 'res_' || k || e.mention_ref || g, 'obs_' || k || g, e.mention_ref, e.mention_name, e.entity_kind,
		        e.entity_id, 'reused', '{}', e.profile_id, 'ing_obs_' || k || g, e.created_at + g * interval '1 second'
		 FROM entity_resolution_events e JOIN relationships r ON r.team_id = e.team_id AND r.observation_id = e.observation_id,
		      generate_series(1, ` + n + `) g, (VALUES ('hub_'), ('sup_')) v(k)
		 WHERE r.team_id = $1 AND r.relationship_id = $2 AND (k = 'sup_' OR e.mention_ref = 's')`,
		`INSERT INTO verification_events (team_id, verification_id, observation_id, verifier, verdict, confidence, rationale,
		   confirmed_valid_from, support_granted, created_at)
		 SELECT v.team_id, 'ver_sup_' || g, 'obs_sup_' || g, v.verifier, v.verdict, v.confidence, v.rationale,
		        v.confirmed_valid_from, v.support_granted, v.created_at + g * interval '1 second'
		 FROM verification_events v JOIN relationships r ON r.team_id = v.team_id AND r.observation_id = v.observation_id,
		      generate_series(1, ` + n + `) g
		 WHERE r.team_id = $1 AND r.relationship_id = $2`,
		`INSERT INTO support_links (team_id, support_id, relationship_id, fragment_id, observation_id, verification_id, span_start,
		   span_end, source_group, content_sha256, authority, author_profile_id, profile_id, ingest_id, created_at)
		 SELECT s.team_id, 'sup_sup_' || g, s.relationship_id, s.fragment_id, 'obs_sup_' || g, 'ver_sup_' || g, s.span_start,
		        s.span_end, s.source_group, s.content_sha256, s.authority, s.author_profile_id, s.profile_id, 'ing_obs_sup_' || g,
		        s.created_at + g * interval '1 second'
		 FROM support_links s JOIN relationships r ON r.team_id = s.team_id AND r.observation_id = s.observation_id,
		      generate_series(1, ` + n + `) g
		 WHERE r.team_id = $1 AND r.relationship_id = $2`,
		// Cross-references to the relationship from the other profile's.
		`INSERT INTO relationship_cross_references (team_id, xref_id, kind, from_relationship_id, from_version, to_relationship_id,
		   to_version, author_profile_id, verification_id, ingest_id, created_at)
		 SELECT x.team_id, 'xref_bulk_' || g, x.kind, x.from_relationship_id, x.from_version, x.to_relationship_id, x.to_version,
		        x.author_profile_id, x.verification_id, 'ing_xref_' || g, x.created_at + g * interval '1 second'
		 FROM relationship_cross_references x, generate_series(1, ` + n + `) g
		 WHERE x.team_id = $1 AND x.to_relationship_id = $2`,
		// Review items about the relationship, and a few naming it as a related prior.
		`INSERT INTO review_items (team_id, review_id, ingest_id, placement_item_id, kind, status, profile_id, observation_id,
		   relationship_id, related_ids, choices, created_at)
		 SELECT r.team_id, 'rev_bulk_' || g, 'ing_rev_' || g, 'p', 'pending_evidence', 'open', r.owner_profile_id, r.observation_id,
		        CASE WHEN g % 1000 = 0 THEN NULL ELSE r.relationship_id END,
		        CASE WHEN g % 1000 = 0 THEN ARRAY[r.relationship_id] ELSE '{}' END, '{}', r.created_at + g * interval '1 second'
		 FROM relationships r, generate_series(1, ` + n + `) g
		 WHERE r.team_id = $1 AND r.relationship_id = $2`,
		// Events of the relationship's case.
		`INSERT INTO conflict_events (team_id, event_id, conflict_id, case_version, prior_status, resulting_status, actor_kind,
		   actor_profile_id, reason_code, policy_version, time_basis, referenced, positions, ingest_id, created_at)
		 SELECT e.team_id, 'cev_bulk_' || g, e.conflict_id, e.case_version + g, e.resulting_status, e.resulting_status, e.actor_kind,
		        e.actor_profile_id, 'membership_changed', e.policy_version, e.time_basis, e.referenced, e.positions, 'ing_cev_' || g,
		        e.created_at + g * interval '1 second'
		 FROM conflict_events e, generate_series(1, ` + n + `) g
		 WHERE e.team_id = $1 AND e.conflict_id IN (SELECT conflict_id FROM conflict_position_members WHERE team_id = $1 AND relationship_id = $2)`,
	} {
		tag, err := tx.Exec(ctx, sql, team, rel)
		if err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
		if tag.RowsAffected() < traceBulk {
			t.Fatalf("seeded %d rows, want at least %d:\n%s", tag.RowsAffected(), traceBulk, sql)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	// The client reads what was seeded: every list is long.
	tr, err := client.Trace(ctx, ps[0], densemem.TraceRequest{RelationshipID: rel, IncludeVerification: true, IncludeTransitions: true})
	if err != nil {
		t.Fatal(err)
	}
	var cut []string
	for _, x := range tr.Truncated {
		cut = append(cut, x.List)
	}
	sort.Strings(cut)
	want := "conflicts.*.events cross_references evidence identity_resolutions observations review_items verifications"
	if got := strings.Join(cut, " "); !strings.HasPrefix(got, "conflicts.") || !strings.HasSuffix(got, want[len("conflicts.*.events"):]) {
		t.Fatalf("truncated lists: %s, want %s", got, want)
	}
	return team, rel
}

package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
)

// snapshotAll reads every row of every table in one snapshot (as the superuser, beyond row-level
// security).
func (e *env) snapshotAll() map[string][]string {
	e.t.Helper()
	out := map[string][]string{}
	e.snapshot(func(l ledgerView) {
		for _, t := range l.Tables() {
			out[t] = l.Rows(t)
		}
	})
	return out
}

// asRole runs stmt in a transaction of team on pool (a role's pool), committing when it succeeds,
// and returns the error's SQLSTATE ("" for none).
func asRole(ctx context.Context, pool *pgxpool.Pool, key []byte, team densemem.TeamID, stmt string, args ...any) (string, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, teamSQL, bindArgs(tx, key, team)...); err != nil {
		return "", err
	}
	_, err = tx.Exec(ctx, stmt, args...)
	if err == nil {
		err = tx.Commit(ctx)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, err
	}
	return "", err
}

// TestRuntimeRoleCannotBypassTheLedger repeats, as the runtime role the library connects as, every
// bypass the hardening review found against the documented superuser role, and as the reviewer role
// what the reviewer must never write: each is refused by PostgreSQL and nothing changes.
func TestRuntimeRoleCannotBypassTheLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.remember(e.A, deploy("production", "main"))
	b := e.remember(e.B, deploy("production", "release"))
	if b.Conflict == nil {
		t.Fatalf("no case opened: %+v", b)
	}
	if held := e.remember(e.A, deploy("production", "release")); held.Review == nil {
		t.Fatalf("A's release: %+v, want it held with an item the forged items copy", held)
	}
	if cases, err := e.client.ListConflicts(e.ctx, e.admin, densemem.ListConflictsRequest{}); err != nil || len(cases.Conflicts) != 1 {
		t.Fatalf("open conflict cases: %+v, %v; want the one the forged rows copy", cases, err)
	}
	before := e.snapshotAll()

	for _, tc := range []struct {
		name  string
		pool  *pgxpool.Pool
		stmt  string
		args  []any
		codes []string // any of these SQLSTATEs
	}{
		{"session_replication_role", e.runtime, "SET LOCAL session_replication_role = replica", nil, []string{"42501"}},
		{"disable an append-only trigger", e.runtime, "ALTER TABLE evidence_fragments DISABLE TRIGGER evidence_fragments_append_only", nil, []string{"42501"}},
		{"drop an append-only trigger", e.runtime, "DROP TRIGGER fragment_contents_append_only ON fragment_contents", nil, []string{"42501"}},
		{"update a fragment's content", e.runtime, "UPDATE fragment_contents SET content = 'rewritten'", nil, []string{"42501"}},
		{"delete a support link", e.runtime, "DELETE FROM support_links", nil, []string{"42501"}},
		{"truncate relationships", e.runtime, "TRUNCATE relationships", nil, []string{"42501"}},
		{"rename an authored field", e.runtime, "UPDATE relationships SET owner_profile_id = $1", []any{string(e.C.ProfileID)}, []string{"42501"}},
		{"forge a case event", e.runtime, `INSERT INTO conflict_events SELECT (jsonb_populate_record(NULL::conflict_events,
			to_jsonb(x) || jsonb_build_object('event_id', 'cfe_forged', 'case_version', x.case_version + 1,
			'resulting_status', 'dismissed'))).* FROM conflict_events x LIMIT 1`, nil, []string{"DM002"}},
		{"forge a reviewer case event", e.runtime, `INSERT INTO conflict_events SELECT (jsonb_populate_record(NULL::conflict_events,
			to_jsonb(x) || jsonb_build_object('event_id', 'cfe_forged', 'actor_kind', 'system_conflict_reviewer',
			'actor_profile_id', NULL))).* FROM conflict_events x LIMIT 1`, nil, []string{"DM004"}},
		{"forge a reviewer transition", e.runtime, `INSERT INTO relationship_transitions SELECT (jsonb_populate_record(
			NULL::relationship_transitions, to_jsonb(x) || jsonb_build_object('transition_id', 'trn_forged', 'to_version', 99,
			'actor_kind', 'system_conflict_reviewer', 'actor_profile_id', NULL))).* FROM relationship_transitions x LIMIT 1`,
			nil, []string{"DM004"}},
		{"resolve a case", e.runtime, "UPDATE conflict_cases SET status = 'resolved', version = version + 1", nil, []string{"DM004"}},
		{"set a case's resolution", e.runtime, "UPDATE conflict_cases SET preferred_position_id = 'pos_x'", nil, []string{"42501"}},
		{"claim a case", e.runtime, "UPDATE conflict_cases SET claim_token = 'clm_x'", nil, []string{"42501"}},
		{"list every team's due cases", e.runtime, "SELECT densemem_teams_with_due_cases(now())", nil, []string{"42501"}},
		{"search another team", e.runtime, "SELECT * FROM densemem_search_hits('tm_other', 'production', NULL, 10)", nil, []string{"42501"}},
		{"write another team's row", e.runtime, "INSERT INTO teams (team_id, name, created_at) VALUES ('tm_other', 'x', now())", nil, []string{"42501"}},
		{"reviewer inserts evidence", e.reviewer, `INSERT INTO fragment_contents SELECT team_id, 'frg_forged', content FROM fragment_contents LIMIT 1`,
			nil, []string{"42501"}},
		{"reviewer retracts", e.reviewer, "UPDATE relationships SET status = 'retracted', version = version + 1", nil, []string{"DM004"}},
		{"reviewer writes a profile transition", e.reviewer, `INSERT INTO relationship_transitions SELECT (jsonb_populate_record(
			NULL::relationship_transitions, to_jsonb(x) || jsonb_build_object('transition_id', 'trn_forged', 'to_version', 99,
			'actor_kind', 'profile'))).* FROM relationship_transitions x LIMIT 1`, nil, []string{"DM004"}},
		// The reviewer may issue a held statement's question again and close one as superseded
		// (migration 22), nothing else of review items.
		{"reviewer opens an identity item", e.reviewer, `INSERT INTO review_items SELECT (jsonb_populate_record(NULL::review_items,
			to_jsonb(x) || jsonb_build_object('review_id', 'rev_forged', 'placement_item_id', 'item_forged', 'kind', 'identity'))).*
			FROM review_items x LIMIT 1`, nil, []string{"DM004"}},
		{"reviewer opens a resolved item", e.reviewer, `INSERT INTO review_items SELECT (jsonb_populate_record(NULL::review_items,
			to_jsonb(x) || jsonb_build_object('review_id', 'rev_forged', 'placement_item_id', 'item_forged', 'status', 'resolved',
			'resolved_at', now()))).* FROM review_items x LIMIT 1`, nil, []string{"DM004"}},
		{"reviewer resolves an item", e.reviewer, "UPDATE review_items SET status = 'resolved', resolved_at = now()", nil, []string{"DM004"}},
		{"reviewer decides an item", e.reviewer, "UPDATE review_items SET decision_id = 'dec_x'", nil, []string{"42501"}},
		{"reviewer deletes an item", e.reviewer, "DELETE FROM review_items", nil, []string{"42501"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, err := asRole(e.ctx, tc.pool, e.bindingKey, e.team, tc.stmt, tc.args...)
			ok := false
			for _, c := range tc.codes {
				ok = ok || c == code
			}
			if !ok {
				t.Errorf("%s: %v (SQLSTATE %q), want one of %v", tc.stmt, err, code, tc.codes)
			}
		})
	}
	if diff := cmp.Diff(before, e.snapshotAll()); diff != "" {
		t.Errorf("a refused bypass changed rows (-before +after):\n%s", diff)
	}
}

// TestRowLevelSecurityIsolatesTeams: a query as the runtime role that forgets its team filter sees
// only the rows of the team its transaction named, and nothing at all without one.
func TestRowLevelSecurityIsolatesTeams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.remember(e.A, deploy("production", "main"))
	other := e.mustTeam("other")
	count := func(team densemem.TeamID) map[string]int {
		out := map[string]int{}
		tx, err := e.runtime.Begin(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(e.ctx) }()
		if _, err := tx.Exec(e.ctx, teamSQL, bindArgs(tx, e.bindingKey, team)...); err != nil {
			t.Fatal(err)
		}
		for _, table := range e.ledger().Tables() {
			var n int
			var may bool
			if err := tx.QueryRow(e.ctx, "SELECT has_table_privilege('densemem.' || $1, 'SELECT')", table).Scan(&may); err != nil {
				t.Fatal(err)
			}
			if !may {
				continue // no SELECT at all for this role (the binding keys): fine
			}
			if err := tx.QueryRow(e.ctx, fmt.Sprintf("SELECT count(*) FROM %s", table)).Scan(&n); err != nil {
				if code, _ := asCode(err); code == "42501" {
					continue // no SELECT at all for this role: fine
				}
				t.Fatalf("%s: %v", table, err)
			}
			if n > 0 {
				out[table] = n
			}
		}
		return out
	}
	mine, theirs, none := count(e.team), count(other), count("")
	if mine["relationships"] != 1 || mine["teams"] != 1 || mine["profiles"] != 4 {
		t.Errorf("own team: %v, want its rows", mine)
	}
	if theirs["relationships"] != 0 || theirs["teams"] != 1 || theirs["evidence_fragments"] != 0 {
		t.Errorf("other team: %v, want only its own team row and policy", theirs)
	}
	if len(none) > 0 {
		t.Errorf("no team set: sees %v, want nothing", none)
	}
}

func asCode(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, true
	}
	return "", false
}

package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/postgres"
)

// sqlState runs stmt in a transaction of team on pool, committing when it succeeds, and returns the
// error's SQLSTATE ("" for none).
func sqlState(t *testing.T, ctx context.Context, pool *pgxpool.Pool, team identity.TeamID, stmt string) string {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	key := bindingKey(t, pool)
	if _, err := tx.Exec(ctx, "SELECT set_config('densemem.team', $1, true), set_config('densemem.binding', $2, true), "+
		"set_config('search_path', 'densemem', true)", string(team), postgres.SessionBinding(key, team, "", tx.Conn().PgConn().PID())); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, stmt)
	if err == nil {
		err = tx.Commit(ctx)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return ""
}

// decisionFixture is a team with a profile, two review items, the first resolved by a decision
// through the runtime role's store, the second open.
type decisionFixture struct {
	ctx      context.Context
	pool     *pgxpool.Pool // the superuser's, beyond row-level security
	st       *postgres.Store
	team     identity.TeamID
	resolved store.ReviewItemRow
	open     store.ReviewItemRow
	decision store.DecisionRow
}

func newDecisionFixture(t *testing.T) *decisionFixture {
	t.Helper()
	f := &decisionFixture{ctx: context.Background(), pool: testdb.New(t), team: "tm_dec"}
	f.st = roleStore(t, f.pool, migrations.DefaultRuntimeRole)
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	if err := f.st.TeamCreate(f.ctx, store.TeamCreateParams{Team: f.team, Name: "dec", CreatedAt: now,
		Policy: store.Policy{ReviewTTL: 7 * 24 * time.Hour, AutoWriteThreshold: 0.7, TimeZone: "UTC", CreatedBy: "system", CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.ProfileCreate(f.ctx, store.ProfileCreateParams{Team: f.team, Profile: "pf_a", Name: "a",
		Scopes: []identity.Scope{identity.ScopeWrite}, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	item := func(id string) store.ReviewItemRow {
		return store.ReviewItemRow{Team: f.team, ID: "rev_" + id, IngestID: "ing_1", PlacementItemID: "item_" + id,
			Kind: "relationship_held", Profile: "pf_a", ObservationID: "obs_1", RelationshipID: "rel_1",
			Related: []string{"rel_2"}, Choices: json.RawMessage(`[]`), RelationshipVersion: 2, RelatedVersions: []int{1}, CreatedAt: now}
	}
	f.resolved, f.open = item("1"), item("2")
	f.decision = f.decisionRow("dec_1", f.resolved)
	f.apply(t, store.WriteSet{ReviewItems: []store.ReviewItemRow{f.resolved, f.open}})
	f.apply(t, store.WriteSet{Decisions: []store.DecisionRow{f.decision},
		ItemCloses: []store.ReviewItemClose{{Team: f.team, ID: f.resolved.ID, Status: store.ReviewResolved, ClosedAt: now, DecisionID: "dec_1"}}})
	return f
}

func (f *decisionFixture) decisionRow(id string, it store.ReviewItemRow) store.DecisionRow {
	return store.DecisionRow{Team: f.team, ID: id, Profile: "pf_a", ReviewID: it.ID, ItemIngestID: it.IngestID,
		PlacementItemID: it.PlacementItemID, Action: "keep", Decision: json.RawMessage(`{"action":"keep"}`),
		FragmentIDs: []string{"frg_1"}, Reason: "checked", Changes: json.RawMessage(`[]`), IngestID: "ing_" + id,
		IdempotencyKey: "key_" + id, CreatedAt: it.CreatedAt.Add(time.Minute)}
}

// tryApply writes ws in one transaction of the fixture's team, named by ReviewItemLock of the open
// item.
func (f *decisionFixture) tryApply(ws store.WriteSet) error {
	return f.st.Tx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.ReviewItemLock(ctx, f.team, f.open.IngestID, f.open.PlacementItemID); err != nil {
			return err
		}
		return tx.WriteSetApply(ctx, ws)
	})
}

func (f *decisionFixture) apply(t *testing.T, ws store.WriteSet) {
	t.Helper()
	if err := f.st.Tx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.KeysLock(ctx, store.KeysLockParams{Team: f.team}); err != nil {
			return err
		}
		return tx.WriteSetApply(ctx, ws)
	}); err != nil {
		t.Fatal(err)
	}
}

func (f *decisionFixture) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestDecisionLedgerIsAppendOnly: a decision row as written, which nobody may change or remove — the
// runtime role lacks the privilege, and the trigger refuses even the superuser — and which the
// reviewer role may not write; nor may it close an item other than as superseded.
func TestDecisionLedgerIsAppendOnly(t *testing.T) {
	t.Parallel()
	f := newDecisionFixture(t)
	var row string
	if err := f.pool.QueryRow(f.ctx, `SELECT concat_ws('|', profile_id, review_id, item_ingest_id, placement_item_id, action,
		decision::text, fragment_ids::text, reason, changes::text, ingest_id, idempotency_key) FROM placement_decisions`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	if want := `pf_a|rev_1|ing_1|item_1|keep|{"action": "keep"}|{frg_1}|checked|[]|ing_dec_1|key_dec_1`; row != want {
		t.Errorf("decision row %s, want %s", row, want)
	}
	runtime := testdb.AsRole(t, f.pool, migrations.DefaultRuntimeRole)
	reviewer := testdb.AsRole(t, f.pool, migrations.DefaultReviewerRole)
	for _, c := range []struct {
		name string
		pool *pgxpool.Pool
		stmt string
		code string
	}{
		{"superuser updates", f.pool, `UPDATE placement_decisions SET reason = 'rewritten'`, "DM001"},
		{"superuser deletes", f.pool, `DELETE FROM placement_decisions`, "DM001"},
		{"superuser truncates", f.pool, `TRUNCATE placement_decisions CASCADE`, "DM001"},
		{"runtime updates", runtime, `UPDATE placement_decisions SET reason = 'rewritten'`, "42501"},
		{"runtime deletes", runtime, `DELETE FROM placement_decisions`, "42501"},
		{"reviewer inserts", reviewer, `INSERT INTO placement_decisions SELECT (jsonb_populate_record(NULL::placement_decisions,
			to_jsonb(d) || '{"decision_id": "dec_forged"}')).* FROM placement_decisions d`, "42501"},
		// The reviewer may close an item only as superseded (migration 22: a question its resolution moved).
		{"reviewer expires an item", reviewer, `UPDATE review_items SET status = 'expired', resolved_at = now()
			WHERE review_id = 'rev_2'`, "DM004"},
		{"reviewer resolves an item", reviewer, `UPDATE review_items SET status = 'resolved', resolved_at = now()
			WHERE review_id = 'rev_2'`, "DM004"},
		{"reviewer decides an item", reviewer, `UPDATE review_items SET decision_id = 'dec_1' WHERE review_id = 'rev_2'`, "42501"},
	} {
		if got := sqlState(t, f.ctx, c.pool, f.team, c.stmt); got != c.code {
			t.Errorf("%s: SQLSTATE %q, want %s", c.name, got, c.code)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM placement_decisions WHERE reason = 'checked'`); n != 1 {
		t.Errorf("%d decision rows as written, want 1", n)
	}
	if n := f.count(t, `SELECT count(*) FROM review_items WHERE status = 'open'`); n != 1 {
		t.Errorf("%d open review items, want 1", n)
	}
}

// TestReviewItemCloseFailureLeavesNoDecision: a write set whose close of an already resolved item
// fails leaves none of its rows — not its decision, not its close of an open item; a close naming a
// decision that does not exist, and an item whose related versions are not parallel to its related
// relationships, are integrity errors.
func TestReviewItemCloseFailureLeavesNoDecision(t *testing.T) {
	t.Parallel()
	f := newDecisionFixture(t)
	now := f.open.CreatedAt.Add(time.Hour)
	err := f.tryApply(store.WriteSet{
		Decisions: []store.DecisionRow{f.decisionRow("dec_2", f.open), f.decisionRow("dec_3", f.resolved)},
		ItemCloses: []store.ReviewItemClose{
			{Team: f.team, ID: f.open.ID, Status: store.ReviewResolved, ClosedAt: now, DecisionID: "dec_2"},
			{Team: f.team, ID: f.resolved.ID, Status: store.ReviewResolved, ClosedAt: now, DecisionID: "dec_3"}},
	})
	if !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("close of a resolved item: err = %v, want ErrStaleVersion", err)
	}
	if n := f.count(t, `SELECT count(*) FROM placement_decisions WHERE decision_id <> 'dec_1'`); n != 0 {
		t.Errorf("%d decision rows of the failed write set remain", n)
	}
	if n := f.count(t, `SELECT count(*) FROM review_items WHERE status = 'open' AND review_id = 'rev_2'`); n != 1 {
		t.Errorf("the open item's close of the failed write set remains")
	}

	err = f.tryApply(store.WriteSet{ItemCloses: []store.ReviewItemClose{
		{Team: f.team, ID: f.open.ID, Status: store.ReviewResolved, ClosedAt: now, DecisionID: "dec_missing"}}})
	if !errors.Is(err, store.ErrIntegrity) {
		t.Errorf("close naming a missing decision: err = %v, want ErrIntegrity", err)
	}
	bad := f.open
	bad.ID, bad.PlacementItemID, bad.RelatedVersions = "rev_bad", "item_bad", []int{1, 2}
	if err := f.tryApply(store.WriteSet{ReviewItems: []store.ReviewItemRow{bad}}); !errors.Is(err, store.ErrIntegrity) {
		t.Errorf("item with two related versions for one related relationship: err = %v, want ErrIntegrity", err)
	}
	// A decision about an item that does not exist.
	ghost := f.open
	ghost.ID = "rev_missing"
	if err := f.tryApply(store.WriteSet{Decisions: []store.DecisionRow{f.decisionRow("dec_ghost", ghost)}}); !errors.Is(err, store.ErrIntegrity) {
		t.Errorf("decision on a missing item: err = %v, want ErrIntegrity", err)
	}
}

// TestReviewItemGuard: the lifecycle trigger makes closing the only change of a review item, once —
// whoever updates it, the superuser included: a closed item cannot be reopened or closed again, an
// open item cannot stay open, be closed without its closing time or have another column changed. The
// runtime role may not update any other column in the first place.
func TestReviewItemGuard(t *testing.T) {
	t.Parallel()
	f := newDecisionFixture(t)
	runtime := testdb.AsRole(t, f.pool, migrations.DefaultRuntimeRole)
	for _, c := range []struct {
		name string
		pool *pgxpool.Pool
		stmt string
		code string
	}{
		{"reopen", f.pool, `UPDATE review_items SET status = 'open', resolved_at = NULL, decision_id = NULL WHERE review_id = 'rev_1'`, "DM001"},
		{"close again", f.pool, `UPDATE review_items SET status = 'expired' WHERE review_id = 'rev_1'`, "DM001"},
		{"change a closed item's decision", f.pool, `UPDATE review_items SET decision_id = NULL WHERE review_id = 'rev_1'`, "DM001"},
		{"runtime reopens", runtime, `UPDATE review_items SET status = 'open' WHERE review_id = 'rev_1'`, "DM001"},
		{"stay open", f.pool, `UPDATE review_items SET resolved_at = now() WHERE review_id = 'rev_2'`, "DM001"},
		{"close without time", f.pool, `UPDATE review_items SET status = 'expired' WHERE review_id = 'rev_2'`, "DM001"},
		{"close and change kind", f.pool, `UPDATE review_items SET status = 'expired', resolved_at = now(), kind = 'identity'
			WHERE review_id = 'rev_2'`, "DM001"},
		{"close and change versions", f.pool, `UPDATE review_items SET status = 'expired', resolved_at = now(),
			relationship_version = 3 WHERE review_id = 'rev_2'`, "DM001"},
		{"unknown status", f.pool, `UPDATE review_items SET status = 'dropped', resolved_at = now() WHERE review_id = 'rev_2'`, "23514"},
		{"runtime changes choices", runtime, `UPDATE review_items SET choices = '[]' WHERE review_id = 'rev_2'`, "42501"},
		{"runtime deletes", runtime, `DELETE FROM review_items`, "42501"},
	} {
		if got := sqlState(t, f.ctx, c.pool, f.team, c.stmt); got != c.code {
			t.Errorf("%s: SQLSTATE %q, want %s", c.name, got, c.code)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM review_items WHERE (review_id = 'rev_1' AND status = 'resolved' AND decision_id = 'dec_1')
		OR (review_id = 'rev_2' AND status = 'open' AND resolved_at IS NULL AND kind = 'relationship_held')`); n != 2 {
		t.Errorf("a refused update changed a review item")
	}
	// The one allowed change, as the runtime role: closing an open item.
	if got := sqlState(t, f.ctx, runtime, f.team, `UPDATE review_items SET status = 'expired', resolved_at = now()
		WHERE review_id = 'rev_2'`); got != "" {
		t.Errorf("runtime expires an open item: SQLSTATE %q, want success", got)
	}
	it, err := f.st.ReviewItemGet(f.ctx, f.team, f.open.IngestID, f.open.PlacementItemID)
	if err != nil || it.Status != store.ReviewExpired || it.ResolvedAt == nil || it.DecisionID != "" ||
		it.RelationshipVersion != 2 || len(it.RelatedVersions) != 1 {
		t.Errorf("expired item: %+v, %v", it, err)
	}
}

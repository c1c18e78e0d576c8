package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// reviewItemColumns are the columns of a review item with its lifecycle, as scanReviewItem reads
// them.
const reviewItemColumns = `review_id, ingest_id, placement_item_id, kind, status, profile_id, observation_id,
       COALESCE(relationship_id, ''), related_ids, choices, relationship_version, related_versions, created_at,
       resolved_at, COALESCE(decision_id, '')`

// reviewItemGetSQL reads a review item by its placement item (review_items' unique key).
const reviewItemGetSQL = `-- name: ReviewItemGet
SELECT ` + reviewItemColumns + `
FROM {schema}.review_items WHERE team_id = $1 AND ingest_id = $2 AND placement_item_id = $3`

// reviewItemLockSQL is reviewItemGetSQL holding the item's row until the transaction ends.
const reviewItemLockSQL = `-- name: ReviewItemLock
SELECT ` + reviewItemColumns + `
FROM {schema}.review_items WHERE team_id = $1 AND ingest_id = $2 AND placement_item_id = $3
FOR UPDATE`

// queueReviewItem queues sql (reviewItemGetSQL or reviewItemLockSQL) for the item of team, ingestID
// and itemID into *dst; a missing item fails the batch with pgx.ErrNoRows (translate: ErrNotFound).
func queueReviewItem(b *pgx.Batch, dst *store.ReviewItem, sql string, team identity.TeamID, ingestID, itemID string) {
	b.Queue(sql, team, ingestID, itemID).QueryRow(func(row pgx.Row) error {
		var it store.ReviewItem
		var choices []byte
		err := row.Scan(&it.ID, &it.IngestID, &it.PlacementItemID, &it.Kind, &it.Status, &it.Profile, &it.ObservationID,
			&it.RelationshipID, &it.Related, &choices, &it.RelationshipVersion, &it.RelatedVersions, &it.CreatedAt,
			&it.ResolvedAt, &it.DecisionID)
		if err != nil {
			return err
		}
		it.Team, it.Choices = team, json.RawMessage(choices)
		*dst = it
		return nil
	})
}

// ReviewItemGet reads the review item of placement item itemID of ingest ingestID, in a read-only
// transaction of team. ErrNotFound when the team has none.
func (s *Store) ReviewItemGet(ctx context.Context, team identity.TeamID, ingestID, itemID string) (store.ReviewItem, error) {
	var it store.ReviewItem
	b := &pgx.Batch{}
	queueReviewItem(b, &it, reviewItemGetSQL, team, ingestID, itemID)
	if err := s.send(ctx, team, b, false); err != nil {
		return store.ReviewItem{}, err
	}
	return it, nil
}

// ReviewItemLock reads the review item of placement item itemID of ingest ingestID and holds its row
// FOR UPDATE until the transaction ends. As the transaction's first call it names its team, as
// IntakeLock and KeysLock do. ErrNotFound when the team has none.
func (t *tx) ReviewItemLock(ctx context.Context, team identity.TeamID, ingestID, itemID string) (store.ReviewItem, error) {
	var it store.ReviewItem
	b, err := t.batch(team)
	if err != nil {
		return it, err
	}
	queueReviewItem(b, &it, reviewItemLockSQL, team, ingestID, itemID)
	if err := t.s.sendOn(ctx, t.conn, b); err != nil {
		return store.ReviewItem{}, translate(err)
	}
	return it, nil
}

// The statements of the review item lifecycle and the decision ledger in a write set.
const (
	// reviewItemCloseSQL closes one item, fenced on its being open: a closed item fails the
	// statement, and with it the transaction, with DM003 (ErrStaleVersion).
	reviewItemCloseSQL = `-- name: ReviewItemClose
WITH u AS (
    UPDATE {schema}.review_items SET status = $3, resolved_at = $4, decision_id = NULLIF($5, '')
    WHERE team_id = $1 AND review_id = $2 AND status = 'open'
    RETURNING 1)
SELECT {schema}.densemem_expect_rows(count(*), 1, 'review item ' || $2::text || ' (no longer open)') FROM u`
	// reviewItemCloseForSQL closes every open item about a relationship (review_items_relationship).
	reviewItemCloseForSQL = `-- name: ReviewItemCloseFor
UPDATE {schema}.review_items SET status = $3, resolved_at = $4
WHERE team_id = $1 AND relationship_id = $2 AND status = 'open'`
	decisionInsertSQL = `-- name: DecisionInsert
INSERT INTO {schema}.placement_decisions (team_id, decision_id, profile_id, review_id, item_ingest_id, placement_item_id,
    action, decision, fragment_ids, reason, changes, ingest_id, idempotency_key, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
)

// queueDecisions queues the decision rows. A nil Decision is stored as {} and nil Changes as [] (the
// columns are NOT NULL), nil FragmentIDs as an empty array.
func (w writeBatch) queueDecisions(ws *store.WriteSet) {
	for _, d := range ws.Decisions {
		fragments := d.FragmentIDs
		if fragments == nil {
			fragments = []string{}
		}
		w.b.Queue(decisionInsertSQL, d.Team, d.ID, d.Profile, d.ReviewID, d.ItemIngestID, d.PlacementItemID, d.Action,
			jsonOr(d.Decision, "{}"), fragments, d.Reason, jsonOr(d.Changes, "[]"), d.IngestID, d.IdempotencyKey, d.CreatedAt)
	}
	w.step("decisions", len(ws.Decisions))
}

// queueItemCloses queues the fenced closes of single review items, then the closes of every open
// item of a relationship (which leave alone the items closed just before).
func (w writeBatch) queueItemCloses(ws *store.WriteSet) {
	for _, c := range ws.ItemCloses {
		w.b.Queue(reviewItemCloseSQL, c.Team, c.ID, c.Status, c.ClosedAt, c.DecisionID)
	}
	for _, c := range ws.ItemClosesFor {
		w.b.Queue(reviewItemCloseForSQL, c.Team, c.RelationshipID, c.Status, c.ClosedAt)
	}
	w.step("item_closes", len(ws.ItemCloses)+len(ws.ItemClosesFor))
}

// jsonOr returns raw as the bytes of a JSON argument, or def when raw is empty.
func jsonOr(raw json.RawMessage, def string) []byte {
	if len(raw) == 0 {
		return []byte(def)
	}
	return raw
}

package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/store"
)

// reviewFenceSQL locks what KeysLock with LiveOnly locks for one key and one case, in the same order
// (the key's live relationships by ID, then its live cases and the named one by ID), and fails with
// DM003 (densemem_expect_rows: ErrStaleVersion) unless they are what the review's plan read: the same
// live relationships at the same versions ($5, $6), as many supports of them and as many of those
// retired ($7, $8), and the same cases at the same versions and claim tokens ($9–$11).
// $1 team, $2–$4 the key, $12 the reviewed case.
const reviewFenceSQL = `-- name: ReviewFence
WITH rels AS MATERIALIZED (
    SELECT r.relationship_id, r.version FROM {schema}.relationships r
    WHERE r.team_id = $1 AND r.subject_entity_id = $2 AND r.predicate_key = $3 AND r.scope = $4` + liveFilter + `
    ORDER BY r.relationship_id
    FOR UPDATE),
cases AS MATERIALIZED (
    SELECT c.conflict_id, c.version, COALESCE(c.claim_token, '') AS claim_token FROM {schema}.conflict_cases c
    WHERE c.team_id = $1 AND c.conflict_id = ANY(ARRAY(
        SELECT $12::text
      UNION
        SELECT l.conflict_id FROM {schema}.conflict_cases l
        WHERE l.team_id = $1 AND l.status IN ('open', 'overdue')
          AND l.subject_entity_id = $2 AND l.predicate_key = $3 AND l.scope = $4))
    ORDER BY c.conflict_id
    FOR UPDATE),
sups AS (
    SELECT fr.retirement_id FROM rels
    JOIN {schema}.support_links s ON s.team_id = $1 AND s.relationship_id = rels.relationship_id
    LEFT JOIN {schema}.fragment_retirements fr ON fr.team_id = $1 AND fr.fragment_id = s.fragment_id)
SELECT {schema}.densemem_expect_rows((SELECT count(*) FROM rels), cardinality($5::text[]), 'fence: live relationships of the key'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM rels
           WHERE (rels.relationship_id, rels.version) IN (SELECT * FROM unnest($5::text[], $6::int[]))),
           cardinality($5::text[]), 'fence: versions of the live relationships'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM sups), $7::bigint, 'fence: supports'),
       {schema}.densemem_expect_rows((SELECT count(retirement_id) FROM sups), $8::bigint, 'fence: retired supports'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM cases), cardinality($9::text[]), 'fence: cases of the key'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM cases
           WHERE (cases.conflict_id, cases.version, cases.claim_token) IN (SELECT * FROM unnest($9::text[], $10::int[], $11::text[]))),
           cardinality($9::text[]), 'fence: versions and claims of the cases')`

// ReviewApplyFenced begins the transaction, takes the key's lock, checks the fence under the row
// locks and writes ws, COMMIT included, in one round trip.
func (t *tx) ReviewApplyFenced(ctx context.Context, f store.ReviewFence, ws store.WriteSet) error {
	return t.ReviewApplyFencedBatch(ctx, []store.ReviewFence{f}, []store.WriteSet{ws})
}

// ReviewApplyFencedBatch begins the transaction, takes every fence's key lock in the global order,
// checks each fence under its row locks and writes every write set, COMMIT included, in one round
// trip.
func (t *tx) ReviewApplyFencedBatch(ctx context.Context, fences []store.ReviewFence, sets []store.WriteSet) error {
	if t.begun {
		return fmt.Errorf("%w: ReviewApplyFenced must be the transaction's first call", store.ErrInternal)
	}
	if len(fences) == 0 || len(fences) != len(sets) {
		return fmt.Errorf("%w: %d review fences for %d write sets", store.ErrInternal, len(fences), len(sets))
	}
	keys := make([]conflict.Key, len(fences))
	for i, f := range fences {
		if len(f.Versions) != len(f.Relationships) || len(f.CaseVersions) != len(f.Cases) || len(f.ClaimTokens) != len(f.Cases) {
			return fmt.Errorf("%w: a review fence's parallel lists differ in length", store.ErrInternal)
		}
		if f.Team != fences[0].Team || slices.Contains(keys[:i], f.Key) {
			return fmt.Errorf("%w: fenced reviews of one batch must be of one team and of different keys", store.ErrInternal)
		}
		keys[i] = f.Key
	}
	b, err := t.batch(fences[0].Team)
	if err != nil {
		return err
	}
	queueKeyLocks(b, fences[0].Team, keys, 0)
	var ws store.WriteSet
	for i, f := range fences {
		b.Queue(reviewFenceSQL, f.Team, string(f.Key.Subject), f.Key.PredicateKey, f.Key.Scope, idStrings(f.Relationships), f.Versions,
			f.Supports, f.Retired, idStrings(f.Cases), f.CaseVersions, f.ClaimTokens, string(f.Case))
		ws.Append(sets[i])
	}
	return t.applyOn(ctx, b, &ws)
}

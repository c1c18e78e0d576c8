package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/densemem/densemem/conflict"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// The statements of privacy erasure (migration 18). The erasure itself is one call of the owner's
// SECURITY DEFINER function densemem_erase: the runtime role may neither write the erasure ledger
// nor update fragment_contents any other way.
const (
	// evidenceEraseSQL calls the owner's function once, through densemem_erase_fragments (migration
	// 27, its rows as one JSON array), from the team's first policy version: every team has exactly
	// one, and a statement on a team table is what a Citus cluster routes to the team's worker, where
	// the function's writes are the transaction's own (decision 208).
	evidenceEraseSQL = `-- name: EvidenceErase
SELECT {schema}.densemem_erase_fragments($1, $2, $3, NULLIF($4, ''), $5, $6, $7, $8::text[], $9)
FROM {schema}.team_policies tp WHERE tp.team_id = $1 AND tp.version = 1`
	// erasureByProfileKeySQL and erasureByHostKeySQL read an erasure by its actor's key
	// (privacy_erasures_key).
	erasureByProfileKeySQL = `-- name: ErasureByProfileKey
SELECT erasure_id, reason, request_hash, created_at FROM {schema}.privacy_erasures
WHERE team_id = $1 AND actor_kind = 'profile' AND actor_profile_id = $2 AND idempotency_key = $3`
	erasureByHostKeySQL = `-- name: ErasureByHostKey
SELECT erasure_id, reason, request_hash, created_at FROM {schema}.privacy_erasures
WHERE team_id = $1 AND actor_kind = 'host' AND actor_profile_id IS NULL AND idempotency_key = $2`
	// fragmentTombstonesSQL reads the tombstones of fragments (their primary key) with the
	// relationships each supports (support_links_fragment).
	// erasedKeysSQL reads the conflict keys of the relationships the named fragments support
	// (support_links_fragment, then the primary key), after the erasure in the same transaction.
	erasedKeysSQL = `-- name: ErasedRelationshipKeys
SELECT r.relationship_id, r.subject_entity_id, r.predicate_key, r.scope
FROM {schema}.relationships r
WHERE r.team_id = $1 AND r.relationship_id IN (
    SELECT s.relationship_id FROM {schema}.support_links s WHERE s.team_id = $1 AND s.fragment_id = ANY($2::text[]))
ORDER BY r.relationship_id
LIMIT $3`
	// retiredFragmentsSQL reads which of the named fragments are retired (fragment_retirements' key).
	retiredFragmentsSQL = `-- name: RetiredFragments
SELECT fragment_id FROM {schema}.fragment_retirements WHERE team_id = $1 AND fragment_id = ANY($2::text[])`
	fragmentTombstonesSQL = `-- name: FragmentTombstones
SELECT e.fragment_id, e.erasure_id, e.content_sha256, e.content_length, e.created_at,
       ARRAY(SELECT DISTINCT s.relationship_id FROM {schema}.support_links s
             WHERE s.team_id = $1 AND s.fragment_id = e.fragment_id ORDER BY 1)
FROM {schema}.fragment_erasures e
WHERE e.team_id = $1 AND e.fragment_id = ANY($2::text[])
ORDER BY e.fragment_id`
)

// EvidenceErase records the erasure p and redacts its fragments' content through densemem_erase,
// and returns the named fragments' tombstones in fragment ID order.
func (t *tx) EvidenceErase(ctx context.Context, p store.EvidenceEraseParams) ([]store.FragmentTombstone, error) {
	b, err := t.batch(p.Team)
	if err != nil {
		return nil, err
	}
	var out []store.FragmentTombstone
	b.Queue(evidenceEraseSQL, p.Team, p.ErasureID, p.Actor.Kind, p.Actor.Profile, p.Reason, p.Key, p.RequestHash,
		idStrings(p.Fragments), p.Now).QueryRow(func(row pgx.Row) (err error) {
		out, err = scanErasedTombstones(row)
		return err
	})
	keys := map[relationship.ID]conflict.Key{}
	b.Queue(erasedKeysSQL, p.Team, idStrings(p.Fragments), p.MaxRelationships+1).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id relationship.ID
			k := conflict.Key{Team: p.Team}
			if err := rows.Scan(&id, &k.Subject, &k.PredicateKey, &k.Scope); err != nil {
				return err
			}
			keys[id] = k
		}
		return rows.Err()
	})
	retired := map[evidence.FragmentID]bool{}
	b.Queue(retiredFragmentsSQL, p.Team, idStrings(p.Fragments)).Query(func(rows pgx.Rows) error {
		ids, err := pgx.CollectRows(rows, pgx.RowTo[evidence.FragmentID])
		for _, id := range ids {
			retired[id] = true
		}
		return err
	})
	if err := t.s.sendOn(ctx, t.conn, b); err != nil {
		return nil, translate(err)
	}
	for i := range out {
		out[i].Retired, out[i].KeysTruncated = retired[out[i].FragmentID], len(keys) > p.MaxRelationships
		for _, id := range out[i].Relationships {
			out[i].Keys = append(out[i].Keys, keys[id])
		}
	}
	return out, nil
}

// ErasureGet reads the erasure recorded under p's key and the named fragments' tombstones, in one
// read-only round trip.
func (s *Store) ErasureGet(ctx context.Context, p store.ErasureGetParams) (store.ErasureRead, error) {
	var out store.ErasureRead
	b := &pgx.Batch{}
	readErasure := func(row pgx.Row) error {
		e := store.Erasure{Actor: p.Actor}
		var at time.Time
		err := row.Scan(&e.ID, &e.Reason, &e.RequestHash, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		e.CreatedAt = at.UTC()
		out.Erasure = &e
		return err
	}
	if p.Actor.Kind == store.ErasureActorHost {
		b.Queue(erasureByHostKeySQL, p.Team, p.Key).QueryRow(readErasure)
	} else {
		b.Queue(erasureByProfileKeySQL, p.Team, p.Actor.Profile, p.Key).QueryRow(readErasure)
	}
	b.Queue(fragmentTombstonesSQL, p.Team, idStrings(p.Fragments)).Query(func(rows pgx.Rows) (err error) {
		out.Tombstones, err = collectTombstones(rows)
		return err
	})
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.ErasureRead{}, err
	}
	return out, nil
}

// collectTombstones scans rows of (fragment, erasure, hash, length, time, relationships).
func collectTombstones(rows pgx.Rows) ([]store.FragmentTombstone, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.FragmentTombstone, error) {
		var t store.FragmentTombstone
		var rels []string
		err := row.Scan(&t.FragmentID, &t.ErasureID, &t.ContentHash, &t.ContentLength, &t.ErasedAt, &rels)
		t.ErasedAt = t.ErasedAt.UTC()
		for _, r := range rels {
			t.Relationships = append(t.Relationships, relationship.ID(r))
		}
		return t, err
	})
}

// scanErasedTombstones reads densemem_erase_fragments' JSON array of densemem_erase's rows.
func scanErasedTombstones(row pgx.Row) ([]store.FragmentTombstone, error) {
	var raw []byte
	if err := row.Scan(&raw); err != nil {
		return nil, err
	}
	var rows []struct {
		FragmentID    evidence.FragmentID `json:"fragment_id"`
		ErasureID     string              `json:"erasure_id"`
		ContentSHA256 string              `json:"content_sha256"`
		ContentLength int                 `json:"content_length"`
		ErasedAt      time.Time           `json:"erased_at"`
		Relationships []relationship.ID   `json:"relationship_ids"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("%w: erasure rows: %w", store.ErrInternal, err)
	}
	out := make([]store.FragmentTombstone, len(rows))
	for i, r := range rows {
		out[i] = store.FragmentTombstone{FragmentID: r.FragmentID, ErasureID: r.ErasureID, ContentHash: r.ContentSHA256,
			ContentLength: r.ContentLength, ErasedAt: r.ErasedAt.UTC()}
		if len(r.Relationships) > 0 {
			out[i].Relationships = r.Relationships
		}
	}
	return out, nil
}

package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// entitiesByNameSQL returns every entity of the given kinds ($2) with a name among $3, with all its
// names. It over-fetches (kinds and names are not paired); identity.Resolve matches pairs exactly.
// The shape is kept simple on purpose: it is planned quickly and uses entity_names_lookup.
const entitiesByNameSQL = `-- name: EntitiesByName
SELECT e.entity_id, e.entity_kind, e.identity_context, n.name, n.normalized_name, n.name_kind
FROM entities e
JOIN entity_names n ON n.team_id = e.team_id AND n.entity_id = e.entity_id
WHERE e.team_id = $1 AND e.entity_kind = ANY($2::text[])
  AND e.entity_id IN (SELECT m.entity_id FROM entity_names m WHERE m.team_id = $1 AND m.normalized_name = ANY($3::text[]))
ORDER BY e.entity_id, n.name_kind, n.normalized_name`

const entitiesByIDSQL = `-- name: EntitiesByID
SELECT e.entity_id, e.entity_kind, e.identity_context, n.name, n.normalized_name, n.name_kind
FROM entities e
JOIN entity_names n ON n.team_id = e.team_id AND n.entity_id = e.entity_id
WHERE e.team_id = $1 AND e.entity_id = ANY($2::text[])
ORDER BY e.entity_id, n.name_kind, n.normalized_name`

const idempotencyGetSQL = `-- name: IdempotencyGet
SELECT operation, request_hash, ingest_id, result FROM idempotency_records
WHERE team_id = $1 AND profile_id = $2 AND idempotency_key = $3`

func nameArgs(names []store.NameLookup) ([]string, []string) {
	kinds, norms := make([]string, len(names)), make([]string, len(names))
	for i, n := range names {
		kinds[i], norms[i] = n.Kind, n.Normalized
	}
	return kinds, norms
}

func entityStrings(ids []identity.EntityID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// queueEntityReads queues the entity reads of a call: by name and by ID, each only when asked for.
func queueEntityReads(b *pgx.Batch, byName, byID *[]identity.Entity, team identity.TeamID, names []store.NameLookup, ids []identity.EntityID) {
	if len(names) > 0 {
		kinds, norms := nameArgs(names)
		queueEntities(b, byName, entitiesByNameSQL, team, kinds, norms)
	}
	if len(ids) > 0 {
		queueEntities(b, byID, entitiesByIDSQL, team, entityStrings(ids))
	}
}

// queueEntities queues a query returning entities with all their names into *dst.
func queueEntities(b *pgx.Batch, dst *[]identity.Entity, sql string, args ...any) {
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		var cur *identity.Entity
		for rows.Next() {
			var id, kind, name, norm, nameKind string
			var ctxJSON []byte
			if err := rows.Scan(&id, &kind, &ctxJSON, &name, &norm, &nameKind); err != nil {
				return err
			}
			if cur == nil || string(cur.ID) != id {
				*dst = append(*dst, identity.Entity{ID: identity.EntityID(id), Kind: kind})
				cur = &(*dst)[len(*dst)-1]
				if err := json.Unmarshal(ctxJSON, &cur.Context); err != nil {
					return err
				}
			}
			cur.Names = append(cur.Names, identity.Name{Name: name, Normalized: norm, Kind: identity.NameKind(nameKind)})
		}
		return rows.Err()
	})
}

func queueIdempotency(b *pgx.Batch, dst **store.IdempotencyRecord, team identity.TeamID, profile identity.ProfileID, key string) {
	b.Queue(idempotencyGetSQL, team, profile, key).QueryRow(func(row pgx.Row) error {
		var r store.IdempotencyRecord
		var result []byte
		err := row.Scan(&r.Operation, &r.RequestHash, &r.IngestID, &result)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		r.Result = result
		*dst = &r
		return err
	})
}

// RememberPrepare reads, in one round trip, the principal and policy, the team's predicates, the
// entities sharing a name with the proposal's mentions, the known entities and the idempotency record.
func (s *Store) RememberPrepare(ctx context.Context, p store.RememberPrepareParams) (store.RememberPrepared, error) {
	var out store.RememberPrepared
	b := &pgx.Batch{}
	// A read-only transaction inside the one batch, so the generic-plan setting applies to it.
	b.Queue("BEGIN READ ONLY")
	b.Queue(genericPlansSQL)
	b.Queue(principalSQL, p.Team, p.Profile).QueryRow(func(row pgx.Row) error {
		pr, err := scanPrincipal(row, p.Team, p.Profile)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		out.Principal = &pr
		return err
	})
	b.Queue(predicateListSQL, p.Team).Query(func(rows pgx.Rows) error {
		preds, err := pgx.CollectRows(rows, scanPredicate)
		out.Predicates = preds
		return err
	})
	queueEntityReads(b, &out.Candidates, &out.Known, p.Team, p.Names, p.KnownEntities)
	queueIdempotency(b, &out.Idempotency, p.Team, p.Profile, p.IdempotencyKey)
	b.Queue("COMMIT")
	if err := s.sendReadBatch(ctx, b); err != nil {
		return store.RememberPrepared{}, translate(err)
	}
	return out, nil
}

// IdempotencyGet returns a stored idempotency record, or nil when the key is unused.
func (s *Store) IdempotencyGet(ctx context.Context, team identity.TeamID, profile identity.ProfileID, key string) (*store.IdempotencyRecord, error) {
	var rec *store.IdempotencyRecord
	b := &pgx.Batch{}
	queueIdempotency(b, &rec, team, profile, key)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err)
	}
	return rec, nil
}

// sendReadBatch sends a batch that opens and commits its own read-only transaction. A failure part
// way leaves that transaction aborted on the connection, so it is rolled back (or the connection
// closed) before the connection goes back to the pool.
func (s *Store) sendReadBatch(ctx context.Context, b *pgx.Batch) error {
	return s.withReadConn(ctx, func(conn *pgxpool.Conn) error {
		return conn.SendBatch(ctx, b).Close()
	})
}

// withReadConn runs fn on one pooled connection, for reads whose batches open and end their own
// transaction. When fn fails with a transaction still open, it is rolled back (or the connection
// closed) before the connection goes back to the pool.
func (s *Store) withReadConn(ctx context.Context, fn func(conn *pgxpool.Conn) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = fn(conn)
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		if _, rerr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}
	return err
}

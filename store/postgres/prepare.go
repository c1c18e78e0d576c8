package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// entitiesByNameSQL returns the entities of the given kinds ($2) holding a name whose skeleton is
// among $3, each with its matching names and its canonical name (never all of its names). Every
// matching name is one probe of entity_names_skeleton, every entity one of the primary key and one of
// entity_names_canonical, so the cost grows with the matches, not with how many names the matched
// entities hold. Kinds and skeletons are not paired; identity.Resolve matches pairs exactly.
const entitiesByNameSQL = `-- name: EntitiesByName
WITH m AS MATERIALIZED (
    SELECT n.entity_id, n.name, n.normalized_name, n.name_kind
    FROM {schema}.entity_names n WHERE n.team_id = $1 AND n.skeleton = ANY($3::text[])
)
SELECT e.entity_id, e.entity_kind, e.identity_context, e.created_by, m.name, m.normalized_name, m.name_kind
FROM m JOIN {schema}.entities e ON e.team_id = $1 AND e.entity_id = m.entity_id
WHERE e.entity_kind = ANY($2::text[])
UNION
SELECT e.entity_id, e.entity_kind, e.identity_context, e.created_by, c.name, c.normalized_name, c.name_kind
FROM (SELECT DISTINCT entity_id FROM m) h
JOIN {schema}.entities e ON e.team_id = $1 AND e.entity_id = h.entity_id
JOIN {schema}.entity_names c ON c.team_id = $1 AND c.entity_id = h.entity_id AND c.name_kind = 'canonical'
WHERE e.entity_kind = ANY($2::text[])
ORDER BY 1, 7, 6`

// entitiesByIDSQL returns known entities with their canonical names: a known entity is not matched
// by name, so its other names are not needed.
const entitiesByIDSQL = `-- name: EntitiesByID
SELECT e.entity_id, e.entity_kind, e.identity_context, e.created_by, n.name, n.normalized_name, n.name_kind
FROM {schema}.entities e
JOIN {schema}.entity_names n ON n.team_id = $1 AND n.entity_id = e.entity_id AND n.name_kind = 'canonical'
WHERE e.team_id = $1 AND e.entity_id = ANY($2::text[])
ORDER BY e.entity_id`

const idempotencyGetSQL = `-- name: IdempotencyGet
SELECT operation, request_hash, ingest_id, result FROM {schema}.idempotency_records
WHERE team_id = $1 AND profile_id = $2 AND idempotency_key = $3`

// adoptableFragmentsSQL reads the fragments of a team among $2 that may be adopted (DESIGN §13), by
// primary key, with their content when $3. This filter is the one place that decides which stored
// fragments are adoptable: every fragment of the team that is neither erased (nothing to verify a
// claim against) nor retired (its support would not count); Remember's read before its transaction
// and its re-read under its locks both apply it.
const adoptableFragmentsSQL = `-- name: AdoptableFragments
SELECT f.fragment_id, f.ingest_id, f.evidence_index, f.author_profile_id, f.source_type, f.authority, f.source_group,
       f.source_key, f.source_revision, f.content_sha256, CASE WHEN $3 THEN c.content ELSE '' END, f.created_at
FROM {schema}.evidence_fragments f
JOIN {schema}.fragment_contents c ON c.team_id = $1 AND c.fragment_id = f.fragment_id
WHERE f.team_id = $1 AND f.fragment_id = ANY($2::text[])
  AND NOT EXISTS (SELECT 1 FROM {schema}.fragment_erasures x WHERE x.team_id = $1 AND x.fragment_id = f.fragment_id)
  AND NOT EXISTS (SELECT 1 FROM {schema}.fragment_retirements r WHERE r.team_id = $1 AND r.fragment_id = f.fragment_id)
ORDER BY f.fragment_id`

// queueAdoptable queues the read of the adoptable fragments among ids into *dst (content when
// content), when there are any.
func queueAdoptable(b *pgx.Batch, dst *[]store.FragmentRow, team identity.TeamID, ids []evidence.FragmentID, content bool) {
	if len(ids) == 0 {
		return
	}
	b.Queue(adoptableFragmentsSQL, team, idStrings(ids), content).Query(func(rows pgx.Rows) (err error) {
		*dst, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.FragmentRow, error) {
			f := store.FragmentRow{Team: team}
			var st, auth string
			err := row.Scan(&f.ID, &f.IngestID, &f.EvidenceIndex, &f.Author, &st, &auth, &f.SourceGroup, &f.SourceKey,
				&f.Revision, &f.ContentHash, &f.Content, &f.CreatedAt)
			f.SourceType, f.Authority = evidence.SourceType(st), evidence.Authority(auth)
			return f, err
		})
		return err
	})
}

func nameArgs(names []store.NameLookup) (kinds, skeletons []string) {
	kinds, skeletons = make([]string, len(names)), make([]string, len(names))
	for i, n := range names {
		kinds[i], skeletons[i] = n.Kind, n.Skeleton
	}
	return kinds, skeletons
}

// entityIDs converts a text[] column to entity IDs (nil when empty).
func entityIDs(ss []string) []identity.EntityID {
	var out []identity.EntityID
	for _, s := range ss {
		out = append(out, identity.EntityID(s))
	}
	return out
}

// contextJSON is an identity context as a jsonb argument: nil (the statement's default, an empty
// object) when it has no entries, which costs no allocation.
func contextJSON(c map[string]string) []byte {
	if len(c) == 0 {
		return nil
	}
	b, _ := json.Marshal(c) // a map of strings always marshals
	return b
}

// optionalEntityStrings is entityStrings, nil (the statement's default, an empty array) for none.
func optionalEntityStrings(ids []identity.EntityID) []string {
	if len(ids) == 0 {
		return nil
	}
	return idStrings(ids)
}

// queueEntityReads queues the entity reads of a call: by name and by ID, each only when asked for.
func queueEntityReads(b *pgx.Batch, byName, byID *[]identity.Entity, team identity.TeamID, names []store.NameLookup, ids []identity.EntityID) {
	if len(names) > 0 {
		kinds, skeletons := nameArgs(names)
		queueEntities(b, byName, entitiesByNameSQL, team, kinds, skeletons)
	}
	if len(ids) > 0 {
		queueEntities(b, byID, entitiesByIDSQL, team, idStrings(ids))
	}
}

// queueEntities queues a query returning entities with all their names into *dst.
func queueEntities(b *pgx.Batch, dst *[]identity.Entity, sql string, args ...any) {
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		var cur *identity.Entity
		for rows.Next() {
			var id, kind, createdBy, name, norm, nameKind string
			var ctxJSON []byte
			if err := rows.Scan(&id, &kind, &ctxJSON, &createdBy, &name, &norm, &nameKind); err != nil {
				return err
			}
			if cur == nil || string(cur.ID) != id {
				*dst = append(*dst, identity.Entity{ID: identity.EntityID(id), Kind: kind, CreatedBy: identity.ProfileID(createdBy)})
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
// entities sharing a name with the proposal's mentions, the known entities, the idempotency record
// and, when asked, the live state of the keys the request can name (queueSpeculation).
func (s *Store) RememberPrepare(ctx context.Context, p store.RememberPrepareParams) (store.RememberPrepared, error) {
	var out store.RememberPrepared
	b := &pgx.Batch{}
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
	queueAdoptable(b, &out.Adoptable, p.Team, p.AdoptFragments, true)
	if p.Speculate != nil && len(p.Speculate.Statements) > 0 {
		queueSpeculation(b, &out.Speculated, p.Team, p.Speculate)
	}
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.RememberPrepared{}, err
	}
	return out, nil
}

// IdempotencyGet returns a stored idempotency record, or nil when the key is unused.
func (s *Store) IdempotencyGet(ctx context.Context, team identity.TeamID, profile identity.ProfileID, key string) (*store.IdempotencyRecord, error) {
	var rec *store.IdempotencyRecord
	b := &pgx.Batch{}
	queueIdempotency(b, &rec, team, profile, key)
	if err := s.send(ctx, team, b, false); err != nil {
		return nil, err
	}
	return rec, nil
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

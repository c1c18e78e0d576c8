package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// IdentityRead's reads. $1 team, $2 entity, $3 profile, $4 selected observation IDs, $5 limit.
//
// identityObservationsSQL returns, for the profile's observations that ever resolved a mention to the
// entity (entity_resolution_events_entity) and for the selected ones, the current (latest) event of
// each mention (entity_resolution_events_observation); only those whose current events name the
// entity are movable, at most $5+1 of them (the extra one says the list goes on).
const (
	identityObservationsSQL = `-- name: IdentityObservations
WITH ever AS (
    SELECT DISTINCT e.observation_id FROM {schema}.entity_resolution_events e
    JOIN {schema}.observations o ON o.team_id = $1 AND o.observation_id = e.observation_id
    WHERE e.team_id = $1 AND e.entity_id = $2 AND o.profile_id = $3),
cur AS (
    SELECT DISTINCT ON (e.observation_id, e.mention_ref) e.*
    FROM {schema}.entity_resolution_events e
    WHERE e.team_id = $1 AND e.observation_id IN (SELECT observation_id FROM ever UNION SELECT unnest($4::text[]))
    ORDER BY e.observation_id, e.mention_ref, e.created_at DESC, e.resolution_id DESC),
movable AS (
    SELECT o.observation_id FROM {schema}.observations o
    WHERE o.team_id = $1 AND o.observation_id IN (SELECT observation_id FROM ever)
      AND EXISTS (SELECT 1 FROM cur WHERE cur.observation_id = o.observation_id AND cur.entity_id = $2)
    ORDER BY o.created_at, o.observation_id LIMIT $5 + 1)
SELECT o.observation_id, o.profile_id, o.created_at,
       EXISTS (SELECT 1 FROM {schema}.entity_resolution_events x
               WHERE x.team_id = $1 AND x.observation_id = o.observation_id AND x.entity_id = $2),
       o.observation_id IN (SELECT observation_id FROM movable),
       cur.resolution_id, cur.mention_ref, cur.mention_name, cur.entity_kind, COALESCE(cur.entity_id, ''), cur.decision,
       cur.candidate_ids, cur.profile_id, cur.ingest_id, cur.created_at
FROM {schema}.observations o
JOIN cur ON cur.observation_id = o.observation_id
WHERE o.team_id = $1 AND (o.observation_id IN (SELECT observation_id FROM movable) OR o.observation_id = ANY($4::text[]))
ORDER BY o.created_at, o.observation_id, cur.mention_ref`

	// identityRelationshipsFilter selects the profile's live relationships on the entity, as subject
	// (relationships_conflict_key) or object (relationships_object), at most $4+1 of them.
	identityRelationshipsFilter = `SELECT r.relationship_id FROM {schema}.relationships r
    WHERE r.team_id = $1 AND r.owner_profile_id = $3 AND (r.subject_entity_id = $2 OR r.object_entity_id = $2)
      AND r.status IN ('active', 'pending_evidence', 'needs_review')
    ORDER BY r.relationship_id LIMIT $4 + 1`
	identityRelationshipsSQL = `-- name: IdentityRelationships
SELECT ` + relationshipColumns + `, r.observation_id
FROM {schema}.relationships r
WHERE r.team_id = $1 AND r.relationship_id IN (` + identityRelationshipsFilter + `)
ORDER BY r.relationship_id`
	identitySupportsSQL = `-- name: IdentitySupports
SELECT s.support_id, s.relationship_id, s.fragment_id, s.observation_id, s.verification_id, s.span_start, s.span_end,
       s.source_group, s.content_sha256, s.authority, s.author_profile_id, s.profile_id, s.ingest_id, s.created_at,
       v.confirmed_valid_from, COALESCE(fr.retirement_id, '')
FROM {schema}.support_links s
JOIN {schema}.verification_events v ON v.team_id = $1 AND v.verification_id = s.verification_id
` + retiredJoin + `
WHERE s.team_id = $1 AND s.relationship_id IN (` + identityRelationshipsFilter + `)
ORDER BY s.relationship_id, s.created_at, s.support_id`
)

// IdentityRead reads what a split or merge of p.Entity shows, in one read-only transaction of the
// team (one round trip).
func (s *Store) IdentityRead(ctx context.Context, p store.IdentityReadParams) (store.IdentityRead, error) {
	r := newIdentityReader(p)
	b := &pgx.Batch{}
	r.queue(b)
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.IdentityRead{}, err
	}
	return r.result(), nil
}

// IdentityRead reads what a split or merge of p.Entity moves, inside the transaction (one round
// trip). As the transaction's first call it names its team.
func (t *tx) IdentityRead(ctx context.Context, p store.IdentityReadParams) (store.IdentityRead, error) {
	b, err := t.batch(p.Team)
	if err != nil {
		return store.IdentityRead{}, err
	}
	r := newIdentityReader(p)
	r.queue(b)
	if err := t.s.sendOn(ctx, t.conn, b); err != nil {
		return store.IdentityRead{}, translate(err)
	}
	return r.result(), nil
}

// identityReader queues IdentityRead's statements and assembles their rows.
type identityReader struct {
	p        store.IdentityReadParams
	entities []identity.Entity
	obs      []identityObsRow
	rels     []store.IdentityRelationship
	supports []store.IdentitySupport
}

// identityObsRow is one observation with its movability, as identityObservationsSQL returns it.
type identityObsRow struct {
	store.IdentityObservation
	movable bool
}

func newIdentityReader(p store.IdentityReadParams) *identityReader {
	if p.Limit < 1 {
		p.Limit = 1
	}
	if p.Selected == nil {
		p.Selected = []string{}
	}
	return &identityReader{p: p}
}

func (r *identityReader) queue(b *pgx.Batch) {
	p := r.p
	queueEntities(b, &r.entities, entitiesByIDSQL, p.Team, []string{string(p.Entity)})
	b.Queue(identityObservationsSQL, p.Team, p.Entity, p.Profile, p.Selected, p.Limit).Query(r.readObservations)
	b.Queue(identityRelationshipsSQL, p.Team, p.Entity, p.Profile, p.Limit).Query(r.readRelationships)
	b.Queue(identitySupportsSQL, p.Team, p.Entity, p.Profile, p.Limit).Query(func(rows pgx.Rows) (err error) {
		r.supports, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.IdentitySupport, error) {
			s := store.IdentitySupport{SupportLinkRow: store.SupportLinkRow{Team: p.Team}}
			var auth string
			err := row.Scan(&s.ID, &s.RelationshipID, &s.FragmentID, &s.ObservationID, &s.VerificationID, &s.Start, &s.End,
				&s.SourceGroup, &s.ContentHash, &auth, &s.Author, &s.Profile, &s.IngestID, &s.CreatedAt, &s.ConfirmedFrom, &s.Retirement)
			s.Authority = evidence.Authority(auth)
			return s, err
		})
		return err
	})
}

// readObservations groups the rows of identityObservationsSQL by observation.
func (r *identityReader) readObservations(rows pgx.Rows) error {
	for rows.Next() {
		var o identityObsRow
		var e store.ResolutionRow
		var decision string
		var cands []string
		if err := rows.Scan(&o.ID, &o.Profile, &o.CreatedAt, &o.EverEntity, &o.movable, &e.ID, &e.MentionRef, &e.MentionName,
			&e.EntityKind, &e.EntityID, &decision, &cands, &e.Profile, &e.IngestID, &e.CreatedAt); err != nil {
			return err
		}
		e.Team, e.ObservationID, e.Decision = r.p.Team, o.ID, identity.Decision(decision)
		for _, c := range cands {
			e.Candidates = append(e.Candidates, identity.EntityID(c))
		}
		if n := len(r.obs); n == 0 || r.obs[n-1].ID != o.ID {
			r.obs = append(r.obs, o)
		}
		last := &r.obs[len(r.obs)-1]
		last.Current = append(last.Current, e)
	}
	return rows.Err()
}

// readRelationships reads the rows of identityRelationshipsSQL.
func (r *identityReader) readRelationships(rows pgx.Rows) error {
	for rows.Next() {
		var obs string
		rel, err := scanRelationship(rows, &obs)
		if err != nil {
			return err
		}
		r.rels = append(r.rels, store.IdentityRelationship{Relationship: rel, ObservationID: obs})
	}
	return rows.Err()
}

// result assembles the read: the movable observations cut to the limit, the selected ones in the
// order asked, the relationships cut to the limit with their supports.
func (r *identityReader) result() store.IdentityRead {
	var out store.IdentityRead
	if len(r.entities) > 0 {
		out.Entity = &r.entities[0]
	}
	byID := map[string]store.IdentityObservation{}
	for _, o := range r.obs {
		byID[o.ID] = o.IdentityObservation
		if !o.movable {
			continue
		}
		if len(out.Movable) == r.p.Limit {
			out.MovableTruncated = true
			continue
		}
		out.Movable = append(out.Movable, o.IdentityObservation)
	}
	for _, id := range r.p.Selected {
		if o, ok := byID[id]; ok && !slices.ContainsFunc(out.Selected, func(s store.IdentityObservation) bool { return s.ID == id }) {
			out.Selected = append(out.Selected, o)
		}
	}
	if len(r.rels) > r.p.Limit {
		r.rels, out.RelationshipsTruncated = r.rels[:r.p.Limit], true
	}
	at := map[relationship.ID]int{}
	for i, rel := range r.rels {
		at[rel.Relationship.ID] = i
	}
	for _, s := range r.supports {
		if i, ok := at[s.RelationshipID]; ok {
			r.rels[i].Supports = append(r.rels[i].Supports, s)
		}
	}
	out.Relationships = r.rels
	return out
}

// identityDecisionInsertSQL appends one split or merge.
const identityDecisionInsertSQL = `-- name: IdentityDecisionInsert
INSERT INTO {schema}.identity_decisions (team_id, decision_id, profile_id, action, from_entity_id, to_entity_id,
    observation_ids, fragment_ids, reason, changes, ingest_id, idempotency_key, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// queueIdentityDecisions queues the identity decision rows; nil lists are stored empty.
func (w writeBatch) queueIdentityDecisions(ws *store.WriteSet) {
	for _, d := range ws.IdentityDecisions {
		obs, frags := d.ObservationIDs, d.FragmentIDs
		if obs == nil {
			obs = []string{}
		}
		if frags == nil {
			frags = []string{}
		}
		w.b.Queue(identityDecisionInsertSQL, d.Team, d.ID, d.Profile, d.Action, d.From, d.To, obs, frags, d.Reason,
			jsonOr(d.Changes, "[]"), d.IngestID, d.IdempotencyKey, d.CreatedAt)
	}
	w.step("identity_decisions", len(ws.IdentityDecisions))
}

package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/failpoint"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

type tx struct {
	tx pgx.Tx
}

var _ store.Tx = (*tx)(nil)

const relationshipColumns = `r.relationship_id, r.owner_profile_id, r.subject_entity_id, r.predicate_key, r.predicate_version,
       r.object_entity_id, r.object_value_id, r.polarity, r.scope, r.valid_from, r.valid_to, r.status, r.tier, r.version`

func scanRelationship(row pgx.CollectableRow) (relationship.Relationship, error) {
	var r relationship.Relationship
	var objEntity, objValue *string
	var pol, status, tier string
	err := row.Scan(&r.ID, &r.Owner, &r.Subject, &r.PredicateKey, &r.PredicateVersion, &objEntity, &objValue,
		&pol, &r.Scope, &r.Validity.From, &r.Validity.To, &status, &tier, &r.Version)
	if objEntity != nil {
		r.Object.EntityID = identity.EntityID(*objEntity)
	}
	if objValue != nil {
		r.Object.ValueID = *objValue
	}
	r.Polarity, r.Status, r.Tier = relationship.Polarity(pol), relationship.Status(status), relationship.Tier(tier)
	return r, err
}

const profileShareSQL = `-- name: ProfileShare
SELECT status, scopes FROM profiles WHERE team_id = $1 AND profile_id = $2 FOR SHARE`

// IntakeLock takes the idempotency and entity-name locks, then re-reads under them.
func (t *tx) IntakeLock(ctx context.Context, p store.IntakeLockParams) (store.IntakeLocked, error) {
	var out store.IntakeLocked
	b := &pgx.Batch{}
	locks := append([]int64{idempotencyLockID(p.Team, p.Profile, p.IdempotencyKey)}, nameLockIDs(p.Team, p.NameLocks)...)
	b.Queue(lockManySQL, locks)
	queueIdempotency(b, &out.Idempotency, p.Team, p.Profile, p.IdempotencyKey)
	b.Queue(profileShareSQL, p.Team, p.Profile).QueryRow(func(row pgx.Row) error {
		var status string
		var scopes []string
		err := row.Scan(&status, &scopes)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		out.ProfileActive = identity.ProfileStatus(status) == identity.ProfileActive
		for _, s := range scopes {
			out.ProfileScopes = append(out.ProfileScopes, identity.Scope(s))
		}
		return err
	})
	kinds, norms := nameArgs(p.Names)
	queueEntities(b, &out.Candidates, entitiesByNameSQL, p.Team, kinds, norms)
	queueEntities(b, &out.Known, entitiesByIDSQL, p.Team, entityStrings(p.KnownEntities))
	if err := t.tx.SendBatch(ctx, b).Close(); err != nil {
		return store.IntakeLocked{}, translate(err)
	}
	return out, nil
}

const keyRelationshipsSQL = `-- name: KeyRelationshipsLock
SELECT ` + relationshipColumns + `, COALESCE(obn.name, v.value_text, '')
FROM relationships r
JOIN unnest($3::text[], $4::text[], $5::text[]) AS k(subject, predicate, scope)
  ON r.subject_entity_id = k.subject AND r.predicate_key = k.predicate AND r.scope = k.scope
LEFT JOIN entity_names obn ON obn.team_id = r.team_id AND obn.entity_id = r.object_entity_id AND obn.name_kind = 'canonical'
LEFT JOIN literal_values v ON v.team_id = r.team_id AND v.value_id = r.object_value_id
WHERE r.team_id = $1 AND r.owner_profile_id = $2
ORDER BY r.relationship_id
FOR UPDATE OF r`

const keySupportsSQL = `-- name: KeySupports
SELECT s.relationship_id, s.source_group, s.content_sha256, s.authority, s.author_profile_id
FROM support_links s
JOIN relationships r ON r.team_id = s.team_id AND r.relationship_id = s.relationship_id
JOIN unnest($3::text[], $4::text[], $5::text[]) AS k(subject, predicate, scope)
  ON r.subject_entity_id = k.subject AND r.predicate_key = k.predicate AND r.scope = k.scope
WHERE s.team_id = $1 AND r.owner_profile_id = $2
ORDER BY s.relationship_id, s.support_id`

// KeysLock takes the conflict-key locks, then locks and reads the owner's relationships of the keys.
func (t *tx) KeysLock(ctx context.Context, p store.KeysLockParams) (store.KeysLocked, error) {
	var out store.KeysLocked
	subjects, preds, scopes := make([]string, len(p.Keys)), make([]string, len(p.Keys)), make([]string, len(p.Keys))
	for i, k := range p.Keys {
		subjects[i], preds[i], scopes[i] = string(k.Subject), k.PredicateKey, k.Scope
	}
	b := &pgx.Batch{}
	b.Queue(lockManySQL, keyLockIDs(p.Keys))
	out.ObjectNames = map[relationship.ID]string{}
	b.Queue(keyRelationshipsSQL, p.Team, p.Owner, subjects, preds, scopes).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r relationship.Relationship
			var objEntity, objValue *string
			var pol, status, tier, objName string
			if err := rows.Scan(&r.ID, &r.Owner, &r.Subject, &r.PredicateKey, &r.PredicateVersion, &objEntity, &objValue,
				&pol, &r.Scope, &r.Validity.From, &r.Validity.To, &status, &tier, &r.Version, &objName); err != nil {
				return err
			}
			if objEntity != nil {
				r.Object.EntityID = identity.EntityID(*objEntity)
			}
			if objValue != nil {
				r.Object.ValueID = *objValue
			}
			r.Polarity, r.Status, r.Tier = relationship.Polarity(pol), relationship.Status(status), relationship.Tier(tier)
			out.Relationships = append(out.Relationships, r)
			out.ObjectNames[r.ID] = objName
		}
		return rows.Err()
	})
	b.Queue(keySupportsSQL, p.Team, p.Owner, subjects, preds, scopes).Query(func(rows pgx.Rows) error {
		sups, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.SupportRow, error) {
			var s store.SupportRow
			var auth string
			err := row.Scan(&s.RelationshipID, &s.Group, &s.ContentHash, &auth, &s.Author)
			s.Authority = evidence.Authority(auth)
			return s, err
		})
		out.Supports = sups
		return err
	})
	if err := t.tx.SendBatch(ctx, b).Close(); err != nil {
		return store.KeysLocked{}, translate(err)
	}
	return out, nil
}

const relationshipLockSQL = `-- name: RelationshipLock
SELECT ` + relationshipColumns + ` FROM relationships r WHERE r.team_id = $1 AND r.relationship_id = $2 FOR UPDATE`

// RelationshipLock locks one relationship row and returns it. ErrNotFound when absent.
func (t *tx) RelationshipLock(ctx context.Context, team identity.TeamID, id relationship.ID) (relationship.Relationship, error) {
	rows, err := t.tx.Query(ctx, relationshipLockSQL, team, id)
	if err != nil {
		return relationship.Relationship{}, translate(err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRelationship)
	return r, translate(err)
}

// The write set's statements, one per row, sent as one batch.
const (
	entityInsertSQL = `-- name: EntityInsert
INSERT INTO entities (team_id, entity_id, entity_kind, identity_context, created_by, ingest_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	entityNameInsertSQL = `-- name: EntityNameInsert
INSERT INTO entity_names (team_id, entity_id, name, normalized_name, name_kind, created_at)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`
	valueInsertSQL = `-- name: ValueInsert
INSERT INTO literal_values (team_id, value_id, value_type, value_text, created_at)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`
	fragmentInsertSQL = `-- name: FragmentInsert
WITH f AS (
    INSERT INTO evidence_fragments (team_id, fragment_id, ingest_id, evidence_index, author_profile_id, source_type,
        authority, source_group, source_key, source_revision, content_sha256, content_length, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, octet_length($12), $13)
    RETURNING team_id, fragment_id)
INSERT INTO fragment_contents (team_id, fragment_id, content) SELECT team_id, fragment_id, $12 FROM f`
	observationInsertSQL = `-- name: ObservationInsert
INSERT INTO observations (team_id, observation_id, ingest_id, profile_id, proposal_id, subject_ref, subject_name,
    predicate_phrase, predicate_key, predicate_version, object_ref, object_name, object_value, polarity, modality,
    scope, valid_from, valid_to, citations, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), NULLIF($10, 0), $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`
	verificationInsertSQL = `-- name: VerificationInsert
INSERT INTO verification_events (team_id, verification_id, observation_id, verifier, verdict, confidence, rationale,
    confirmed_valid_from, support_granted, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	resolutionInsertSQL = `-- name: ResolutionInsert
INSERT INTO entity_resolution_events (team_id, resolution_id, observation_id, mention_ref, mention_name, entity_kind,
    entity_id, decision, candidate_ids, profile_id, ingest_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8, $9, $10, $11, $12)`
	relationshipInsertSQL = `-- name: RelationshipInsert
INSERT INTO relationships (team_id, relationship_id, owner_profile_id, subject_entity_id, predicate_key,
    predicate_version, object_entity_id, object_value_id, polarity, scope, valid_from, valid_to, status, tier,
    version, observation_id, ingest_id, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18)`
	relationshipUpdateSQL = `-- name: RelationshipUpdate
UPDATE relationships SET status = $4, tier = $5, valid_to = $6, version = version + 1, updated_at = $7
WHERE team_id = $1 AND relationship_id = $2 AND version = $3`
	supportInsertSQL = `-- name: SupportInsert
INSERT INTO support_links (team_id, support_id, relationship_id, fragment_id, observation_id, verification_id,
    span_start, span_end, source_group, content_sha256, authority, author_profile_id, profile_id, ingest_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	transitionInsertSQL = `-- name: TransitionInsert
INSERT INTO relationship_transitions (team_id, transition_id, relationship_id, from_status, to_status, from_tier,
    to_tier, from_valid_to, to_valid_to, from_version, to_version, reason, actor_kind, actor_profile_id,
    related_relationship_id, ingest_id, idempotency_key, created_at)
VALUES ($1, $2, $3, NULLIF($4, ''), $5, NULLIF($6, ''), $7, $8, $9, NULLIF($10, 0), $11, $12, $13, NULLIF($14, ''),
    NULLIF($15, ''), $16, $17, $18)`
	reviewItemInsertSQL = `-- name: ReviewItemInsert
INSERT INTO review_items (team_id, review_id, ingest_id, placement_item_id, kind, status, profile_id, observation_id,
    relationship_id, related_ids, choices, created_at)
VALUES ($1, $2, $3, $4, $5, 'open', $6, $7, NULLIF($8, ''), $9, $10, $11)`
	refreshInsertSQL = `-- name: RefreshInsert
INSERT INTO search_refresh_queue (team_id, relationship_id, reason, created_at) VALUES ($1, $2, $3, $4)`
	idempotencyInsertSQL = `-- name: IdempotencyInsert
INSERT INTO idempotency_records (team_id, profile_id, idempotency_key, operation, request_hash, ingest_id, result, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
)

// WriteSetApply writes every row of ws in one round trip, in dependency order.
func (t *tx) WriteSetApply(ctx context.Context, ws store.WriteSet) error {
	b := &pgx.Batch{}
	// step queues a failpoint check that runs once the rows of one table have been written.
	armed := failpoint.Armed(ctx)
	step := func(name string, n int) {
		if armed && n > 0 {
			b.Queue("-- name: Failpoint\nSELECT 1").Exec(func(pgconn.CommandTag) error {
				return failpoint.Check(ctx, "writeset.after:"+name)
			})
		}
	}
	for _, e := range ws.Entities {
		ctxJSON, err := json.Marshal(nonNilMap(e.Context))
		if err != nil {
			return err
		}
		b.Queue(entityInsertSQL, e.Team, e.ID, e.Kind, ctxJSON, e.CreatedBy, e.IngestID, e.CreatedAt)
	}
	step("entities", len(ws.Entities))
	for _, n := range ws.EntityNames {
		b.Queue(entityNameInsertSQL, n.Team, n.EntityID, n.Name, n.Normalized, n.Kind, n.CreatedAt)
	}
	for _, v := range ws.Values {
		b.Queue(valueInsertSQL, v.Team, v.ID, v.Type, v.Text, v.CreatedAt)
	}
	for _, f := range ws.Fragments {
		b.Queue(fragmentInsertSQL, f.Team, f.ID, f.IngestID, f.EvidenceIndex, f.Author, f.SourceType, f.Authority,
			f.SourceGroup, f.SourceKey, f.Revision, f.ContentHash, f.Content, f.CreatedAt)
	}
	step("fragments", len(ws.Fragments))
	for _, o := range ws.Observations {
		var value any
		if o.ObjectValue != nil {
			value = []byte(o.ObjectValue)
		}
		b.Queue(observationInsertSQL, o.Team, o.ID, o.IngestID, o.Profile, o.ProposalID, o.SubjectRef, o.SubjectName,
			o.PredicatePhrase, o.PredicateKey, o.PredicateVersion, o.ObjectRef, o.ObjectName, value, o.Polarity,
			o.Modality, o.Scope, o.ValidFrom, o.ValidTo, []byte(o.Citations), o.CreatedAt)
	}
	step("observations", len(ws.Observations))
	for _, v := range ws.Verifications {
		b.Queue(verificationInsertSQL, v.Team, v.ID, v.ObservationID, v.Verifier, v.Verdict, v.Confidence, v.Rationale,
			v.ConfirmedValidFrom, v.SupportGranted, v.CreatedAt)
	}
	for _, r := range ws.Resolutions {
		b.Queue(resolutionInsertSQL, r.Team, r.ID, r.ObservationID, r.MentionRef, r.MentionName, r.EntityKind,
			r.EntityID, r.Decision, entityStrings(r.Candidates), r.Profile, r.IngestID, r.CreatedAt)
	}
	for _, r := range ws.Relationships {
		rel := r.Relationship
		b.Queue(relationshipInsertSQL, r.Team, rel.ID, rel.Owner, rel.Subject, rel.PredicateKey, rel.PredicateVersion,
			rel.Object.EntityID, rel.Object.ValueID, rel.Polarity, rel.Scope, rel.Validity.From, rel.Validity.To,
			rel.Status, rel.Tier, rel.Version, r.ObservationID, r.IngestID, r.CreatedAt)
	}
	step("relationships", len(ws.Relationships))
	for _, u := range ws.Updates {
		b.Queue(relationshipUpdateSQL, u.Team, u.ID, u.ExpectVersion, u.Status, u.Tier, u.ValidTo, u.UpdatedAt).
			Exec(func(ct pgconn.CommandTag) error {
				if ct.RowsAffected() != 1 {
					return fmt.Errorf("relationship %s at version %d: %w", u.ID, u.ExpectVersion, store.ErrStaleVersion)
				}
				return nil
			})
	}
	step("updates", len(ws.Updates))
	for _, s := range ws.Supports {
		b.Queue(supportInsertSQL, s.Team, s.ID, s.RelationshipID, s.FragmentID, s.ObservationID, s.VerificationID,
			s.Start, s.End, s.SourceGroup, s.ContentHash, s.Authority, s.Author, s.Profile, s.IngestID, s.CreatedAt)
	}
	step("supports", len(ws.Supports))
	for _, tr := range ws.Transitions {
		b.Queue(transitionInsertSQL, tr.Team, tr.ID, tr.RelationshipID, tr.FromStatus, tr.ToStatus, tr.FromTier,
			tr.ToTier, tr.FromValidTo, tr.ToValidTo, tr.FromVersion, tr.ToVersion, tr.Reason, tr.ActorKind,
			tr.ActorProfile, tr.Related, tr.IngestID, tr.IdempotencyKey, tr.CreatedAt)
	}
	step("transitions", len(ws.Transitions))
	for _, r := range ws.ReviewItems {
		related := r.Related
		if related == nil {
			related = []string{}
		}
		b.Queue(reviewItemInsertSQL, r.Team, r.ID, r.IngestID, r.PlacementItemID, r.Kind, r.Profile, r.ObservationID,
			r.RelationshipID, related, []byte(r.Choices), r.CreatedAt)
	}
	for _, r := range ws.Refreshes {
		b.Queue(refreshInsertSQL, r.Team, r.RelationshipID, r.Reason, r.CreatedAt)
	}
	if ir := ws.Idempotency; ir != nil {
		b.Queue(idempotencyInsertSQL, ir.Team, ir.Profile, ir.Key, ir.Operation, ir.RequestHash, ir.IngestID,
			[]byte(ir.Result), ir.CreatedAt)
	}
	step("idempotency", 1)
	if b.Len() == 0 {
		return nil
	}
	return translate(t.tx.SendBatch(ctx, b).Close())
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

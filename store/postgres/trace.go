package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// relationshipViewColumns and relationshipViewFrom make up the relationship-with-names read; squirrel
// adds the filters of each use.
const relationshipViewColumns = relationshipColumns + `,
       COALESCE(sn.name, ''), se.entity_kind,
       COALESCE(obn.name, v.value_text, ''), COALESCE(oe.entity_kind, 'value:' || v.value_type, ''),
       pd.relationship_kind, pd.current_cardinality, pd.aliases, pd.value_object, pd.description,
       r.observation_id, r.ingest_id, r.created_at, r.updated_at`

const relationshipViewFrom = `{schema}.relationships r
JOIN {schema}.entities se ON se.team_id = r.team_id AND se.entity_id = r.subject_entity_id
LEFT JOIN {schema}.entity_names sn ON sn.team_id = r.team_id AND sn.entity_id = r.subject_entity_id AND sn.name_kind = 'canonical'
LEFT JOIN {schema}.entities oe ON oe.team_id = r.team_id AND oe.entity_id = r.object_entity_id
LEFT JOIN {schema}.entity_names obn ON obn.team_id = r.team_id AND obn.entity_id = r.object_entity_id AND obn.name_kind = 'canonical'
LEFT JOIN {schema}.literal_values v ON v.team_id = r.team_id AND v.value_id = r.object_value_id
JOIN {schema}.predicate_definitions pd ON pd.team_id = r.team_id AND pd.predicate_key = r.predicate_key AND pd.version = r.predicate_version`

func relationshipViewQuery(team identity.TeamID) sq.SelectBuilder {
	return psql.Select(relationshipViewColumns).From(relationshipViewFrom).Where(sq.Eq{"r.team_id": team})
}

// relationshipView reads one relationship with names. ErrNotFound when absent.
func (s *Store) relationshipView(ctx context.Context, team identity.TeamID, id relationship.ID) (store.RelationshipView, error) {
	sql, args, err := relationshipViewQuery(team).Where(sq.Eq{"r.relationship_id": id}).ToSql()
	if err != nil {
		return store.RelationshipView{}, err
	}
	var views []store.RelationshipView
	b := &pgx.Batch{}
	b.Queue("-- name: RelationshipView\n"+sql, args...).Query(func(rows pgx.Rows) (err error) {
		views, err = pgx.CollectRows(rows, scanRelationshipView)
		return err
	})
	if err := s.send(ctx, team, b, false); err != nil {
		return store.RelationshipView{}, err
	}
	if len(views) != 1 {
		return store.RelationshipView{}, fmt.Errorf("%w: relationship %s", store.ErrNotFound, id)
	}
	return views[0], nil
}

func scanRelationshipView(row pgx.CollectableRow) (store.RelationshipView, error) {
	var v store.RelationshipView
	var objEntity, objValue *string
	var pol, status, tier, kind, card string
	r := &v.Relationship
	err := row.Scan(&r.ID, &r.Owner, &r.Subject, &r.PredicateKey, &r.PredicateVersion, &objEntity, &objValue,
		&pol, &r.Scope, &r.Validity.From, &r.Validity.To, &status, &tier, &r.Version,
		&v.SubjectName, &v.SubjectKind, &v.ObjectName, &v.ObjectKind,
		&kind, &card, &v.Predicate.Aliases, &v.Predicate.ValueObject, &v.Predicate.Description,
		&v.Observation, &v.IngestID, &v.CreatedAt, &v.UpdatedAt)
	if objEntity != nil {
		r.Object.EntityID = identity.EntityID(*objEntity)
	}
	if objValue != nil {
		r.Object.ValueID = *objValue
	}
	r.Polarity, r.Status, r.Tier = relationship.Polarity(pol), relationship.Status(status), relationship.Tier(tier)
	v.Predicate.Key, v.Predicate.Version = r.PredicateKey, r.PredicateVersion
	v.Predicate.Kind, v.Predicate.Cardinality = relationship.Kind(kind), relationship.Cardinality(card)
	return v, err
}

// RelationshipGet returns one relationship of a team. ErrNotFound when absent.
func (s *Store) RelationshipGet(ctx context.Context, team identity.TeamID, id relationship.ID) (relationship.Relationship, error) {
	v, err := s.relationshipView(ctx, team, id)
	return v.Relationship, err
}

// Every Trace list is read a page at a time: the rows strictly after the page's key in the list's
// order, LIMIT the page size plus one (the extra row only tells that the list goes on). Keyed lists
// take the key as $3 (time) and $4… (the IDs of the list's order: three for supports, two for
// verifications, else one), with -infinity and empty IDs for the first page, then the limit. Each
// list is read through an index in its order (migration 00007) with a LIMIT on every branch, so its
// plan stops after a page however long the list is (TestTracePlansReadOnlyAPage).
const (
	traceSupportsSQL = `-- name: TraceSupports
SELECT p.support_id, p.relationship_id, p.fragment_id, p.observation_id, p.verification_id, p.span_start, p.span_end,
       p.source_group, p.content_sha256, p.authority, p.author_profile_id, p.profile_id, p.ingest_id, p.created_at,
       f.source_type,
       CASE WHEN $8 AND sum(CASE WHEN x.fragment_id IS NULL THEN f.content_length + p.span_end - p.span_start ELSE 0 END) OVER w <= $9
            THEN c.content ELSE '' END,
       $8 AND sum(CASE WHEN x.fragment_id IS NULL THEN f.content_length + p.span_end - p.span_start ELSE 0 END) OVER w > $9,
       x.fragment_id IS NOT NULL,
       COALESCE(fr.retirement_id, ''), COALESCE(fr.cause, ''), COALESCE(fr.replaced_by_fragment_id, ''),
       COALESCE(fr.actor_kind, ''), COALESCE(fr.actor_profile_id, ''), COALESCE(fr.reason, ''), COALESCE(fr.ingest_id, ''),
       fr.created_at
FROM (SELECT s.team_id, s.support_id, s.relationship_id, s.fragment_id, s.observation_id, s.verification_id, s.span_start,
             s.span_end, s.source_group, s.content_sha256, s.authority, s.author_profile_id, s.profile_id, s.ingest_id,
             s.created_at
      FROM {schema}.support_links s
      WHERE s.team_id = $1 AND s.relationship_id = $2
        AND (s.created_at, s.observation_id, s.verification_id, s.support_id) > ($3, $4, $5, $6)
      ORDER BY s.created_at, s.observation_id, s.verification_id, s.support_id LIMIT $7) p
JOIN {schema}.evidence_fragments f ON f.team_id = p.team_id AND f.fragment_id = p.fragment_id
JOIN {schema}.fragment_contents c ON c.team_id = p.team_id AND c.fragment_id = p.fragment_id
LEFT JOIN {schema}.fragment_erasures x ON x.team_id = p.team_id AND x.fragment_id = p.fragment_id
LEFT JOIN {schema}.fragment_retirements fr ON fr.team_id = p.team_id AND fr.fragment_id = p.fragment_id
WINDOW w AS (ORDER BY p.created_at, p.observation_id, p.verification_id, p.support_id)
ORDER BY p.created_at, p.observation_id, p.verification_id, p.support_id`
	// traceSupportKeysSQL reads what counting source groups needs: one row per distinct (group, hash,
	// effective): a support of a retired fragment is not effective.
	traceSupportKeysSQL = `-- name: TraceSupportKeys
SELECT DISTINCT s.source_group, s.content_sha256, fr.retirement_id IS NULL
FROM {schema}.support_links s
LEFT JOIN {schema}.fragment_retirements fr ON fr.team_id = s.team_id AND fr.fragment_id = s.fragment_id
WHERE s.team_id = $1 AND s.relationship_id = $2`

	// traceOwnObservation is the observation that created the relationship (o), when no support of the
	// relationship came from it; the supports' observations are read from the support index.
	traceOwnObservation = `{schema}.relationships r
   JOIN {schema}.observations o ON o.team_id = r.team_id AND o.observation_id = r.observation_id`
	// traceObservationsSQL pages the relationship's observations in (created_at, observation_id)
	// order: those of its supports, read in the support index's order (a support link is recorded
	// with its observation, so they share created_at), and the one that created it.
	traceObservationsSQL = `-- name: TraceObservations
SELECT o.observation_id, o.ingest_id, o.profile_id, o.proposal_id, o.subject_ref, o.subject_name, o.predicate_phrase,
       COALESCE(o.predicate_key, ''), COALESCE(o.predicate_version, 0), o.object_ref, o.object_name, o.object_value,
       o.polarity, o.modality, o.scope, o.valid_from, o.valid_to, o.citations, o.created_at, k.created_at
FROM (
  (SELECT DISTINCT s.created_at, s.observation_id FROM {schema}.support_links s
   WHERE s.team_id = $1 AND s.relationship_id = $2 AND (s.created_at, s.observation_id) > ($3, $4)
   ORDER BY s.created_at, s.observation_id LIMIT $5)
  UNION ALL
  (SELECT o.created_at, o.observation_id FROM ` + traceOwnObservation + `
   WHERE r.team_id = $1 AND r.relationship_id = $2 AND (o.created_at, o.observation_id) > ($3, $4)
     AND NOT EXISTS (SELECT 1 FROM {schema}.support_links s WHERE s.team_id = $1 AND s.relationship_id = $2
                     AND s.created_at = o.created_at AND s.observation_id = o.observation_id))
) k
JOIN {schema}.observations o ON o.team_id = $1 AND o.observation_id = k.observation_id
ORDER BY k.created_at, k.observation_id LIMIT $5`
	// traceVerificationsSQL pages the verification events behind the relationship: those its supports
	// cite and those of the observation that created it, in (observation created_at, observation ID,
	// verification ID) order.
	traceVerificationsSQL = `-- name: TraceVerifications
SELECT v.verification_id, v.observation_id, v.verifier, v.verdict, v.confidence, v.rationale, v.confirmed_valid_from,
       v.support_granted, v.created_at, k.created_at
FROM (
  (SELECT DISTINCT s.created_at, s.observation_id, s.verification_id FROM {schema}.support_links s
   WHERE s.team_id = $1 AND s.relationship_id = $2 AND (s.created_at, s.observation_id, s.verification_id) > ($3, $4, $5)
   ORDER BY s.created_at, s.observation_id, s.verification_id LIMIT $6)
  UNION ALL
  (SELECT o.created_at, o.observation_id, v.verification_id FROM ` + traceOwnObservation + `
   JOIN {schema}.verification_events v ON v.team_id = o.team_id AND v.observation_id = o.observation_id
   WHERE r.team_id = $1 AND r.relationship_id = $2 AND (o.created_at, o.observation_id, v.verification_id) > ($3, $4, $5)
     AND NOT EXISTS (SELECT 1 FROM {schema}.support_links s WHERE s.team_id = $1 AND s.relationship_id = $2
                     AND s.created_at = o.created_at AND s.observation_id = o.observation_id
                     AND s.verification_id = v.verification_id))
) k
JOIN {schema}.verification_events v ON v.team_id = $1 AND v.verification_id = k.verification_id
ORDER BY k.created_at, k.observation_id, k.verification_id LIMIT $6`
	traceTransitionsSQL = `-- name: TraceTransitions
SELECT transition_id, relationship_id, COALESCE(from_status, ''), to_status, COALESCE(from_tier, ''), to_tier,
       from_valid_to, to_valid_to, COALESCE(from_version, 0), to_version, reason, actor_kind,
       COALESCE(actor_profile_id, ''), COALESCE(related_relationship_id, ''), ingest_id, idempotency_key, created_at,
       COALESCE((SELECT d.decision_id FROM {schema}.placement_decisions d
                 WHERE d.team_id = t.team_id AND d.ingest_id = t.ingest_id LIMIT 1),
                (SELECT d.decision_id FROM {schema}.identity_decisions d
                 WHERE d.team_id = t.team_id AND d.ingest_id = t.ingest_id LIMIT 1), '')
FROM {schema}.relationship_transitions t WHERE team_id = $1 AND relationship_id = $2 AND to_version > $3
ORDER BY to_version LIMIT $4`
	// traceResolutionsSQL reads the resolution history of the relationship's subject and object and
	// the other events of the observation that created it as three ordered, limited branches, each
	// an index scan of entity_resolution_events in (created_at, resolution_id) order, merged and cut
	// to the page. An OR of them would read and sort a hub entity's whole history.
	traceResolutionsSQL = `-- name: TraceResolutions
WITH rel AS (SELECT subject_entity_id AS subj, object_entity_id AS obj, observation_id AS obs FROM {schema}.relationships
             WHERE team_id = $1 AND relationship_id = $2)
SELECT resolution_id, observation_id, mention_ref, mention_name, entity_kind, COALESCE(entity_id, ''), decision,
       candidate_ids, profile_id, ingest_id, created_at, identity_context, distinct_from_ids
FROM (
  (SELECT * FROM {schema}.entity_resolution_events
   WHERE team_id = $1 AND entity_id = (SELECT subj FROM rel) AND (created_at, resolution_id) > ($3, $4)
   ORDER BY created_at, resolution_id LIMIT $5)
  UNION ALL
  (SELECT * FROM {schema}.entity_resolution_events
   WHERE team_id = $1 AND entity_id = (SELECT obj FROM rel WHERE obj <> subj) AND (created_at, resolution_id) > ($3, $4)
   ORDER BY created_at, resolution_id LIMIT $5)
  UNION ALL
  (SELECT * FROM {schema}.entity_resolution_events
   WHERE team_id = $1 AND observation_id = (SELECT obs FROM rel) AND (created_at, resolution_id) > ($3, $4)
     AND (entity_id IS NULL OR (entity_id <> (SELECT subj FROM rel) AND entity_id IS DISTINCT FROM (SELECT obj FROM rel)))
   ORDER BY created_at, resolution_id LIMIT $5)
) x
ORDER BY created_at, resolution_id LIMIT $5`
	// traceReviewItemsSQL reads the items about the relationship and those naming it as a related
	// prior (the second branch leaves out the first's rows).
	traceReviewItemsSQL = `-- name: TraceReviewItems
SELECT ` + reviewItemViewColumns + `
FROM (
  (SELECT * FROM {schema}.review_items
   WHERE team_id = $1 AND relationship_id = $2 AND (created_at, review_id) > ($3, $4)
   ORDER BY created_at, review_id LIMIT $5)
  UNION ALL
  (SELECT * FROM {schema}.densemem_review_items_naming($1, $2, $3, $4, $5))
) x
ORDER BY created_at, review_id LIMIT $5`
	traceCrossRefsSQL = `-- name: TraceCrossReferences
SELECT xref_id, kind, from_relationship_id, from_version, to_relationship_id, to_version, author_profile_id,
       COALESCE(verification_id, ''), ingest_id, created_at
FROM (
  (SELECT * FROM {schema}.relationship_cross_references
   WHERE team_id = $1 AND from_relationship_id = $2 AND (created_at, xref_id) > ($3, $4)
   ORDER BY created_at, xref_id LIMIT $5)
  UNION ALL
  (SELECT * FROM {schema}.relationship_cross_references
   WHERE team_id = $1 AND to_relationship_id = $2 AND from_relationship_id <> $2 AND (created_at, xref_id) > ($3, $4)
   ORDER BY created_at, xref_id LIMIT $5)
) x
ORDER BY created_at, xref_id LIMIT $5`
	// traceCasePage is the page of cases the relationship is or was a member of, in (opened_at,
	// conflict_id) order, found through its membership rows.
	traceCasePage = `SELECT c.conflict_id, c.opened_at
FROM (SELECT DISTINCT m.conflict_id FROM {schema}.conflict_position_members m WHERE m.team_id = $1 AND m.relationship_id = $2) m
JOIN {schema}.conflict_cases c ON c.team_id = $1 AND c.conflict_id = m.conflict_id
WHERE (c.opened_at, c.conflict_id) > ($3, $4)
ORDER BY c.opened_at, c.conflict_id LIMIT $5`
	// traceCasesSQL reads the page of cases, each with the status and membership of its latest event
	// (the columns of recallCasesSQL).
	traceCasesSQL = `-- name: TraceCases
WITH page AS (` + traceCasePage + `)
SELECT c.conflict_id, c.subject_entity_id, c.predicate_key, c.scope, e.resulting_status, e.case_version, c.opened_at,
       c.review_due_at, c.resolved_at, c.effective_at, COALESCE(c.effective_time_basis, ''),
       COALESCE(c.preferred_position_id, ''), c.policy_version, e.positions, c.kind
FROM page p
JOIN {schema}.conflict_cases c ON c.team_id = $1 AND c.conflict_id = p.conflict_id
CROSS JOIN LATERAL (SELECT resulting_status, case_version, positions FROM {schema}.conflict_events e
                    WHERE e.team_id = $1 AND e.conflict_id = p.conflict_id ORDER BY e.case_version DESC LIMIT 1) e
ORDER BY p.opened_at, p.conflict_id`
	// traceCaseLatest is the latest event of case p.conflict_id: its positions are the case's current
	// membership, as traceCasesSQL reads them.
	traceCaseLatest = `(SELECT positions FROM {schema}.conflict_events e
                    WHERE e.team_id = $1 AND e.conflict_id = p.conflict_id ORDER BY e.case_version DESC LIMIT 1)`
	// traceCaseObjectsSQL names, for each case of the same page, the object of each position of its
	// latest event: one row per position, each an index probe of the entity's canonical name or of
	// the literal.
	traceCaseObjectsSQL = `-- name: TraceCaseObjects
WITH page AS (` + traceCasePage + `)
SELECT p.conflict_id, pos.value->>'position_id', n.name, n.kind
FROM page p
CROSS JOIN LATERAL ` + traceCaseLatest + ` e
CROSS JOIN LATERAL jsonb_array_elements(e.positions) pos
CROSS JOIN LATERAL (
    SELECT COALESCE(obn.name, v.value_text, '') AS name, COALESCE(oe.entity_kind, 'value:' || v.value_type, '') AS kind
    FROM (SELECT pos.value->'object'->>'entity_id' AS entity_id, pos.value->'object'->>'value_id' AS value_id) o
    LEFT JOIN {schema}.entities oe ON oe.team_id = $1 AND oe.entity_id = o.entity_id
    LEFT JOIN {schema}.entity_names obn ON obn.team_id = $1 AND obn.entity_id = o.entity_id AND obn.name_kind = 'canonical'
    LEFT JOIN {schema}.literal_values v ON v.team_id = $1 AND v.value_id = o.value_id
    LIMIT 1) n`
	// traceCaseSupportsSQL reads, for each case of the same page, the (source group, content hash) of
	// the supports of the members of its latest event's positions, at most $6 rows per case: the
	// members' support links are read one member after another through the support index, in its
	// order, and the read stops there (a case that reaches $6 is cut, and the caller does not count it).
	traceCaseSupportsSQL = `-- name: TraceCaseSupports
WITH page AS (` + traceCasePage + `)
SELECT p.conflict_id, x.relationship_id, x.source_group, x.content_sha256, x.effective
FROM page p
CROSS JOIN LATERAL (
    SELECT s.relationship_id, s.source_group, s.content_sha256, s.effective
    FROM ` + traceCaseLatest + ` e
    CROSS JOIN LATERAL jsonb_array_elements(e.positions) pos
    CROSS JOIN LATERAL jsonb_array_elements(CASE jsonb_typeof(pos.value->'members') WHEN 'array'
                                            THEN pos.value->'members' ELSE '[]' END) m
    CROSS JOIN LATERAL (SELECT s.relationship_id, s.source_group, s.content_sha256,
                               NOT EXISTS (SELECT 1 FROM {schema}.fragment_retirements fr
                                           WHERE fr.team_id = s.team_id AND fr.fragment_id = s.fragment_id) AS effective
                        FROM {schema}.support_links s
                        WHERE s.team_id = $1 AND s.relationship_id = m.value->>'relationship_id'
                        ORDER BY s.created_at, s.observation_id, s.verification_id, s.support_id LIMIT $6) s
    LIMIT $6) x`
	// traceCaseEventsSQL reads, for each case of the same page, its events after the case version
	// given for it in $6/$7 (0 when absent), LIMIT $5 per case.
	traceCaseEventsSQL = `-- name: TraceCaseEvents
WITH page AS (` + traceCasePage + `)
SELECT e.event_id, e.conflict_id, e.case_version, COALESCE(e.prior_status, ''), e.resulting_status, e.actor_kind,
       COALESCE(e.actor_profile_id, ''), e.reason_code, e.policy_version, COALESCE(e.time_basis, ''), e.referenced,
       e.positions, e.ingest_id, e.created_at
FROM page p
LEFT JOIN unnest($6::text[], $7::int[]) AS a(conflict_id, after_version) ON a.conflict_id = p.conflict_id
CROSS JOIN LATERAL (SELECT * FROM {schema}.conflict_events e
                    WHERE e.team_id = $1 AND e.conflict_id = p.conflict_id AND e.case_version > COALESCE(a.after_version, 0)
                    ORDER BY e.case_version LIMIT $5) e
ORDER BY e.conflict_id, e.case_version`
)

// traceNoParallelSQL keeps Trace's reads in its own backend: every list stops after a page, and a
// parallel scan's workers read ahead of the LIMIT (a page of 50 observations read 400–1,200 support
// rows in two workers instead of 51).
const traceNoParallelSQL = "SELECT set_config('max_parallel_workers_per_gather', '0', true)"

// keyArgs returns a page's key as the $3, $4, … arguments of a keyed list query whose order has ids
// ID columns after the time: -infinity and empty IDs before the first row.
func keyArgs(k *store.TraceKey, ids int) []any {
	args := []any{pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}}
	if k != nil {
		args[0] = pgtype.Timestamptz{Time: k.At, Valid: true}
	}
	for i := range ids {
		id := ""
		if k != nil && i < len(k.IDs) {
			id = k.IDs[i]
		}
		args = append(args, id)
	}
	return args
}

// reviewItemViewColumns are the columns of a review item x as scanReviewItemView reads them, with
// the decision that resolved it (as JSON, one primary-key probe of placement_decisions) and its 20
// latest vocabulary proposals (a JSON array, along placement_decisions_review).
const reviewItemViewColumns = `x.review_id, x.ingest_id, x.placement_item_id, x.kind, x.status, x.profile_id, x.observation_id,
       COALESCE(x.relationship_id, ''), x.related_ids, x.choices, x.relationship_version, x.related_versions, x.created_at,
       x.resolved_at, (SELECT to_jsonb(d) - 'team_id' FROM {schema}.placement_decisions d
                       WHERE d.team_id = x.team_id AND d.decision_id = x.decision_id),
       (SELECT jsonb_agg(to_jsonb(p) - 'team_id' ORDER BY p.created_at, p.decision_id)
        FROM (SELECT * FROM {schema}.placement_decisions d
              WHERE d.team_id = x.team_id AND d.review_id = x.review_id AND d.action = 'propose_vocabulary_change'
              ORDER BY d.created_at DESC, d.decision_id DESC LIMIT 20) p)`

// scanReviewItemView scans a review item read with reviewItemViewColumns.
func scanReviewItemView(row pgx.CollectableRow, team identity.TeamID) (store.ReviewItemView, error) {
	var v store.ReviewItemView
	var choices []byte
	var decision, proposals []byte
	err := row.Scan(&v.ID, &v.IngestID, &v.PlacementItemID, &v.Kind, &v.Status, &v.Profile, &v.ObservationID,
		&v.RelationshipID, &v.Related, &choices, &v.RelationshipVersion, &v.RelatedVersions, &v.CreatedAt, &v.ResolvedAt,
		&decision, &proposals)
	v.Team, v.Choices, v.Decision, v.Proposals = team, json.RawMessage(choices), json.RawMessage(decision),
		json.RawMessage(proposals)
	return v, err
}

// queueKeyed queues a keyed list query (team, relationship, key with ids IDs, limit+1, extra) whose
// rows scan into a value and its key. It keeps at most limit rows in *dst and, when there were more,
// points *next at the key of the last one kept.
func queueKeyed[T any](b *pgx.Batch, p store.TraceLoadParams, sql string, k *store.TraceKey, ids int, dst *[]T,
	next **store.TraceKey, scan func(pgx.CollectableRow) (T, store.TraceKey, error), extra ...any) {
	args := append(append([]any{p.Team, p.RelationshipID}, keyArgs(k, ids)...), p.Limit+1)
	args = append(args, extra...)
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		var keys []store.TraceKey
		got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) {
			v, key, err := scan(row)
			keys = append(keys, key)
			return v, err
		})
		if err != nil {
			return err
		}
		if len(got) > p.Limit {
			got, *next = got[:p.Limit], &keys[p.Limit-1]
		}
		*dst = got
		return nil
	})
}

// TraceLoad returns one page of the stored history of one relationship, read in one read-only
// REPEATABLE READ transaction: one round trip with the first hop of neighbours, one more per further
// hop. ErrNotFound when absent.
func (s *Store) TraceLoad(ctx context.Context, p store.TraceLoadParams) (store.TraceData, error) {
	if p.Limit < 1 || p.CaseSupports < 1 {
		return store.TraceData{}, fmt.Errorf("%w: trace limit %d or case supports %d is not positive", store.ErrInternal,
			p.Limit, p.CaseSupports)
	}
	var out store.TraceData
	r := newTraceReads(p, &out)
	// 1. Open the transaction, then read the relationship and a page of each of its lists and cases.
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	b.Queue(settingsSQL, s.settingsArgs(ctx, p.Team)...)
	b.Queue(traceNoParallelSQL)
	if err := r.queueRelationship(b); err != nil {
		return out, err
	}
	r.queueLists(b)
	r.queueCases(b)
	// 2. The first hop of neighbours travels with them; COMMIT too, unless the walk goes further.
	walk := p.MaxDepth > 0 && p.MaxEdges > 0
	var hop []store.RelationshipView
	if walk {
		if err := queueHop(b, p, &hop, []string{string(p.RelationshipID)}, sq.Or{
			sq.Expr("r.subject_entity_id IN "+traceEndsSQL, p.Team, p.RelationshipID),
			sq.Expr("r.object_entity_id IN "+traceEndsSQL, p.Team, p.RelationshipID)}, p.MaxEdges); err != nil {
			return out, err
		}
	}
	if !walk || p.MaxDepth == 1 {
		b.Queue("COMMIT")
	}
	// 3. Send the batch, then walk the further hops on the same connection.
	err := s.withReadConn(ctx, func(conn *pgxpool.Conn) error {
		if err := s.sendOn(ctx, conn, b); err != nil {
			return err
		}
		if len(r.views) != 1 {
			return fmt.Errorf("%w: relationship %s", store.ErrNotFound, p.RelationshipID)
		}
		if walk {
			return s.walkNeighbours(ctx, conn, p, &out, r.views[0].Relationship, hop)
		}
		return nil
	})
	if err != nil {
		return store.TraceData{}, translate(err)
	}
	// 4. Assemble the relationship and its cases.
	out.Relationship = r.views[0]
	out.Cases = r.traceCases()
	return out, nil
}

// traceReads are the reads of TraceLoad's batch: the lists go straight into out, the relationship
// and the cases' parts are kept here until traceCases assembles them.
type traceReads struct {
	p   store.TraceLoadParams
	out *store.TraceData
	// views is the traced relationship (one row when it exists).
	views []store.RelationshipView
	// cases is the page of cases; names, supports and events are their parts.
	cases []store.RecallCase
	// names names each case's positions' objects.
	names map[conflict.ID]map[conflict.PositionID]store.ObjectName
	// supports holds each case's members' distinct supports; supportRows counts the rows read per
	// case (a case that reached CaseSupports+1 is cut); seen marks the rows kept.
	supports    map[conflict.ID]map[relationship.ID][]evidence.Support
	supportRows map[conflict.ID]int
	seen        map[traceCaseSupport]bool
	events      []store.CaseEventRow
}

// traceCaseSupport is one (case, member, support) read by traceCaseSupportsSQL.
type traceCaseSupport struct {
	id   conflict.ID
	rel  relationship.ID
	pair evidence.Support
}

// newTraceReads returns the reads of a TraceLoad for p, into out.
func newTraceReads(p store.TraceLoadParams, out *store.TraceData) *traceReads {
	return &traceReads{p: p, out: out,
		names:       map[conflict.ID]map[conflict.PositionID]store.ObjectName{},
		supports:    map[conflict.ID]map[relationship.ID][]evidence.Support{},
		supportRows: map[conflict.ID]int{},
		seen:        map[traceCaseSupport]bool{},
	}
}

// queueRelationship queues the read of the traced relationship with names.
func (r *traceReads) queueRelationship(b *pgx.Batch) error {
	sql, args, err := relationshipViewQuery(r.p.Team).Where(sq.Eq{"r.relationship_id": r.p.RelationshipID}).ToSql()
	if err != nil {
		return err
	}
	b.Queue("-- name: TraceRelationship\n"+sql, args...).Query(func(rows pgx.Rows) error {
		var err error
		r.views, err = pgx.CollectRows(rows, scanRelationshipView)
		return err
	})
	return nil
}

// queueLists queues a page of each of the relationship's lists: supports (and the keys of all of
// them), observations, verifications and transitions when asked for, resolutions, review items and
// cross-references.
func (r *traceReads) queueLists(b *pgx.Batch) {
	p, out := r.p, r.out
	queueKeyed(b, p, traceSupportsSQL, p.After.Supports, 3, &out.Supports, &out.Next.Supports, r.scanSupport,
		p.IncludeContent, int64(p.ContentBudget))
	b.Queue(traceSupportKeysSQL, p.Team, p.RelationshipID).Query(r.readSupportKeys)
	queueKeyed(b, p, traceObservationsSQL, p.After.Observations, 1, &out.Observations, &out.Next.Observations,
		r.scanObservation)
	if p.IncludeVerifications {
		queueKeyed(b, p, traceVerificationsSQL, p.After.Verifications, 2, &out.Verifications, &out.Next.Verifications,
			r.scanVerification)
	}
	if p.IncludeTransitions {
		b.Queue(traceTransitionsSQL, p.Team, p.RelationshipID, p.After.Transitions, p.Limit+1).Query(r.readTransitions)
	}
	queueKeyed(b, p, traceResolutionsSQL, p.After.Resolutions, 1, &out.Resolutions, &out.Next.Resolutions,
		r.scanResolution)
	queueKeyed(b, p, traceReviewItemsSQL, p.After.ReviewItems, 1, &out.ReviewItems, &out.Next.ReviewItems,
		r.scanReviewItem)
	queueKeyed(b, p, traceCrossRefsSQL, p.After.CrossReferences, 1, &out.CrossReferences, &out.Next.CrossReferences,
		r.scanCrossReference)
}

// scanSupport scans a row of traceSupportsSQL, with its key.
func (r *traceReads) scanSupport(row pgx.CollectableRow) (store.TraceSupport, store.TraceKey, error) {
	var s store.TraceSupport
	var auth, st string
	var ret store.RetirementRow
	var retAt *time.Time
	err := row.Scan(&s.ID, &s.RelationshipID, &s.FragmentID, &s.ObservationID, &s.VerificationID, &s.Start, &s.End,
		&s.SourceGroup, &s.ContentHash, &auth, &s.Author, &s.Profile, &s.IngestID, &s.CreatedAt, &st, &s.Content,
		&s.ContentOmitted, &s.Erased, &ret.ID, &ret.Cause, &ret.ReplacedBy, &ret.ActorKind, &ret.ActorProfile, &ret.Reason,
		&ret.IngestID, &retAt)
	s.Team, s.Authority, s.SourceType = r.p.Team, evidence.Authority(auth), evidence.SourceType(st)
	if ret.ID != "" && retAt != nil {
		ret.Team, ret.FragmentID, ret.CreatedAt = r.p.Team, s.FragmentID, *retAt
		s.Retirement = &ret
	}
	s.Key = store.TraceKey{At: s.CreatedAt, IDs: []string{s.ObservationID, s.VerificationID, s.ID}}
	return s, s.Key, err
}

// readSupportKeys reads the rows of traceSupportKeysSQL.
func (r *traceReads) readSupportKeys(rows pgx.Rows) error {
	var err error
	r.out.SupportKeys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (evidence.Support, error) {
		var s evidence.Support
		return s, row.Scan(&s.Group, &s.ContentHash, &s.Effective)
	})
	return err
}

// scanObservation scans a row of traceObservationsSQL, with its key.
func (r *traceReads) scanObservation(row pgx.CollectableRow) (store.ObservationRow, store.TraceKey, error) {
	var o store.ObservationRow
	var value, cites []byte
	var pol, mod string
	var key store.TraceKey
	err := row.Scan(&o.ID, &o.IngestID, &o.Profile, &o.ProposalID, &o.SubjectRef, &o.SubjectName,
		&o.PredicatePhrase, &o.PredicateKey, &o.PredicateVersion, &o.ObjectRef, &o.ObjectName, &value, &pol,
		&mod, &o.Scope, &o.ValidFrom, &o.ValidTo, &cites, &o.CreatedAt, &key.At)
	o.Team, o.Polarity, o.Modality = r.p.Team, relationship.Polarity(pol), relationship.Modality(mod)
	if value != nil {
		o.ObjectValue = json.RawMessage(value)
	}
	o.Citations = json.RawMessage(cites)
	key.IDs = []string{o.ID}
	return o, key, err
}

// scanVerification scans a row of traceVerificationsSQL, with its key.
func (r *traceReads) scanVerification(row pgx.CollectableRow) (store.VerificationRow, store.TraceKey, error) {
	var v store.VerificationRow
	var verdict string
	var key store.TraceKey
	err := row.Scan(&v.ID, &v.ObservationID, &v.Verifier, &verdict, &v.Confidence, &v.Rationale,
		&v.ConfirmedValidFrom, &v.SupportGranted, &v.CreatedAt, &key.At)
	v.Team, v.Verdict = r.p.Team, evidence.Verdict(verdict)
	key.IDs = []string{v.ObservationID, v.ID}
	return v, key, err
}

// readTransitions reads the rows of traceTransitionsSQL: at most Limit of them, and where the list
// goes on when there were more.
func (r *traceReads) readTransitions(rows pgx.Rows) error {
	p, out := r.p, r.out
	decisions := map[string]string{}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TransitionRow, error) {
		var decision string
		t, err := scanTransition(row, &decision)
		if decision != "" {
			decisions[t.ID] = decision
		}
		return t, err
	})
	if len(got) > p.Limit {
		got, out.Next.Transitions = got[:p.Limit], got[p.Limit-1].ToVersion
	}
	out.Transitions, out.TransitionDecisions = got, decisions
	return err
}

// scanResolution scans a row of traceResolutionsSQL, with its key.
func (r *traceReads) scanResolution(row pgx.CollectableRow) (store.ResolutionRow, store.TraceKey, error) {
	var res store.ResolutionRow
	var decision string
	var cands, distinct []string
	err := row.Scan(&res.ID, &res.ObservationID, &res.MentionRef, &res.MentionName, &res.EntityKind, &res.EntityID,
		&decision, &cands, &res.Profile, &res.IngestID, &res.CreatedAt, &res.Context, &distinct)
	res.Team, res.Decision = r.p.Team, identity.Decision(decision)
	res.Candidates, res.DistinctFrom = entityIDs(cands), entityIDs(distinct)
	if len(res.Context) == 0 {
		res.Context = nil
	}
	return res, store.TraceKey{At: res.CreatedAt, IDs: []string{res.ID}}, err
}

// scanReviewItem scans a row of traceReviewItemsSQL, with its key.
func (r *traceReads) scanReviewItem(row pgx.CollectableRow) (store.ReviewItemView, store.TraceKey, error) {
	v, err := scanReviewItemView(row, r.p.Team)
	return v, store.TraceKey{At: v.CreatedAt, IDs: []string{v.ID}}, err
}

// scanCrossReference scans a row of traceCrossRefsSQL, with its key.
func (r *traceReads) scanCrossReference(row pgx.CollectableRow) (store.CrossReferenceRow, store.TraceKey, error) {
	var x store.CrossReferenceRow
	err := row.Scan(&x.ID, &x.Kind, &x.From, &x.FromVersion, &x.To, &x.ToVersion, &x.Author, &x.VerificationID,
		&x.IngestID, &x.CreatedAt)
	x.Team = r.p.Team
	return x, store.TraceKey{At: x.CreatedAt, IDs: []string{x.ID}}, err
}

// queueCases queues the page of cases, then for the same page the names of their positions'
// objects, their members' supports and their events.
func (r *traceReads) queueCases(b *pgx.Batch) {
	p := r.p
	queueKeyed(b, p, traceCasesSQL, p.After.Cases, 1, &r.cases, &r.out.Next.Cases, r.scanCase)
	b.Queue(traceCaseObjectsSQL, r.casePageArgs()...).Query(r.readCaseObjects)
	b.Queue(traceCaseSupportsSQL, r.casePageArgs(p.CaseSupports+1)...).Query(r.readCaseSupports)
	afterIDs, afterVersions := caseEventsAfter(p)
	b.Queue(traceCaseEventsSQL, r.casePageArgs(afterIDs, afterVersions)...).Query(r.readCaseEvents)
}

// casePageArgs returns the arguments of a read of the page of cases (traceCasePage's $1 to $5),
// followed by extra.
func (r *traceReads) casePageArgs(extra ...any) []any {
	p := r.p
	args := append(append([]any{p.Team, p.RelationshipID}, keyArgs(p.After.Cases, 1)...), p.Limit+1)
	return append(args, extra...)
}

// caseEventsAfter returns the cases of p.After.CaseEvents and the version after which each one's
// events start, as the parallel arrays $6 and $7 of traceCaseEventsSQL (empty, not NULL, for none).
func caseEventsAfter(p store.TraceLoadParams) ([]string, []int32) {
	afterIDs, afterVersions := []string{}, []int32{}
	for id, v := range p.After.CaseEvents {
		afterIDs, afterVersions = append(afterIDs, string(id)), append(afterVersions, int32(v))
	}
	return afterIDs, afterVersions
}

// scanCase scans a row of traceCasesSQL, with its key.
func (r *traceReads) scanCase(row pgx.CollectableRow) (store.RecallCase, store.TraceKey, error) {
	c, err := scanRecallCase(row, r.p.Team)
	return c, store.TraceKey{At: c.OpenedAt, IDs: []string{string(c.ID)}}, err
}

// readCaseObjects reads the rows of traceCaseObjectsSQL into names.
func (r *traceReads) readCaseObjects(rows pgx.Rows) error {
	var id conflict.ID
	var pos conflict.PositionID
	var n store.ObjectName
	_, err := pgx.ForEachRow(rows, []any{&id, &pos, &n.Name, &n.Kind}, func() error {
		if r.names[id] == nil {
			r.names[id] = map[conflict.PositionID]store.ObjectName{}
		}
		r.names[id][pos] = n
		return nil
	})
	return err
}

// readCaseSupports reads the rows of traceCaseSupportsSQL: it counts each case's rows and keeps
// each member's distinct supports, effective unless their fragment is retired.
func (r *traceReads) readCaseSupports(rows pgx.Rows) error {
	var id conflict.ID
	var rel relationship.ID
	var sup evidence.Support
	_, err := pgx.ForEachRow(rows, []any{&id, &rel, &sup.Group, &sup.ContentHash, &sup.Effective}, func() error {
		r.supportRows[id]++
		if r.supports[id] == nil {
			r.supports[id] = map[relationship.ID][]evidence.Support{}
		}
		if k := (traceCaseSupport{id, rel, sup}); !r.seen[k] {
			r.seen[k] = true
			r.supports[id][rel] = append(r.supports[id][rel], sup)
		}
		return nil
	})
	return err
}

// readCaseEvents reads the rows of traceCaseEventsSQL into events.
func (r *traceReads) readCaseEvents(rows pgx.Rows) error {
	var err error
	r.events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.CaseEventRow, error) {
		var e store.CaseEventRow
		var prior, resulting string
		var ref, pos []byte
		err := row.Scan(&e.ID, &e.CaseID, &e.CaseVersion, &prior, &resulting, &e.ActorKind, &e.ActorProfile, &e.Reason,
			&e.PolicyVersion, &e.TimeBasis, &ref, &pos, &e.IngestID, &e.CreatedAt)
		e.Team, e.PriorStatus, e.ResultingStatus = r.p.Team, conflict.Status(prior), conflict.Status(resulting)
		e.Referenced, e.Positions = json.RawMessage(ref), json.RawMessage(pos)
		return e, err
	})
	return err
}

// traceCases assembles the page of cases: each with its objects' names, its members' supports and
// at most Limit of its events (EventsNext says where they go on).
func (r *traceReads) traceCases() []store.TraceCase {
	p := r.p
	var out []store.TraceCase
	for _, c := range r.cases {
		tc := store.TraceCase{Case: c, Objects: r.names[c.ID], MemberSupports: r.supports[c.ID],
			SupportsTruncated: r.supportRows[c.ID] > p.CaseSupports}
		for _, e := range r.events {
			if e.CaseID == c.ID {
				tc.Events = append(tc.Events, e)
			}
		}
		if len(tc.Events) > p.Limit {
			tc.Events, tc.EventsNext = tc.Events[:p.Limit], tc.Events[p.Limit-1].CaseVersion
		}
		out = append(out, tc)
	}
	return out
}

// scanTransition scans a row of traceTransitionsSQL; decision receives the decision that made it, if
// any.
func scanTransition(row pgx.CollectableRow, decision *string) (store.TransitionRow, error) {
	var t store.TransitionRow
	var fromStatus, toStatus, fromTier, toTier string
	err := row.Scan(&t.ID, &t.RelationshipID, &fromStatus, &toStatus, &fromTier, &toTier, &t.FromValidTo, &t.ToValidTo,
		&t.FromVersion, &t.ToVersion, &t.Reason, &t.ActorKind, &t.ActorProfile, &t.Related, &t.IngestID,
		&t.IdempotencyKey, &t.CreatedAt, decision)
	t.FromStatus, t.ToStatus = relationship.Status(fromStatus), relationship.Status(toStatus)
	t.FromTier, t.ToTier = relationship.Tier(fromTier), relationship.Tier(toTier)
	return t, err
}

// traceEndsSQL is the subject and object entities of the traced relationship: the first hop's frontier.
const traceEndsSQL = `(SELECT v.e FROM {schema}.relationships x CROSS JOIN LATERAL (VALUES (x.subject_entity_id), (x.object_entity_id)) v(e)
 WHERE x.team_id = ? AND x.relationship_id = ? AND v.e IS NOT NULL)`

// queueHop queues one hop of the neighbour walk: active relationships outside seen that touch the
// frontier, in (created_at, relationship_id) order, at most room+1 of them.
func queueHop(b *pgx.Batch, p store.TraceLoadParams, dst *[]store.RelationshipView, seen []string, frontier sq.Sqlizer, room int) error {
	sql, args, err := relationshipViewQuery(p.Team).
		Where(sq.Eq{"r.status": string(relationship.StatusActive)}).
		Where(sq.NotEq{"r.relationship_id": seen}).
		Where(frontier).
		OrderBy("r.created_at", "r.relationship_id").
		Limit(uint64(room + 1)).ToSql()
	if err != nil {
		return err
	}
	b.Queue("-- name: TraceNeighbours\n"+sql, args...).Query(func(rows pgx.Rows) error {
		var err error
		*dst, err = pgx.CollectRows(rows, scanRelationshipView)
		return err
	})
	return nil
}

// walkNeighbours walks active relationships that share an entity, breadth first, up to MaxDepth hops
// and MaxEdges relationships, inside the transaction TraceLoad opened on conn. first is the first
// hop, read in TraceLoad's batch; every further hop is one round trip, and COMMIT travels with the
// last one (or alone when the walk stops early).
func (s *Store) walkNeighbours(ctx context.Context, conn *pgxpool.Conn, p store.TraceLoadParams, out *store.TraceData,
	rel relationship.Relationship, first []store.RelationshipView) error {
	seenRel := []string{string(p.RelationshipID)}
	seenEnt := map[string]bool{string(rel.Subject): true}
	if rel.Object.EntityID != "" {
		seenEnt[string(rel.Object.EntityID)] = true
	}
	found := first
	for depth := 1; ; depth++ {
		room := p.MaxEdges - len(out.Neighbours)
		if len(found) > room {
			found, out.NeighboursTruncated = found[:room], true
		}
		var next []string
		for _, v := range found {
			out.Neighbours = append(out.Neighbours, v)
			seenRel = append(seenRel, string(v.Relationship.ID))
			for _, e := range []identity.EntityID{v.Relationship.Subject, v.Relationship.Object.EntityID} {
				if e != "" && !seenEnt[string(e)] {
					seenEnt[string(e)] = true
					next = append(next, string(e))
				}
			}
		}
		if depth == p.MaxDepth {
			return nil // COMMIT travelled with this hop
		}
		room = p.MaxEdges - len(out.Neighbours)
		if room <= 0 || len(next) == 0 {
			_, err := conn.Exec(ctx, "COMMIT")
			return err
		}
		b := &pgx.Batch{}
		if err := queueHop(b, p, &found, seenRel, sq.Or{sq.Eq{"r.subject_entity_id": next}, sq.Eq{"r.object_entity_id": next}}, room); err != nil {
			return err
		}
		if depth+1 == p.MaxDepth {
			b.Queue("COMMIT")
		}
		if err := s.sendOn(ctx, conn, b); err != nil {
			return err
		}
	}
}

package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	sq "github.com/Masterminds/squirrel"

	"github.com/jackc/pgx/v5"

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

const relationshipViewFrom = `relationships r
JOIN entities se ON se.team_id = r.team_id AND se.entity_id = r.subject_entity_id
LEFT JOIN entity_names sn ON sn.team_id = r.team_id AND sn.entity_id = r.subject_entity_id AND sn.name_kind = 'canonical'
LEFT JOIN entities oe ON oe.team_id = r.team_id AND oe.entity_id = r.object_entity_id
LEFT JOIN entity_names obn ON obn.team_id = r.team_id AND obn.entity_id = r.object_entity_id AND obn.name_kind = 'canonical'
LEFT JOIN literal_values v ON v.team_id = r.team_id AND v.value_id = r.object_value_id
JOIN predicate_definitions pd ON pd.team_id = r.team_id AND pd.predicate_key = r.predicate_key AND pd.version = r.predicate_version`

// relationshipViews runs the relationship-with-names read with the given filters.
func relationshipViews(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, b sq.SelectBuilder) ([]store.RelationshipView, error) {
	sql, args, err := b.ToSql()
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, "-- name: RelationshipViews\n"+sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	views, err := pgx.CollectRows(rows, scanRelationshipView)
	return views, translate(err)
}

func relationshipViewQuery(team identity.TeamID) sq.SelectBuilder {
	return psql.Select(relationshipViewColumns).From(relationshipViewFrom).Where(sq.Eq{"r.team_id": team})
}

// relationshipView reads one relationship with names. ErrNotFound when absent.
func (s *Store) relationshipView(ctx context.Context, team identity.TeamID, id relationship.ID) (store.RelationshipView, error) {
	views, err := relationshipViews(ctx, s.pool, relationshipViewQuery(team).Where(sq.Eq{"r.relationship_id": id}))
	if err != nil {
		return store.RelationshipView{}, err
	}
	if len(views) != 1 {
		return store.RelationshipView{}, fmt.Errorf("relationship %s: %w", id, store.ErrNotFound)
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

const (
	traceSupportsSQL = `-- name: TraceSupports
SELECT support_id, relationship_id, fragment_id, observation_id, verification_id, span_start, span_end, source_group,
       content_sha256, authority, author_profile_id, profile_id, ingest_id, created_at
FROM support_links WHERE team_id = $1 AND relationship_id = $2 ORDER BY created_at, support_id`
	traceFragmentsSQL = `-- name: TraceFragments
SELECT f.fragment_id, f.ingest_id, f.evidence_index, f.author_profile_id, f.source_type, f.authority, f.source_group,
       f.source_key, f.source_revision, f.content_sha256, CASE WHEN $3 THEN c.content ELSE '' END, f.created_at
FROM evidence_fragments f JOIN fragment_contents c ON c.team_id = f.team_id AND c.fragment_id = f.fragment_id
WHERE f.team_id = $1 AND f.fragment_id IN (SELECT fragment_id FROM support_links WHERE team_id = $1 AND relationship_id = $2)
ORDER BY f.created_at, f.fragment_id`
	traceObservationIDs = `(SELECT observation_id FROM support_links WHERE team_id = $1 AND relationship_id = $2
  UNION SELECT observation_id FROM relationships WHERE team_id = $1 AND relationship_id = $2)`
	traceObservationsSQL = `-- name: TraceObservations
SELECT observation_id, ingest_id, profile_id, proposal_id, subject_ref, subject_name, predicate_phrase,
       COALESCE(predicate_key, ''), COALESCE(predicate_version, 0), object_ref, object_name, object_value, polarity,
       modality, scope, valid_from, valid_to, citations, created_at
FROM observations WHERE team_id = $1 AND observation_id IN ` + traceObservationIDs + `
ORDER BY created_at, observation_id`
	traceVerificationsSQL = `-- name: TraceVerifications
SELECT verification_id, observation_id, verifier, verdict, confidence, rationale, confirmed_valid_from,
       support_granted, created_at
FROM verification_events WHERE team_id = $1 AND observation_id IN ` + traceObservationIDs + `
ORDER BY created_at, verification_id`
	traceTransitionsSQL = `-- name: TraceTransitions
SELECT transition_id, relationship_id, COALESCE(from_status, ''), to_status, COALESCE(from_tier, ''), to_tier,
       from_valid_to, to_valid_to, COALESCE(from_version, 0), to_version, reason, actor_kind,
       COALESCE(actor_profile_id, ''), COALESCE(related_relationship_id, ''), ingest_id, idempotency_key, created_at
FROM relationship_transitions WHERE team_id = $1 AND relationship_id = $2 ORDER BY to_version`
	traceResolutionsSQL = `-- name: TraceResolutions
SELECT resolution_id, observation_id, mention_ref, mention_name, entity_kind, COALESCE(entity_id, ''), decision,
       candidate_ids, profile_id, ingest_id, created_at
FROM entity_resolution_events
WHERE team_id = $1 AND (entity_id = ANY($3::text[]) OR observation_id IN ` + traceObservationIDs + `)
ORDER BY created_at, resolution_id`
)

const traceReviewItemsSQL = `-- name: TraceReviewItems
SELECT review_id, ingest_id, placement_item_id, kind, status, profile_id, observation_id, COALESCE(relationship_id, ''),
       related_ids, choices, created_at, resolved_at
FROM review_items WHERE team_id = $1 AND (relationship_id = $2 OR $2 = ANY(related_ids))
ORDER BY created_at, review_id`

const traceCrossRefsSQL = `-- name: TraceCrossReferences
SELECT xref_id, kind, from_relationship_id, from_version, to_relationship_id, to_version, author_profile_id,
       COALESCE(verification_id, ''), ingest_id, created_at
FROM relationship_cross_references
WHERE team_id = $1 AND (from_relationship_id = $2 OR to_relationship_id = $2)
ORDER BY created_at, xref_id`

const traceCaseEventsSQL = `-- name: TraceCaseEvents
SELECT event_id, conflict_id, case_version, COALESCE(prior_status, ''), resulting_status, actor_kind,
       COALESCE(actor_profile_id, ''), reason_code, policy_version, COALESCE(time_basis, ''), referenced, positions,
       ingest_id, created_at
FROM conflict_events
WHERE team_id = $1 AND conflict_id IN (SELECT conflict_id FROM conflict_position_members WHERE team_id = $1 AND relationship_id = $2)
ORDER BY conflict_id, case_version`

// TraceLoad returns the stored history of one relationship. ErrNotFound when absent.
func (s *Store) TraceLoad(ctx context.Context, p store.TraceLoadParams) (store.TraceData, error) {
	var out store.TraceData
	var err error
	if out.Relationship, err = s.relationshipView(ctx, p.Team, p.RelationshipID); err != nil {
		return out, err
	}
	rel := out.Relationship.Relationship
	entities := []string{string(rel.Subject)}
	if rel.Object.EntityID != "" {
		entities = append(entities, string(rel.Object.EntityID))
	}
	b := &pgx.Batch{}
	b.Queue(traceSupportsSQL, p.Team, p.RelationshipID).Query(func(rows pgx.Rows) error {
		out.Supports, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.SupportLinkRow, error) {
			var s store.SupportLinkRow
			var auth string
			err := row.Scan(&s.ID, &s.RelationshipID, &s.FragmentID, &s.ObservationID, &s.VerificationID, &s.Start, &s.End,
				&s.SourceGroup, &s.ContentHash, &auth, &s.Author, &s.Profile, &s.IngestID, &s.CreatedAt)
			s.Team, s.Authority = p.Team, evidence.Authority(auth)
			return s, err
		})
		return err
	})
	b.Queue(traceFragmentsSQL, p.Team, p.RelationshipID, p.IncludeContent).Query(func(rows pgx.Rows) error {
		out.Fragments, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.FragmentRow, error) {
			var f store.FragmentRow
			var st, auth string
			err := row.Scan(&f.ID, &f.IngestID, &f.EvidenceIndex, &f.Author, &st, &auth, &f.SourceGroup, &f.SourceKey,
				&f.Revision, &f.ContentHash, &f.Content, &f.CreatedAt)
			f.Team, f.SourceType, f.Authority = p.Team, evidence.SourceType(st), evidence.Authority(auth)
			return f, err
		})
		return err
	})
	b.Queue(traceObservationsSQL, p.Team, p.RelationshipID).Query(func(rows pgx.Rows) error {
		out.Observations, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ObservationRow, error) {
			var o store.ObservationRow
			var value, cites []byte
			var pol, mod string
			err := row.Scan(&o.ID, &o.IngestID, &o.Profile, &o.ProposalID, &o.SubjectRef, &o.SubjectName,
				&o.PredicatePhrase, &o.PredicateKey, &o.PredicateVersion, &o.ObjectRef, &o.ObjectName, &value, &pol,
				&mod, &o.Scope, &o.ValidFrom, &o.ValidTo, &cites, &o.CreatedAt)
			o.Team, o.Polarity, o.Modality = p.Team, relationship.Polarity(pol), relationship.Modality(mod)
			if value != nil {
				o.ObjectValue = json.RawMessage(value)
			}
			o.Citations = json.RawMessage(cites)
			return o, err
		})
		return err
	})
	b.Queue(traceVerificationsSQL, p.Team, p.RelationshipID).Query(func(rows pgx.Rows) error {
		out.Verifications, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.VerificationRow, error) {
			var v store.VerificationRow
			var verdict string
			err := row.Scan(&v.ID, &v.ObservationID, &v.Verifier, &verdict, &v.Confidence, &v.Rationale,
				&v.ConfirmedValidFrom, &v.SupportGranted, &v.CreatedAt)
			v.Team, v.Verdict = p.Team, evidence.Verdict(verdict)
			return v, err
		})
		return err
	})
	b.Queue(traceTransitionsSQL, p.Team, p.RelationshipID).Query(func(rows pgx.Rows) error {
		out.Transitions, err = pgx.CollectRows(rows, scanTransition)
		return err
	})
	b.Queue(traceResolutionsSQL, p.Team, p.RelationshipID, entities).Query(func(rows pgx.Rows) error {
		out.Resolutions, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ResolutionRow, error) {
			var r store.ResolutionRow
			var decision string
			var cands []string
			err := row.Scan(&r.ID, &r.ObservationID, &r.MentionRef, &r.MentionName, &r.EntityKind, &r.EntityID,
				&decision, &cands, &r.Profile, &r.IngestID, &r.CreatedAt)
			r.Team, r.Decision = p.Team, identity.Decision(decision)
			for _, c := range cands {
				r.Candidates = append(r.Candidates, identity.EntityID(c))
			}
			return r, err
		})
		return err
	})
	b.Queue(traceReviewItemsSQL, p.Team, p.RelationshipID).Query(func(rows pgx.Rows) error {
		out.ReviewItems, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ReviewItemView, error) {
			var v store.ReviewItemView
			var choices []byte
			err := row.Scan(&v.ID, &v.IngestID, &v.PlacementItemID, &v.Kind, &v.Status, &v.Profile, &v.ObservationID,
				&v.RelationshipID, &v.Related, &choices, &v.CreatedAt, &v.ResolvedAt)
			v.Team, v.Choices = p.Team, json.RawMessage(choices)
			return v, err
		})
		return err
	})
	b.Queue(traceCrossRefsSQL, p.Team, p.RelationshipID).Query(func(rows pgx.Rows) error {
		out.CrossReferences, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.CrossReferenceRow, error) {
			var x store.CrossReferenceRow
			err := row.Scan(&x.ID, &x.Kind, &x.From, &x.FromVersion, &x.To, &x.ToVersion, &x.Author, &x.VerificationID,
				&x.IngestID, &x.CreatedAt)
			x.Team = p.Team
			return x, err
		})
		return err
	})
	var cases []store.RecallCase
	b.Queue(recallCasesSQL, p.Team, []string{string(p.RelationshipID)}, nil).Query(func(rows pgx.Rows) error {
		cases, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RecallCase, error) {
			return scanRecallCase(row, p.Team)
		})
		return err
	})
	var events []store.CaseEventRow
	b.Queue(traceCaseEventsSQL, p.Team, p.RelationshipID).Query(func(rows pgx.Rows) error {
		events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.CaseEventRow, error) {
			var e store.CaseEventRow
			var prior, resulting string
			var ref, pos []byte
			err := row.Scan(&e.ID, &e.CaseID, &e.CaseVersion, &prior, &resulting, &e.ActorKind, &e.ActorProfile, &e.Reason,
				&e.PolicyVersion, &e.TimeBasis, &ref, &pos, &e.IngestID, &e.CreatedAt)
			e.Team, e.PriorStatus, e.ResultingStatus = p.Team, conflict.Status(prior), conflict.Status(resulting)
			e.Referenced, e.Positions = json.RawMessage(ref), json.RawMessage(pos)
			return e, err
		})
		return err
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return out, translate(err)
	}
	for _, c := range cases {
		tc := store.TraceCase{Case: c}
		for _, e := range events {
			if e.CaseID == c.ID {
				tc.Events = append(tc.Events, e)
			}
		}
		out.Cases = append(out.Cases, tc)
	}
	if err := s.loadNeighbours(ctx, p, &out, entities); err != nil {
		return out, err
	}
	return out, nil
}

func scanTransition(row pgx.CollectableRow) (store.TransitionRow, error) {
	var t store.TransitionRow
	var fromStatus, toStatus, fromTier, toTier string
	err := row.Scan(&t.ID, &t.RelationshipID, &fromStatus, &toStatus, &fromTier, &toTier, &t.FromValidTo, &t.ToValidTo,
		&t.FromVersion, &t.ToVersion, &t.Reason, &t.ActorKind, &t.ActorProfile, &t.Related, &t.IngestID,
		&t.IdempotencyKey, &t.CreatedAt)
	t.FromStatus, t.ToStatus = relationship.Status(fromStatus), relationship.Status(toStatus)
	t.FromTier, t.ToTier = relationship.Tier(fromTier), relationship.Tier(toTier)
	return t, err
}

// loadNeighbours walks active relationships that share an entity, breadth first, up to MaxDepth hops
// and MaxEdges relationships. One query per hop.
func (s *Store) loadNeighbours(ctx context.Context, p store.TraceLoadParams, out *store.TraceData, frontier []string) error {
	seenRel := []string{string(p.RelationshipID)}
	seenEnt := map[string]bool{}
	for _, e := range frontier {
		seenEnt[e] = true
	}
	for depth := 0; depth < p.MaxDepth && len(frontier) > 0; depth++ {
		room := p.MaxEdges - len(out.Neighbours)
		if room <= 0 {
			break
		}
		found, err := relationshipViews(ctx, s.pool, relationshipViewQuery(p.Team).
			Where(sq.Eq{"r.status": string(relationship.StatusActive)}).
			Where(sq.NotEq{"r.relationship_id": seenRel}).
			Where(sq.Or{sq.Eq{"r.subject_entity_id": frontier}, sq.Eq{"r.object_entity_id": frontier}}).
			OrderBy("r.created_at", "r.relationship_id").
			Limit(uint64(room+1)))
		if err != nil {
			return err
		}
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
		frontier = next
	}
	return nil
}

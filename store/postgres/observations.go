package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// ObservationGet's reads: the observation (its primary key), the fragments of its ingest with their
// contents (evidence_fragments_ingest) in evidence order, and its resolution events
// (entity_resolution_events_observation) oldest first. The NULLs observationInsertSQL and
// resolutionInsertSQL store for an empty value read back as the empty value.
const (
	observationGetSQL = `-- name: ObservationGet
SELECT ingest_id, profile_id, proposal_id, subject_ref, subject_name, predicate_phrase, COALESCE(predicate_key, ''),
       COALESCE(predicate_version, 0), object_ref, object_name, object_value, polarity, modality, scope, valid_from,
       valid_to, citations, created_at
FROM {schema}.observations WHERE team_id = $1 AND observation_id = $2`
	observationFragmentsSQL = `-- name: ObservationFragments
SELECT f.fragment_id, f.ingest_id, f.evidence_index, f.author_profile_id, f.source_type, f.authority, f.source_group,
       f.source_key, f.source_revision, f.content_sha256, c.content, f.created_at,
       EXISTS (SELECT 1 FROM {schema}.fragment_erasures x WHERE x.team_id = $1 AND x.fragment_id = f.fragment_id)
FROM {schema}.observations o
JOIN {schema}.evidence_fragments f ON f.team_id = $1 AND f.ingest_id = o.ingest_id
JOIN {schema}.fragment_contents c ON c.team_id = $1 AND c.fragment_id = f.fragment_id
WHERE o.team_id = $1 AND o.observation_id = $2
ORDER BY f.evidence_index, f.fragment_id`
	observationResolutionsSQL = `-- name: ObservationResolutions
SELECT resolution_id, mention_ref, mention_name, entity_kind, COALESCE(entity_id, ''), decision, candidate_ids,
       profile_id, ingest_id, created_at, identity_context, distinct_from_ids
FROM {schema}.entity_resolution_events WHERE team_id = $1 AND observation_id = $2
ORDER BY created_at, resolution_id`
)

// ObservationGet reads observation id of team with the fragments of its ingest and its resolution
// events, in one round trip: a read-only transaction of team. ErrNotFound when the team has none.
func (s *Store) ObservationGet(ctx context.Context, team identity.TeamID, id string) (store.StoredObservation, error) {
	var out store.StoredObservation
	b := &pgx.Batch{}
	b.Queue(observationGetSQL, team, id).QueryRow(func(row pgx.Row) error {
		o := store.ObservationRow{Team: team, ID: id}
		var value, cites []byte
		var pol, mod string
		if err := row.Scan(&o.IngestID, &o.Profile, &o.ProposalID, &o.SubjectRef, &o.SubjectName, &o.PredicatePhrase,
			&o.PredicateKey, &o.PredicateVersion, &o.ObjectRef, &o.ObjectName, &value, &pol, &mod, &o.Scope,
			&o.ValidFrom, &o.ValidTo, &cites, &o.CreatedAt); err != nil {
			return err
		}
		o.Polarity, o.Modality = relationship.Polarity(pol), relationship.Modality(mod)
		if value != nil {
			o.ObjectValue = json.RawMessage(value)
		}
		o.Citations = json.RawMessage(cites)
		out.Observation = o
		return nil
	})
	b.Queue(observationFragmentsSQL, team, id).Query(func(rows pgx.Rows) (err error) {
		out.Fragments, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.FragmentRow, error) {
			f := store.FragmentRow{Team: team}
			var st, auth string
			err := row.Scan(&f.ID, &f.IngestID, &f.EvidenceIndex, &f.Author, &st, &auth, &f.SourceGroup, &f.SourceKey,
				&f.Revision, &f.ContentHash, &f.Content, &f.CreatedAt, &f.Erased)
			f.SourceType, f.Authority = evidence.SourceType(st), evidence.Authority(auth)
			return f, err
		})
		return err
	})
	b.Queue(observationResolutionsSQL, team, id).Query(func(rows pgx.Rows) (err error) {
		out.Resolutions, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ResolutionRow, error) {
			r := store.ResolutionRow{Team: team, ObservationID: id}
			var decision string
			var cands, distinct []string
			err := row.Scan(&r.ID, &r.MentionRef, &r.MentionName, &r.EntityKind, &r.EntityID, &decision, &cands,
				&r.Profile, &r.IngestID, &r.CreatedAt, &r.Context, &distinct)
			r.Decision = identity.Decision(decision)
			r.Candidates, r.DistinctFrom = entityIDs(cands), entityIDs(distinct)
			if len(r.Context) == 0 {
				r.Context = nil
			}
			return r, err
		})
		return err
	})
	if err := s.send(ctx, team, b, false); err != nil {
		return store.StoredObservation{}, err
	}
	return out, nil
}

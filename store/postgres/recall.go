package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Scores are double precision from the first hit on: ts_rank and ts_rank_cd return single precision,
// whose sums depend on the order rows reach the aggregate, and equal scores must stay equal so the
// documented tie-break (earlier creation, then ID) decides.
//
// Recall parameters: $1 team, $2 query text, $3 the instant of the current view, $4 valid_at,
// $5 known_at, $6 per-branch limit, $7 predicate key (” for any), $8 name n-grams, $9 expansion
// entity IDs, $10 the rows each source of hits may contribute plus one (a source that reaches it was
// cut: the statement reports a 'truncated_fulltext' or 'truncated_entity_name' row); for the named
// entities' relationships, the rows each entity may contribute on each side.
//
// recallState is a relationship's state at known_at (or now): its last transition recorded then.
const recallState = `JOIN LATERAL (
    SELECT t.to_status AS status, t.to_tier AS tier, t.to_valid_to AS valid_to, t.to_version AS version
    FROM {schema}.relationship_transitions t
    WHERE t.team_id = $1 AND t.relationship_id = r.relationship_id
      AND ($5::timestamptz IS NULL OR t.created_at <= $5::timestamptz)
    ORDER BY t.to_version DESC LIMIT 1) st ON true`

// recallFilter keeps what the requested view shows: without valid_at, relationships active at the
// view's instant; with valid_at, active or superseded ones whose validity contains it.
const recallFilter = `r.team_id = $1
  AND ($5::timestamptz IS NULL OR r.created_at <= $5::timestamptz)
  AND ($7::text = '' OR r.predicate_key = $7::text)
  AND CASE WHEN $4::timestamptz IS NULL
      THEN st.status = 'active' AND (st.valid_to IS NULL OR st.valid_to > $3::timestamptz)
      ELSE st.status IN ('active', 'superseded') AND (r.valid_from IS NULL OR r.valid_from <= $4::timestamptz)
           AND (st.valid_to IS NULL OR st.valid_to > $4::timestamptz)
  END`

const recallSearchSQL = `-- name: RecallSearch
WITH q AS (SELECT websearch_to_tsquery('english', $2::text) AS tsq),
-- The authoritative profiles: $11, or when it is NULL those of the team's policy in force.
auth AS MATERIALIZED (
    SELECT coalesce($11::text[], (SELECT tp.authoritative_profile_ids FROM {schema}.team_policies tp
                                  WHERE tp.team_id = $1 ORDER BY tp.version DESC LIMIT 1), '{}') AS ids
),
search AS MATERIALIZED (
    -- Full-text hits from the postings, through the owner's function (decisions 53, 139): at most $10
    -- rows per driving lexeme, and a 'cut_window' or 'cut_reads' row when a driver had more.
    SELECT h.source, h.relationship_id AS id, h.score FROM {schema}.densemem_search_hits($1, $2, $5, $10) h
),
-- The full-text candidates the view shows, each scored by its best matching evidence, then each of
-- their predicate versions' phrase score once (to_tsvector costs more than the rest of a candidate's row).
candidates AS MATERIALIZED (
    SELECT r.relationship_id AS id, h.score, r.predicate_key, r.predicate_version,
           st.status, st.tier, st.valid_to, st.version, r.created_at
    FROM (SELECT id, max(score) AS score FROM search WHERE source = 'text' GROUP BY id) h
    JOIN LATERAL (SELECT * FROM {schema}.relationships r WHERE r.team_id = $1 AND r.relationship_id = h.id LIMIT 1) r ON true
    ` + recallState + `
    WHERE ` + recallFilter + `
),
phrase AS MATERIALIZED (
    SELECT pd.predicate_key, pd.version, ts_rank_cd(to_tsvector('english', replace(pd.predicate_key, '_', ' ') || ' ' ||
               array_to_string(pd.aliases, ' ')), q.tsq)::float8 AS score
    FROM (SELECT DISTINCT predicate_key, predicate_version FROM candidates) c
    CROSS JOIN q
    JOIN {schema}.predicate_definitions pd ON pd.team_id = $1 AND pd.predicate_key = c.predicate_key AND pd.version = c.predicate_version
),
fulltext AS (
    SELECT c.id, c.score + pd.score AS score, c.status, c.tier, c.valid_to, c.version, c.created_at
    FROM candidates c
    JOIN phrase pd ON pd.predicate_key = c.predicate_key AND pd.version = c.predicate_version
    ORDER BY score DESC, c.created_at, c.id
    LIMIT $6
),
named AS (
    SELECT DISTINCT n.entity_id FROM {schema}.entity_names n
    WHERE n.team_id = $1 AND n.normalized_name = ANY($8::text[]) AND ($5::timestamptz IS NULL OR n.created_at <= $5::timestamptz)
  UNION
    SELECT unnest($9::text[])
),
subject_named AS (
    -- Per named entity, its first relationships in creation order that the view shows: an ordered
    -- scan of relationships_subject_created that stops at $10 (decision 122).
    SELECT named.entity_id, x.relationship_id FROM named CROSS JOIN LATERAL (
        SELECT r.relationship_id FROM {schema}.relationships r
        ` + recallState + `
        WHERE r.subject_entity_id = named.entity_id AND ` + recallFilter + `
        ORDER BY r.created_at, r.relationship_id LIMIT $10) x
),
object_named AS (
    SELECT named.entity_id, x.relationship_id FROM named CROSS JOIN LATERAL (
        SELECT r.relationship_id FROM {schema}.relationships r
        ` + recallState + `
        WHERE r.object_entity_id = named.entity_id AND ` + recallFilter + `
        ORDER BY r.created_at, r.relationship_id LIMIT $10) x
),
entity_hits AS (
    SELECT r.relationship_id AS id, count(*) AS matched
    FROM (SELECT relationship_id FROM subject_named UNION ALL SELECT relationship_id FROM object_named) r
    GROUP BY r.relationship_id
),
entity_name AS (
    SELECT r.relationship_id AS id, e.matched::float8 AS score, st.status, st.tier, st.valid_to, st.version, r.created_at
    FROM entity_hits e
    JOIN LATERAL (SELECT * FROM {schema}.relationships r WHERE r.team_id = $1 AND r.relationship_id = e.id LIMIT 1) r ON true
    ` + recallState + `
    WHERE ` + recallFilter + `
    ORDER BY score DESC, r.created_at, r.relationship_id
    LIMIT $6
)
-- Each candidate with what the boosts need (its creation, and whether effective evidence in the
-- view carries allowed authority: labelled authoritative by one of auth's profiles), so that only
-- the results' details are read afterwards.
SELECT b.branch, b.id, b.score, b.status, b.tier, b.valid_to, b.version, b.created_at,
       cardinality(auth.ids) > 0 AND EXISTS (SELECT 1 FROM {schema}.support_links s
           WHERE s.team_id = $1 AND s.relationship_id = b.id AND s.authority = 'authoritative'
             AND s.author_profile_id = ANY(auth.ids) AND ($5::timestamptz IS NULL OR s.created_at <= $5::timestamptz)
             AND NOT EXISTS (SELECT 1 FROM {schema}.fragment_retirements fr WHERE fr.team_id = $1
                             AND fr.fragment_id = s.fragment_id AND ($5::timestamptz IS NULL OR fr.created_at <= $5::timestamptz)))
FROM (SELECT 'fulltext' AS branch, id, score, status, tier, valid_to, version, created_at FROM fulltext
      UNION ALL
      SELECT 'entity_name', id, score, status, tier, valid_to, version, created_at FROM entity_name) b
CROSS JOIN auth
UNION ALL
SELECT 'truncated_fulltext', '', 0, '', '', NULL, 0, NULL, false WHERE EXISTS (SELECT 1 FROM search WHERE source = 'cut_window')
UNION ALL
SELECT 'truncated_reads', '', 0, '', '', NULL, 0, NULL, false WHERE EXISTS (SELECT 1 FROM search WHERE source = 'cut_reads')
UNION ALL
SELECT 'truncated_entity_name', '', 0, '', '', NULL, 0, NULL, false
WHERE EXISTS (SELECT 1 FROM subject_named GROUP BY entity_id HAVING count(*) >= $10)
   OR EXISTS (SELECT 1 FROM object_named GROUP BY entity_id HAVING count(*) >= $10)`

// RecallSearch runs both ranking branches in one statement and returns each branch in rank order.
//
// Each source of candidates contributes at most a window of rows (decision 122): PerBranch at first,
// so that the work of a recall is bounded by its result limit rather than by the number of matches.
// When a source was cut and the view's filters left its branch with fewer than PerBranch
// candidates, the search runs again with a window eight times as wide, up to MaxHits.
func (s *Store) RecallSearch(ctx context.Context, p store.RecallSearchParams) (store.RecallSearch, error) {
	window := int64(math.MaxInt64 - 1)
	if p.MaxHits > 0 {
		window = int64(min(max(p.PerBranch, 1), p.MaxHits))
	}
	var principal *store.Principal
	for {
		out, cut, err := s.recallSearch(ctx, p, window, principal)
		if err != nil {
			return store.RecallSearch{}, err
		}
		principal = &out.Principal
		short := (cut[0] && len(out.FullText) < p.PerBranch) || (cut[1] && len(out.EntityName) < p.PerBranch)
		if !short || p.MaxHits <= 0 || window >= int64(p.MaxHits) {
			return out, nil
		}
		window = min(window*8, int64(p.MaxHits))
	}
}

// recallSearch runs the search with each source cut at window rows; cut reports, for the full-text
// and the entity-name branch, that one of its sources had more.
func (s *Store) recallSearch(ctx context.Context, p store.RecallSearchParams, window int64,
	loaded *store.Principal) (store.RecallSearch, [2]bool, error) {
	var out store.RecallSearch
	var cut [2]bool
	expand := idStrings(p.ExpandFrom)
	names := p.Names
	if names == nil {
		names = []string{}
	}
	// One round trip; send runs it with its generic plan: planning it per call cost more than running
	// it, and the custom plan at small team sizes chose a scan.
	b := &pgx.Batch{}
	authoritative := make([]string, len(p.Authoritative))
	for i, a := range p.Authoritative {
		authoritative[i] = string(a)
	}
	if p.Principal != nil {
		if len(p.Authoritative) > 0 || p.Principal.Team != p.Team {
			return out, cut, fmt.Errorf("%w: RecallSearchParams: with Principal set, Authoritative must be empty (the policy's are used) and Principal.Team must be Team",
				store.ErrMisconfigured)
		}
		authoritative = nil // the policy in force's, read by the statement
		if loaded != nil {
			out.Principal = *loaded
		} else {
			b.Queue(principalSQL, p.Principal.Team, p.Principal.Profile).QueryRow(func(row pgx.Row) (err error) {
				out.Principal, err = scanPrincipal(row, p.Principal.Team, p.Principal.Profile)
				return err
			})
		}
	}
	b.Queue(recallSearchSQL, p.Team, p.Query, p.At, p.ValidAt, p.KnownAt, p.PerBranch, p.PredicateKey, names, expand, window+1,
		authoritative).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var branch, status, tier string
				var r store.RankedRelationship
				var created *time.Time
				if err := rows.Scan(&branch, &r.ID, &r.Score, &status, &tier, &r.ValidTo, &r.Version, &created,
					&r.Authority); err != nil {
					return err
				}
				if created != nil {
					r.CreatedAt = *created
				}
				r.Status, r.Tier = relationship.Status(status), relationship.Tier(tier)
				switch branch {
				case "fulltext":
					out.FullText = append(out.FullText, r)
				case "entity_name":
					out.EntityName = append(out.EntityName, r)
				case "truncated_fulltext":
					cut[0], out.HitsTruncated = true, true
				case "truncated_reads":
					// A driver read all the postings it may before filling its window (a sparse AND):
					// widening would read eight times as many for few matches, so the search reports
					// the cut and stops there (decision 139).
					out.HitsTruncated = true
				default:
					cut[1], out.HitsTruncated = true, true
				}
			}
			return rows.Err()
		})
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.RecallSearch{}, cut, err
	}
	return out, cut, nil
}

// recallEvidenceSQL reads each support's cited span as bytes, at most $4 of them: the excerpt limit
// plus a lookahead, cut in Go on a character boundary (evidence.Excerpt). Cutting text in SQL by bytes
// could split a character, which PostgreSQL refuses to convert back to text. Per relationship it
// reads the first $5 effective supports (all when NULL) in Trace's order (support_links_relationship)
// and counts them all.
const recallEvidenceSQL = `-- name: RecallEvidence
SELECT s.relationship_id, s.support_id, s.fragment_id, s.span_start, s.span_end,
       substring(convert_to(c.content, 'UTF8') FROM s.span_start + 1 FOR least(s.span_end - s.span_start, $4::int)),
       f.source_type, s.authority, s.source_group, s.content_sha256, s.author_profile_id, s.created_at,
       EXISTS (SELECT 1 FROM {schema}.fragment_erasures x WHERE x.team_id = $1 AND x.fragment_id = s.fragment_id),
       s.observation_id, s.verification_id, n.effective
FROM unnest($2::text[]) AS id (relationship_id)
CROSS JOIN LATERAL (SELECT count(*)::int AS effective FROM {schema}.support_links s
    WHERE s.team_id = $1 AND s.relationship_id = id.relationship_id AND ($3::timestamptz IS NULL OR s.created_at <= $3::timestamptz)
      AND NOT EXISTS (SELECT 1 FROM {schema}.fragment_retirements fr
                      WHERE fr.team_id = $1 AND fr.fragment_id = s.fragment_id
                        AND ($3::timestamptz IS NULL OR fr.created_at <= $3::timestamptz))) n
CROSS JOIN LATERAL (SELECT * FROM {schema}.support_links s
    WHERE s.team_id = $1 AND s.relationship_id = id.relationship_id AND ($3::timestamptz IS NULL OR s.created_at <= $3::timestamptz)
      AND NOT EXISTS (SELECT 1 FROM {schema}.fragment_retirements fr
                      WHERE fr.team_id = $1 AND fr.fragment_id = s.fragment_id
                        AND ($3::timestamptz IS NULL OR fr.created_at <= $3::timestamptz))
    ORDER BY s.created_at, s.observation_id, s.verification_id, s.support_id
    LIMIT $5::int) s
JOIN {schema}.evidence_fragments f ON f.team_id = $1 AND f.fragment_id = s.fragment_id
JOIN {schema}.fragment_contents c ON c.team_id = $1 AND c.fragment_id = s.fragment_id
ORDER BY s.relationship_id, s.created_at, s.observation_id, s.verification_id, s.support_id`

const recallCasesSQL = `-- name: RecallCases
SELECT DISTINCT ON (e.conflict_id) e.conflict_id, c.subject_entity_id, c.predicate_key, c.scope, e.resulting_status,
       e.case_version, c.opened_at, c.review_due_at, c.resolved_at, c.effective_at, COALESCE(c.effective_time_basis, ''),
       COALESCE(c.preferred_position_id, ''), c.policy_version, e.positions, c.kind
FROM {schema}.conflict_events e
JOIN {schema}.conflict_cases c ON c.team_id = $1 AND c.conflict_id = e.conflict_id
WHERE e.team_id = $1
  AND e.conflict_id IN (SELECT m.conflict_id FROM {schema}.conflict_position_members m WHERE m.team_id = $1 AND m.relationship_id = ANY($2::text[]))
  AND ($3::timestamptz IS NULL OR e.created_at <= $3::timestamptz)
ORDER BY e.conflict_id, e.case_version DESC`

// RecallDetails reads, in one round trip, the names, effective evidence and (optionally) the conflict
// cases of relationships, as recorded at KnownAt when it is set.
func (s *Store) RecallDetails(ctx context.Context, p store.RecallDetailsParams) (store.RecallDetails, error) {
	var out store.RecallDetails
	if len(p.Relationships) == 0 {
		return out, nil
	}
	ids := make([]string, len(p.Relationships))
	for i, id := range p.Relationships {
		ids[i] = string(id)
	}
	sql, args, err := relationshipViewQuery(p.Team).Where(sq.Eq{"r.relationship_id": ids}).OrderBy("r.relationship_id").ToSql()
	if err != nil {
		return out, err
	}
	b := &pgx.Batch{}
	b.Queue("-- name: RecallViews\n"+sql, args...).Query(func(rows pgx.Rows) error {
		out.Views, err = pgx.CollectRows(rows, scanRelationshipView)
		return err
	})
	const read = evidence.MaxExcerptBytes + evidence.ExcerptLookahead
	var perRelationship *int
	if p.MaxExcerpts > 0 {
		perRelationship = &p.MaxExcerpts
	}
	b.Queue(recallEvidenceSQL, p.Team, ids, p.KnownAt, read, perRelationship).Query(func(rows pgx.Rows) error {
		out.Evidence, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RecallEvidence, error) {
			var e store.RecallEvidence
			var st, auth string
			var span []byte
			err := row.Scan(&e.RelationshipID, &e.SupportID, &e.FragmentID, &e.Start, &e.End, &span, &st, &auth,
				&e.SourceGroup, &e.ContentHash, &e.Author, &e.CreatedAt, &e.Erased, &e.ObservationID, &e.VerificationID,
				&e.Effective)
			e.SourceType, e.Authority = evidence.SourceType(st), evidence.Authority(auth)
			if !e.Erased {
				e.Excerpt, e.ExcerptCut = evidence.Excerpt(string(span), evidence.MaxExcerptBytes, e.End-e.Start <= read)
			}
			return e, err
		})
		return err
	})
	if p.Cases {
		b.Queue(recallCasesSQL, p.Team, ids, p.KnownAt).Query(func(rows pgx.Rows) error {
			out.Cases, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RecallCase, error) {
				return scanRecallCase(row, p.Team)
			})
			return err
		})
	}
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.RecallDetails{}, err
	}
	return out, nil
}

// scanRecallCase scans a case read as recallCasesSQL reads it (conflict ID, subject, predicate key,
// scope, status, version, opened_at, review_due_at, resolved_at, effective_at, time basis,
// preferred position, policy version, positions, kind), and then any further columns into extra.
func scanRecallCase(row pgx.CollectableRow, team identity.TeamID, extra ...any) (store.RecallCase, error) {
	var c store.RecallCase
	var status, kind string
	var positions []byte
	err := row.Scan(append([]any{&c.ID, &c.Key.Subject, &c.Key.PredicateKey, &c.Key.Scope, &status, &c.Version, &c.OpenedAt,
		&c.ReviewDueAt, &c.ResolvedAt, &c.EffectiveAt, &c.TimeBasis, &c.Preferred, &c.PolicyVersion, &positions, &kind},
		extra...)...)
	if err != nil {
		return c, err
	}
	c.Key.Team, c.Status, c.Kind = team, conflict.Status(status), conflict.Kind(kind)
	return c, json.Unmarshal(positions, &c.Positions)
}

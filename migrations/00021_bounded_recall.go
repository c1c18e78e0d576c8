package migrations

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// Migration 21 bounds Recall's candidate generation by the result limit rather than by the number
// of matches (issue 14 item 1, decision 122). It is Go because it replaces the owner's search
// function, as migration 16 did.
//
//   - relationships_subject_created, relationships_object_created: an entity's relationships in
//     creation order, so that a branch reads the first few of a named entity that pass the view's
//     filters (an ordered index scan that stops at its limit) instead of all of them; the order is the
//     documented tie-break among equal scores (earlier creation, then ID).
//   - densemem_search_hits: the same three sources of full-text hits, each still cut at p_limit
//     rows, but planned for each call's query (plan_cache_mode = force_custom_plan on the function):
//     with the tsquery a constant, PostgreSQL estimates its matches from the tsvector statistics and
//     reads a common word's fragments in table order until p_limit of them matched, a rare word's by
//     its GIN index; a generic plan always built the whole GIN bitmap of every match first. The
//     relationships of matching names are read in creation order through the new indexes, and
//     relationships recorded after known_at are left out before the cut rather than after it.
func boundedRecallMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(21,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.execAll(boundedRecallUpSQL...) })
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.execAll(boundedRecallDownSQL...) })
		}})
}

// boundedRecallUpSQL creates the creation-ordered indexes and the bounded search function.
var boundedRecallUpSQL = []string{
	`CREATE INDEX relationships_subject_created ON relationships (team_id, subject_entity_id, created_at, relationship_id)`,
	`CREATE INDEX relationships_object_created ON relationships (team_id, object_entity_id, created_at, relationship_id)
    WHERE object_entity_id IS NOT NULL`,
	`CREATE OR REPLACE FUNCTION densemem_search_hits(p_team text, p_query text, p_known_at timestamptz, p_limit bigint)
RETURNS TABLE (source text, relationship_id text, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    q tsquery := websearch_to_tsquery('english', p_query);
BEGIN
    IF p_team IS DISTINCT FROM current_setting('densemem.team', true) THEN
        RAISE EXCEPTION 'densemem: search outside the transaction''s team' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY SELECT 'text'::text, s.relationship_id, ts_rank_cd(c.search, q)::float8
        FROM fragment_contents c
        JOIN support_links s ON s.team_id = c.team_id AND s.fragment_id = c.fragment_id
        WHERE c.team_id = p_team AND s.team_id = p_team AND c.search @@ q
          AND (p_known_at IS NULL OR s.created_at <= p_known_at)
          AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = p_team
                          AND fr.fragment_id = s.fragment_id AND (p_known_at IS NULL OR fr.created_at <= p_known_at))
        LIMIT p_limit;
    RETURN QUERY SELECT 'subject'::text, r.relationship_id, ts_rank_cd(n.search, q)::float8
        FROM entity_names n
        CROSS JOIN LATERAL (SELECT r.relationship_id FROM relationships r
            WHERE r.team_id = p_team AND r.subject_entity_id = n.entity_id
              AND (p_known_at IS NULL OR r.created_at <= p_known_at)
            ORDER BY r.created_at, r.relationship_id LIMIT p_limit) r
        WHERE n.team_id = p_team AND n.search @@ q AND (p_known_at IS NULL OR n.created_at <= p_known_at)
        LIMIT p_limit;
    RETURN QUERY SELECT 'object'::text, r.relationship_id, ts_rank_cd(n.search, q)::float8
        FROM entity_names n
        CROSS JOIN LATERAL (SELECT r.relationship_id FROM relationships r
            WHERE r.team_id = p_team AND r.object_entity_id = n.entity_id
              AND (p_known_at IS NULL OR r.created_at <= p_known_at)
            ORDER BY r.created_at, r.relationship_id LIMIT p_limit) r
        WHERE n.team_id = p_team AND n.search @@ q AND (p_known_at IS NULL OR n.created_at <= p_known_at)
        LIMIT p_limit;
END;
$$`,
}

// boundedRecallDownSQL puts back migration 16's search function and drops the indexes.
var boundedRecallDownSQL = []string{
	`ALTER FUNCTION densemem_search_hits(text, text, timestamptz, bigint) RESET plan_cache_mode`,
	searchHitsSQL(`AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = s.team_id
                          AND fr.fragment_id = s.fragment_id AND (p_known_at IS NULL OR fr.created_at <= p_known_at))`),
	`DROP INDEX relationships_object_created`,
	`DROP INDEX relationships_subject_created`,
}

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
//     rows, but read by the access path the query needs (boundedSearchHitsSQL): a common word's
//     fragments and names along the team's primary key until p_limit of them matched, a rare word's
//     by its GIN index; before, every call built the GIN bitmap of every match first. The
//     relationships of matching names are read in creation order through the new indexes, and
//     relationships recorded after known_at are left out before the cut rather than after it.
//   - densemem_search_dense: which of the two paths a query needs, from the planner's estimates.
func boundedRecallMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(21,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				if err := m.execAll(boundedRecallUpSQL...); err != nil {
					return err
				}
				// The search function (the owner's) calls it; nobody else needs to.
				const dense = "densemem_search_dense(text, text, tsquery, bigint)"
				if err := m.exec("ALTER FUNCTION %s OWNER TO %s", dense, m.owner); err != nil {
					return err
				}
				return m.exec("REVOKE ALL ON FUNCTION %s FROM PUBLIC", dense)
			})
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
	searchDenseSQL,
	boundedSearchHitsSQL,
}

// boundedSearchHitsSQL is Recall's full-text search function bounded by p_limit (decision 122).
//
// A plan that reads a table in key order until p_limit rows match is the cheap one for a common
// word and a full scan for a word that matches nothing; a GIN bitmap is the cheap one for a rare word
// and reads every match of a common one. Left to itself, the planner estimates a query's matches from
// the column's most common lexemes, but a lexeme that is not among them gets a default estimate that,
// with a small LIMIT, can make it scan the whole team for a word that is not there, and it
// underestimates the GIN bitmap of a common word (the team_id key of the btree_gin index holds every
// row of the team). So densemem_search_dense decides: a query common enough for a scan to fill the
// window quickly is read along the team's primary key (bitmap and sequential scans off: a sequential
// scan would read other teams' rows too), any other by its GIN index (plain and sequential scans
// off). With the path fixed so, each read has one statement per path with its own generic plan,
// instead of a plan made on every call, and none in parallel (starting workers costs more than a
// bounded read). Names are matched first (at most p_limit), then each
// matched entity's relationships are read in creation order (an ordered index scan).
const boundedSearchHitsSQL = `CREATE OR REPLACE FUNCTION densemem_search_hits(p_team text, p_query text, p_known_at timestamptz, p_limit bigint)
RETURNS TABLE (source text, relationship_id text, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = on SET enable_indexscan = on SET enable_bitmapscan = on SET max_parallel_workers_per_gather = 0 AS $$
DECLARE
    q tsquery := websearch_to_tsquery('english', p_query);
    ids text[];
    scores float8[];
BEGIN
    IF p_team IS DISTINCT FROM current_setting('densemem.team', true) THEN
        RAISE EXCEPTION 'densemem: search outside the transaction''s team' USING ERRCODE = '42501';
    END IF;
    -- Each read is written twice, one statement per access path, so that each keeps its own cached
    -- generic plan, made under its path's settings.
    IF densemem_search_dense('fragment_contents', p_team, q, p_limit) THEN
        PERFORM set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true);
        RETURN QUERY ` + textHitsSQL + `;
    ELSE
        PERFORM set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true);
        RETURN QUERY ` + textHitsSQL + `;
    END IF;
    PERFORM set_config('enable_seqscan', 'on', true), set_config('enable_indexscan', 'on', true),
        set_config('enable_bitmapscan', 'on', true);
    IF densemem_search_dense('entity_names', p_team, q, p_limit) THEN
        PERFORM set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true);
        ` + nameHitsSQL + `;
    ELSE
        PERFORM set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true);
        ` + nameHitsSQL + `;
    END IF;
    PERFORM set_config('enable_seqscan', 'on', true), set_config('enable_indexscan', 'on', true),
        set_config('enable_bitmapscan', 'on', true);
    RETURN QUERY SELECT 'subject'::text, r.relationship_id, x.score
        FROM unnest(ids, scores) x (entity_id, score)
        CROSS JOIN LATERAL (SELECT r.relationship_id FROM relationships r
            WHERE r.team_id = p_team AND r.subject_entity_id = x.entity_id
              AND (p_known_at IS NULL OR r.created_at <= p_known_at)
            ORDER BY r.created_at, r.relationship_id LIMIT p_limit) r
        LIMIT p_limit;
    RETURN QUERY SELECT 'object'::text, r.relationship_id, x.score
        FROM unnest(ids, scores) x (entity_id, score)
        CROSS JOIN LATERAL (SELECT r.relationship_id FROM relationships r
            WHERE r.team_id = p_team AND r.object_entity_id = x.entity_id
              AND (p_known_at IS NULL OR r.created_at <= p_known_at)
            ORDER BY r.created_at, r.relationship_id LIMIT p_limit) r
        LIMIT p_limit;
END;
$$`

// textHitsSQL reads the hits of the query q among the team's effective fragment text as of
// p_known_at, at most p_limit of them.
const textHitsSQL = `SELECT 'text'::text, s.relationship_id, ts_rank_cd(c.search, q)::float8
        FROM fragment_contents c
        JOIN support_links s ON s.team_id = c.team_id AND s.fragment_id = c.fragment_id
        WHERE c.team_id = p_team AND s.team_id = p_team AND c.search @@ q
          AND (p_known_at IS NULL OR s.created_at <= p_known_at)
          AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = p_team
                          AND fr.fragment_id = s.fragment_id AND (p_known_at IS NULL OR fr.created_at <= p_known_at))
        LIMIT p_limit`

// nameHitsSQL reads into ids and scores at most p_limit entity names of the team that match q as of
// p_known_at.
const nameHitsSQL = `SELECT array_agg(n.entity_id), array_agg(n.score) INTO ids, scores
        FROM (SELECT n.entity_id, ts_rank_cd(n.search, q)::float8 AS score FROM entity_names n
              WHERE n.team_id = p_team AND n.search @@ q AND (p_known_at IS NULL OR n.created_at <= p_known_at)
              LIMIT p_limit) n`

// searchDenseSQL decides whether a query is common enough in a table's search column for a scan in
// key order to find p_limit matches quickly. It asks the planner (EXPLAIN) for the query's estimated
// matches m and for those of a lexeme the column cannot hold among its most common elements, d (the
// planner's default for a rare lexeme: half the least common element's frequency). The query is dense
// when m > 1.5 d (the estimate comes from the statistics, not the default, so the scan cannot be
// looking for a word that is not there) and m² > p_limit · n, n the table's rows (the scan reads
// about p_limit · n / m rows, fewer than the m a GIN bitmap reads). EXPLAIN needs a volatile function.
const searchDenseSQL = `CREATE FUNCTION densemem_search_dense(p_table text, p_team text, q tsquery, p_limit bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    plan json;
    m float8;
    d float8;
    n float8;
BEGIN
    EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM %I t WHERE t.team_id = %L AND t.search @@ %L::tsquery',
                   p_table, p_team, q::text) INTO plan;
    m := (plan->0->'Plan'->>'Plan Rows')::float8;
    EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM %I t WHERE t.team_id = %L AND t.search @@ %L::tsquery',
                   p_table, p_team, 'densemem-absent-lexeme') INTO plan;
    d := (plan->0->'Plan'->>'Plan Rows')::float8;
    SELECT greatest(reltuples, 0) INTO n FROM pg_class WHERE oid = p_table::regclass;
    RETURN m > 1.5 * d AND m * m > p_limit * n;
END;
$$`

// boundedRecallDownSQL puts back migration 16's search function and drops the indexes.
var boundedRecallDownSQL = []string{
	`ALTER FUNCTION densemem_search_hits(text, text, timestamptz, bigint) RESET ALL`,
	searchHitsSQL(`AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = s.team_id
                          AND fr.fragment_id = s.fragment_id AND (p_known_at IS NULL OR fr.created_at <= p_known_at))`),
	`DROP FUNCTION densemem_search_dense(text, text, tsquery, bigint)`,
	`DROP INDEX relationships_object_created`,
	`DROP INDEX relationships_subject_created`,
}

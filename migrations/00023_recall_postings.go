package migrations

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// Migration 23 gives Recall's full-text search impact-ordered postings (issue 21 item 2, decision
// 139), so that a query's candidates are its best matches by relevance, read in bounded work,
// without reading the team's fragments in key order and without asking the planner anything per
// call. It is Go because it grants privileges to the configurable roles and replaces the owner's
// search function, as migrations 16 and 21 did.
//
//   - recall_postings: one row per (fragment, lexeme of its text): the lexeme's impact (how many
//     times the text holds it: the single-word ts_rank grows with it and with nothing else) and the
//     fragment's recorded time. recall_postings_order lists a team's postings of a lexeme best
//     first — impact, then earlier creation, then fragment ID, the documented tie-break — so the
//     first rows of a lexeme are its best matches. Rows are written by row triggers on
//     fragment_contents (insert: the new fragment's postings; update, which only privacy erasure
//     does: the old text's postings deleted, the new text's written), so every writer keeps them and
//     none can forget; existing fragments are backfilled here. The runtime role may SELECT and
//     INSERT (its inserts of fragment contents fire the trigger), the reviewer role SELECT; erasure
//     deletes through the owner's densemem_erase. Row-level security like every table.
//   - densemem_search_hits: the same signature, a new body (postingsSearchHitsSQL): no EXPLAIN, no
//     choice of path, no reads of the team in key order; only fragment text (names are the
//     entity-name branch's).
//   - densemem_search_dense is dropped.
func recallPostingsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(23,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				if err := m.execAll(recallPostingsUpSQL...); err != nil {
					return err
				}
				for _, f := range []string{"densemem_postings_insert()", "densemem_postings_update()"} {
					if err := m.exec("ALTER FUNCTION %s OWNER TO %s", f, m.owner); err != nil {
						return err
					}
				}
				if err := m.exec("ALTER TABLE recall_postings OWNER TO %s", m.owner); err != nil {
					return err
				}
				return m.grantTable("recall_postings", "SELECT, INSERT", "SELECT")
			})
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				if err := m.execAll(recallPostingsDownSQL...); err != nil {
					return err
				}
				const dense = "densemem_search_dense(text, text, tsquery, bigint)"
				if err := m.exec("ALTER FUNCTION %s OWNER TO %s", dense, m.owner); err != nil {
					return err
				}
				return m.exec("REVOKE ALL ON FUNCTION %s FROM PUBLIC", dense)
			})
		}})
}

// PostingsFromContents is the SELECT that lists the postings of the fragment contents of a relation
// named c (columns team_id, fragment_id, search), with evidence_fragments for their recorded time.
// Migration 23's backfill and triggers use it, and internal/testsupport/benchload does for what it copies with
// triggers off.
const PostingsFromContents = `SELECT c.team_id, x.lexeme, least(cardinality(x.positions), 32767)::smallint, f.created_at, c.fragment_id
    FROM c JOIN evidence_fragments f ON f.team_id = c.team_id AND f.fragment_id = c.fragment_id
    CROSS JOIN LATERAL unnest(c.search) x`

// recallPostingsUpSQL creates the postings, their triggers and backfill, and the new search function.
var recallPostingsUpSQL = []string{
	// No foreign keys: a posting is derived from a stored fragment by the trigger that stores it, and
	// the two checks per posting cost more than twice the rest of its insert (2,000 fragments at 100k:
	// 7.3 s with them, 2.1 s without).
	`CREATE TABLE recall_postings (
    team_id     text        NOT NULL,
    lexeme      text        NOT NULL,
    impact      smallint    NOT NULL CHECK (impact > 0),
    created_at  timestamptz NOT NULL,
    fragment_id text        NOT NULL
)`,
	`INSERT INTO recall_postings (team_id, lexeme, impact, created_at, fragment_id)
WITH c AS (SELECT team_id, fragment_id, search FROM fragment_contents) ` + PostingsFromContents,
	`CREATE UNIQUE INDEX recall_postings_order ON recall_postings (team_id, lexeme, impact DESC, created_at, fragment_id)`,
	`CREATE FUNCTION densemem_postings_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO recall_postings (team_id, lexeme, impact, created_at, fragment_id)
    SELECT NEW.team_id, x.lexeme, least(cardinality(x.positions), 32767), f.created_at, NEW.fragment_id
    FROM evidence_fragments f CROSS JOIN LATERAL unnest(NEW.search) x
    WHERE f.team_id = NEW.team_id AND f.fragment_id = NEW.fragment_id;
    RETURN NULL;
END;
$$`,
	// An update of content is privacy erasure (migration 18's guard admits no other): the old text's
	// postings go, each found by its whole key, and the new text's (none, once redacted) are written.
	`CREATE FUNCTION densemem_postings_update() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM recall_postings p
    USING evidence_fragments f CROSS JOIN LATERAL unnest(OLD.search) x
    WHERE f.team_id = OLD.team_id AND f.fragment_id = OLD.fragment_id
      AND p.team_id = OLD.team_id AND p.lexeme = x.lexeme AND p.impact = least(cardinality(x.positions), 32767)
      AND p.created_at = f.created_at AND p.fragment_id = OLD.fragment_id;
    INSERT INTO recall_postings (team_id, lexeme, impact, created_at, fragment_id)
    SELECT NEW.team_id, x.lexeme, least(cardinality(x.positions), 32767), f.created_at, NEW.fragment_id
    FROM evidence_fragments f CROSS JOIN LATERAL unnest(NEW.search) x
    WHERE f.team_id = NEW.team_id AND f.fragment_id = NEW.fragment_id;
    RETURN NULL;
END;
$$`,
	`CREATE TRIGGER fragment_contents_postings_insert AFTER INSERT ON fragment_contents
    FOR EACH ROW EXECUTE FUNCTION densemem_postings_insert()`,
	`CREATE TRIGGER fragment_contents_postings_update AFTER UPDATE OF content ON fragment_contents
    FOR EACH ROW EXECUTE FUNCTION densemem_postings_update()`,
	`ALTER FUNCTION densemem_search_hits(text, text, timestamptz, bigint) RESET ALL`,
	postingsSearchHitsSQL,
	`DROP FUNCTION densemem_search_dense(text, text, tsquery, bigint)`,
	`ANALYZE recall_postings`,
}

// postingsSearchHitsSQL is Recall's full-text search over the postings (decision 139).
//
// websearch_to_tsquery gives an OR of groups, each an AND of words and phrases (possibly negated).
// Every match of a group holds each of its positive lexemes, so one of them, its driver, finds all
// of the group's matches: the group's rarest lexeme, found by counting at most reads + 1 of its
// postings (a bounded, exact count per team; no estimate, nothing multiplied), or its only one.
// Each group's driver's postings are read best first, at most reads (8 × the group's window) of
// them, each checked against the group (the text must match it, the fragment be effective and its
// support recorded by known_at) and scored by ts_rank against the whole query, until the group's
// window of matches: p_limit for a query of one group, an equal share of it for several, never less
// than the limit p_limit was made for (3 × limit + 1) plus one. For a single word the order of the
// postings is the order of ts_rank, so its first matches are its best (ties by earlier creation);
// for several words they are the driver's best, ranked exactly by the caller. So the work is
// bounded by p_limit, never by the team or the word's matches, and every statement has one plan
// (nested loops along recall_postings_order; hash and merge joins, bitmap and sequential scans off).
//
// Rows: ('text', relationship, score) per match, then 'cut_window' when a group filled its window
// (more matches follow; a wider window finds them) and 'cut_reads' when a driver read its last
// allowed posting before filling it (its other matches lie deeper: a narrower query finds them).
// A group without a positive lexeme (only negations) finds nothing.
const postingsSearchHitsSQL = `CREATE OR REPLACE FUNCTION densemem_search_hits(p_team text, p_query text, p_known_at timestamptz, p_limit bigint)
RETURNS TABLE (source text, relationship_id text, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    SET max_parallel_workers_per_gather = 0 AS $$
DECLARE
    q tsquery := websearch_to_tsquery('english', p_query);
    groups text[];
    per bigint;
    reads bigint;
    grp text;
    gq tsquery;
    lexemes text[];
    lex text;
    driver text;
    best bigint;
    n bigint;
    found bigint;
BEGIN
    IF p_team IS DISTINCT FROM current_setting('densemem.team', true) THEN
        RAISE EXCEPTION 'densemem: search outside the transaction''s team' USING ERRCODE = '42501';
    END IF;
    IF numnode(q) = 0 THEN
        RETURN;
    END IF;
    -- The groups of the OR (an AND of words and phrases each; only a negated phrase has parentheses).
    -- Each group's window is an equal share of p_limit, but never less than the limit that p_limit
    -- (3 × limit + 1) was made for, plus one: each group's own best matches are candidates.
    groups := string_to_array(q::text, ' | ');
    per := least(p_limit, greatest(ceil(p_limit::numeric / cardinality(groups)), ceil((p_limit - 1) / 3.0) + 1));
    reads := least(per, 1000000) * 8;
    FOREACH grp IN ARRAY groups LOOP
        -- The group's positive lexemes: its quoted lexemes outside negations.
        SELECT array_agg(DISTINCT replace(m[2], '''''', '''') ORDER BY replace(m[2], '''''', '''')) INTO lexemes
        FROM regexp_matches(regexp_replace(grp, '!\([^)]*\)', '', 'g'), '(!?)''((?:[^'']|'''')*)''', 'g') m
        WHERE m[1] = '';
        IF lexemes IS NULL THEN
            CONTINUE;
        END IF;
        gq := grp::tsquery;
        driver := lexemes[1];
        IF cardinality(lexemes) > 1 THEN
            best := NULL;
            FOREACH lex IN ARRAY lexemes LOOP
                SELECT count(*) INTO n FROM (SELECT 1 FROM recall_postings p
                    WHERE p.team_id = p_team AND p.lexeme = lex LIMIT reads + 1) x;
                IF best IS NULL OR n < best THEN
                    driver := lex;
                    best := n;
                END IF;
            END LOOP;
        END IF;
        -- The postings are the outer side of a nested loop (the lateral reference makes them so), and
        -- the order they bring is the order asked for, so the window ends the read. Each is checked
        -- against its group and scored against the whole query.
        RETURN QUERY SELECT 'text'::text, x.relationship_id, x.score
            FROM (SELECT p.fragment_id, p.impact, p.created_at FROM recall_postings p
                  WHERE p.team_id = p_team AND p.lexeme = driver AND (p_known_at IS NULL OR p.created_at <= p_known_at)
                  ORDER BY p.impact DESC, p.created_at, p.fragment_id
                  LIMIT reads) p
            CROSS JOIN LATERAL (
                SELECT s.relationship_id, ts_rank(c.search, q)::float8 AS score
                FROM fragment_contents c
                JOIN support_links s ON s.team_id = c.team_id AND s.fragment_id = c.fragment_id
                WHERE c.team_id = p_team AND c.fragment_id = p.fragment_id AND c.search @@ gq
                  AND s.team_id = p_team AND (p_known_at IS NULL OR s.created_at <= p_known_at)
                  AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = p_team
                                  AND fr.fragment_id = p.fragment_id AND (p_known_at IS NULL OR fr.created_at <= p_known_at))) x
            ORDER BY p.impact DESC, p.created_at, p.fragment_id
            LIMIT per;
        GET DIAGNOSTICS found = ROW_COUNT;
        IF found >= per THEN
            RETURN QUERY SELECT 'cut_window'::text, ''::text, 0::float8;
        ELSIF EXISTS (SELECT 1 FROM recall_postings p
                      WHERE p.team_id = p_team AND p.lexeme = driver AND (p_known_at IS NULL OR p.created_at <= p_known_at)
                      ORDER BY p.impact DESC, p.created_at, p.fragment_id
                      OFFSET reads LIMIT 1) THEN
            RETURN QUERY SELECT 'cut_reads'::text, ''::text, 0::float8;
        END IF;
    END LOOP;
END;
$$`

// recallPostingsDownSQL puts back migration 21's search function and drops the postings.
var recallPostingsDownSQL = []string{
	`ALTER FUNCTION densemem_search_hits(text, text, timestamptz, bigint) RESET ALL`,
	searchDenseSQL,
	boundedSearchHitsSQL,
	`DROP TRIGGER fragment_contents_postings_update ON fragment_contents`,
	`DROP TRIGGER fragment_contents_postings_insert ON fragment_contents`,
	`DROP FUNCTION densemem_postings_update()`,
	`DROP FUNCTION densemem_postings_insert()`,
	`DROP TABLE recall_postings`,
}

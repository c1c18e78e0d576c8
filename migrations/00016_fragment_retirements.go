package migrations

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// Migration 16 records the retirement of evidence fragments (DESIGN §6.2, §13). It is Go because it
// grants privileges to the configurable roles (as migrations 9, 11 and 14 do).
//
//   - fragment_retirements: the append-only ledger of retired fragments, one row per fragment (a
//     fragment retires at most once). A retired fragment's support links stop being effective from
//     the row's created_at on: tiers, case tallies and Recall's evidence ignore them, Trace shows
//     them marked retired. The fragment, its content and its support links are never edited. cause
//     says why: 'source_revision' (a newer revision of the fragment's source replaced it) or
//     'erasure' (the privacy erasure workflow); actor_kind who: the profile whose call retired it,
//     or the host. The runtime role may SELECT and INSERT, the reviewer role SELECT (it counts
//     supports); row-level security like every table.
//   - densemem_search_hits: Recall's full-text hits leave out the text of fragments retired by the
//     read's instant (known_at, or now).
//   - evidence_fragments_source: the fragments of one source key by revision and age, so a revision
//     finds the fragments it retires and the source's owner (its first author) in one index probe.
func fragmentRetirementsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(16,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return fragmentRetirementsUp(ctx, tx, r) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, false, func(m *rolesRun) error { return m.execAll(fragmentRetirementsDownSQL...) })
		}})
}

// fragmentRetirementsSchemaSQL creates the retirement ledger and the source index.
var fragmentRetirementsSchemaSQL = []string{
	`CREATE TABLE fragment_retirements (
    team_id                 text        NOT NULL REFERENCES teams (team_id),
    retirement_id           text        NOT NULL,
    fragment_id             text        NOT NULL,
    cause                   text        NOT NULL CHECK (cause IN ('source_revision', 'erasure')),
    replaced_by_fragment_id text,
    actor_kind              text        NOT NULL CHECK (actor_kind IN ('profile', 'host')),
    actor_profile_id        text,
    reason                  text        NOT NULL,
    ingest_id               text        NOT NULL,
    created_at              timestamptz NOT NULL,
    PRIMARY KEY (team_id, retirement_id),
    UNIQUE (team_id, fragment_id),
    CHECK ((actor_kind = 'profile') = (actor_profile_id IS NOT NULL)),
    CHECK (replaced_by_fragment_id IS DISTINCT FROM fragment_id),
    FOREIGN KEY (team_id, fragment_id) REFERENCES evidence_fragments (team_id, fragment_id),
    FOREIGN KEY (team_id, replaced_by_fragment_id) REFERENCES evidence_fragments (team_id, fragment_id),
    FOREIGN KEY (team_id, actor_profile_id) REFERENCES profiles (team_id, profile_id)
)`,
	`CREATE INDEX fragment_retirements_ingest ON fragment_retirements (team_id, ingest_id)`,
	`CREATE TRIGGER fragment_retirements_append_only BEFORE UPDATE OR DELETE ON fragment_retirements
    FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation()`,
	`CREATE TRIGGER fragment_retirements_no_truncate BEFORE TRUNCATE ON fragment_retirements
    FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation()`,
	`CREATE INDEX evidence_fragments_source ON evidence_fragments (team_id, source_key, source_revision, created_at)
    WHERE source_key <> ''`,
	searchHitsSQL(`AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = s.team_id
                          AND fr.fragment_id = s.fragment_id AND (p_known_at IS NULL OR fr.created_at <= p_known_at))`),
}

// searchHitsSQL is Recall's full-text search function (migration 9) with a further condition on each
// text hit's support link s: migration 16 leaves out the text of fragments retired by the read's
// instant, so a relationship is found by its effective evidence only.
func searchHitsSQL(supportCondition string) string {
	return `CREATE OR REPLACE FUNCTION densemem_search_hits(p_team text, p_query text, p_known_at timestamptz, p_limit bigint)
RETURNS TABLE (source text, relationship_id text, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    q tsquery := websearch_to_tsquery('english', p_query);
BEGIN
    IF p_team IS DISTINCT FROM current_setting('densemem.team', true) THEN
        RAISE EXCEPTION 'densemem: search outside the transaction''s team' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY SELECT 'text'::text, s.relationship_id, ts_rank_cd(c.search, q)::float8
        FROM fragment_contents c
        JOIN support_links s ON s.team_id = c.team_id AND s.fragment_id = c.fragment_id
        WHERE c.team_id = p_team AND c.search @@ q AND (p_known_at IS NULL OR s.created_at <= p_known_at)
          ` + supportCondition + `
        LIMIT p_limit;
    RETURN QUERY SELECT 'subject'::text, r.relationship_id, ts_rank_cd(n.search, q)::float8
        FROM entity_names n
        JOIN relationships r ON r.team_id = n.team_id AND r.subject_entity_id = n.entity_id
        WHERE n.team_id = p_team AND n.search @@ q AND (p_known_at IS NULL OR n.created_at <= p_known_at)
        LIMIT p_limit;
    RETURN QUERY SELECT 'object'::text, r.relationship_id, ts_rank_cd(n.search, q)::float8
        FROM entity_names n
        JOIN relationships r ON r.team_id = n.team_id AND r.object_entity_id = n.entity_id
        WHERE n.team_id = p_team AND n.search @@ q AND (p_known_at IS NULL OR n.created_at <= p_known_at)
        LIMIT p_limit;
END;
$$`
}

// fragmentRetirementsUp runs migration 16 in tx for roles r (with their defaults).
func fragmentRetirementsUp(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
		if err := m.execAll(fragmentRetirementsSchemaSQL...); err != nil {
			return err
		}
		if err := m.exec("ALTER TABLE fragment_retirements OWNER TO %s", m.owner); err != nil {
			return err
		}
		return m.grantTable("fragment_retirements", "SELECT, INSERT", "SELECT")
	})
}

// fragmentRetirementsDownSQL undoes migration 16: the retirement ledger and its rows are dropped, so
// every retired fragment's support counts again.
var fragmentRetirementsDownSQL = []string{
	searchHitsSQL(""),
	`DROP INDEX evidence_fragments_source`,
	`DROP TABLE fragment_retirements`,
}

package migrations

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// Migration 18 is privacy erasure (Client.Erase): the one path that may change a fragment's content.
// It is Go because it grants privileges to the configurable roles (as migrations 9, 11 and 14 do).
//
//   - privacy_erasures: the append-only ledger of erasure requests, one row per request: who (a
//     profile with the erasure scope, or the host), why, when, under which idempotency key (unique per
//     actor) and request hash.
//   - fragment_erasures: the tombstones, one row per erased fragment (at most one per fragment ever):
//     the erasure that redacted it, the SHA-256 and byte length of the content it redacted (a trigger
//     checks that they are the fragment's), and the transaction that recorded it (set by the trigger,
//     never by the writer).
//   - densemem_erase(...): a SECURITY DEFINER function owned by the owner, the only object the
//     runtime role may use to write either table (it holds SELECT on them, no INSERT) and the only
//     way it may change fragment_contents (it holds no UPDATE there). In one statement it checks the
//     transaction's team and the acting profile's erasure scope, locks the named contents, records
//     the request and a tombstone per fragment not erased before, sets their content to ” and
//     returns every named fragment's tombstone with the relationships it supports.
//   - fragment_contents' append-only trigger now admits exactly one UPDATE: content to ” from a
//     non-empty content, keys unchanged, when a tombstone of that fragment was recorded in the same
//     transaction. It binds every role, the owner included; no session setting opens it.
func privacyErasureMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(18,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return privacyErasureUp(ctx, tx, r) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return privacyErasureDown(ctx, tx, r) }})
}

// privacyErasureSchemaSQL creates the erasure ledger, its guards and the erasure function.
var privacyErasureSchemaSQL = []string{
	`CREATE TABLE privacy_erasures (
    team_id          text        NOT NULL REFERENCES teams (team_id),
    erasure_id       text        NOT NULL,
    actor_kind       text        NOT NULL CHECK (actor_kind IN ('profile', 'host')),
    actor_profile_id text,
    reason           text        NOT NULL,
    idempotency_key  text        NOT NULL,
    request_hash     text        NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, erasure_id),
    CONSTRAINT privacy_erasures_key UNIQUE NULLS NOT DISTINCT (team_id, actor_kind, actor_profile_id, idempotency_key),
    CHECK ((actor_kind = 'host') = (actor_profile_id IS NULL)),
    FOREIGN KEY (team_id, actor_profile_id) REFERENCES profiles (team_id, profile_id)
)`,
	`CREATE TABLE fragment_erasures (
    team_id          text        NOT NULL,
    fragment_id      text        NOT NULL,
    erasure_id       text        NOT NULL,
    content_sha256   text        NOT NULL,
    content_length   integer     NOT NULL,
    erased_xact      xid8        NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, fragment_id),
    FOREIGN KEY (team_id, fragment_id) REFERENCES evidence_fragments (team_id, fragment_id),
    FOREIGN KEY (team_id, erasure_id) REFERENCES privacy_erasures (team_id, erasure_id)
)`,
	`CREATE INDEX fragment_erasures_erasure ON fragment_erasures (team_id, erasure_id, fragment_id)`,
	`CREATE TRIGGER privacy_erasures_append_only BEFORE UPDATE OR DELETE ON privacy_erasures
    FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation()`,
	`CREATE TRIGGER privacy_erasures_no_truncate BEFORE TRUNCATE ON privacy_erasures
    FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation()`,
	`CREATE TRIGGER fragment_erasures_append_only BEFORE UPDATE OR DELETE ON fragment_erasures
    FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation()`,
	`CREATE TRIGGER fragment_erasures_no_truncate BEFORE TRUNCATE ON fragment_erasures
    FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation()`,
	// A tombstone is the fragment's own hash and length, stamped with the recording transaction.
	`CREATE FUNCTION densemem_fragment_tombstone() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM evidence_fragments f WHERE f.team_id = NEW.team_id AND f.fragment_id = NEW.fragment_id
                   AND f.content_sha256 = NEW.content_sha256 AND f.content_length = NEW.content_length) THEN
        RAISE EXCEPTION 'densemem: the tombstone of fragment % must carry its content hash and length', NEW.fragment_id
            USING ERRCODE = 'DM001';
    END IF;
    NEW.erased_xact := pg_current_xact_id();
    RETURN NEW;
END;
$$`,
	`CREATE TRIGGER fragment_erasures_tombstone BEFORE INSERT ON fragment_erasures
    FOR EACH ROW EXECUTE FUNCTION densemem_fragment_tombstone()`,
	// fragment_contents: append-only but for the redaction recorded in the same transaction.
	`CREATE FUNCTION densemem_fragment_content_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.team_id = OLD.team_id AND NEW.fragment_id = OLD.fragment_id
       AND NEW.content = '' AND OLD.content <> ''
       AND EXISTS (SELECT 1 FROM fragment_erasures e WHERE e.team_id = OLD.team_id AND e.fragment_id = OLD.fragment_id
                   AND e.erased_xact = pg_current_xact_id()) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'densemem: % on append-only table % is not allowed (only privacy erasure redacts content)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'DM001';
END;
$$`,
	`DROP TRIGGER fragment_contents_append_only ON fragment_contents`,
	`CREATE TRIGGER fragment_contents_append_only BEFORE UPDATE OR DELETE ON fragment_contents
    FOR EACH ROW EXECUTE FUNCTION densemem_fragment_content_guard()`,
	// The erasure itself: the runtime role's only way to write the erasure ledger or change content.
	`CREATE FUNCTION densemem_erase(p_team text, p_erasure text, p_actor_kind text, p_actor_profile text, p_reason text,
    p_key text, p_hash text, p_fragments text[], p_now timestamptz)
RETURNS TABLE (fragment_id text, erasure_id text, content_sha256 text, content_length integer, erased_at timestamptz,
    relationship_ids text[])
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    missing text;
BEGIN
    IF p_team IS DISTINCT FROM current_setting('densemem.team', true) THEN
        RAISE EXCEPTION 'densemem: erasure outside the transaction''s team' USING ERRCODE = '42501';
    END IF;
    IF p_actor_kind = 'profile' AND NOT EXISTS (SELECT 1 FROM profiles p WHERE p.team_id = p_team
            AND p.profile_id = p_actor_profile AND p.status = 'active' AND 'erasure' = ANY (p.scopes)) THEN
        RAISE EXCEPTION 'densemem: profile % may not erase evidence', p_actor_profile USING ERRCODE = 'DME03';
    END IF;
    PERFORM 1 FROM fragment_contents c WHERE c.team_id = p_team AND c.fragment_id = ANY (p_fragments)
        ORDER BY c.fragment_id FOR UPDATE;
    SELECT f INTO missing FROM unnest(p_fragments) f
        WHERE NOT EXISTS (SELECT 1 FROM fragment_contents c WHERE c.team_id = p_team AND c.fragment_id = f) LIMIT 1;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'densemem: team % has no fragment %', p_team, missing USING ERRCODE = 'DME02';
    END IF;
    INSERT INTO privacy_erasures (team_id, erasure_id, actor_kind, actor_profile_id, reason, idempotency_key,
            request_hash, created_at)
        VALUES (p_team, p_erasure, p_actor_kind, p_actor_profile, p_reason, p_key, p_hash, p_now)
        ON CONFLICT ON CONSTRAINT privacy_erasures_key DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'densemem: erasure key % was used meanwhile', p_key USING ERRCODE = 'DME01';
    END IF;
    INSERT INTO fragment_erasures (team_id, fragment_id, erasure_id, content_sha256, content_length, erased_xact, created_at)
        SELECT f.team_id, f.fragment_id, p_erasure, f.content_sha256, f.content_length, pg_current_xact_id(), p_now
        FROM evidence_fragments f
        WHERE f.team_id = p_team AND f.fragment_id = ANY (p_fragments)
          AND NOT EXISTS (SELECT 1 FROM fragment_erasures e WHERE e.team_id = f.team_id AND e.fragment_id = f.fragment_id);
    UPDATE fragment_contents c SET content = ''
        FROM fragment_erasures e
        WHERE c.team_id = p_team AND c.fragment_id = ANY (p_fragments)
          AND e.team_id = c.team_id AND e.fragment_id = c.fragment_id AND e.erasure_id = p_erasure;
    RETURN QUERY SELECT e.fragment_id, e.erasure_id, e.content_sha256, e.content_length, e.created_at,
            ARRAY(SELECT DISTINCT s.relationship_id FROM support_links s
                  WHERE s.team_id = e.team_id AND s.fragment_id = e.fragment_id ORDER BY 1)
        FROM fragment_erasures e
        WHERE e.team_id = p_team AND e.fragment_id = ANY (p_fragments)
        ORDER BY e.fragment_id;
END;
$$`,
}

// privacyErasureUp runs migration 18 in tx for roles r (with their defaults).
func privacyErasureUp(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
		if err := m.execAll(privacyErasureSchemaSQL...); err != nil {
			return err
		}
		for _, o := range []string{"TABLE privacy_erasures", "TABLE fragment_erasures",
			"FUNCTION densemem_fragment_tombstone()", "FUNCTION densemem_fragment_content_guard()",
			"FUNCTION densemem_erase(text, text, text, text, text, text, text, text[], timestamptz)"} {
			if err := m.exec("ALTER %s OWNER TO %s", o, m.owner); err != nil {
				return err
			}
		}
		if err := m.execAll(
			"REVOKE ALL ON FUNCTION densemem_fragment_tombstone(), densemem_fragment_content_guard() FROM PUBLIC",
			"REVOKE ALL ON FUNCTION densemem_erase(text, text, text, text, text, text, text, text[], timestamptz) FROM PUBLIC",
		); err != nil {
			return err
		}
		if err := m.exec("GRANT EXECUTE ON FUNCTION densemem_erase(text, text, text, text, text, text, text, text[], timestamptz) TO %s",
			m.runtime); err != nil {
			return err
		}
		if err := m.grantTable("privacy_erasures", "SELECT", "SELECT"); err != nil {
			return err
		}
		return m.grantTable("fragment_erasures", "SELECT", "SELECT")
	})
}

// privacyErasureDownSQL undoes privacyErasureSchemaSQL. Content already redacted stays redacted: an
// erasure cannot be undone, and Down refuses while any tombstone exists rather than lose the proof.
var privacyErasureDownSQL = []string{
	`DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM fragment_erasures) THEN
        RAISE EXCEPTION 'densemem: fragments were erased; migration 18 keeps their tombstones and cannot be undone';
    END IF; END $$`,
	`DROP FUNCTION densemem_erase(text, text, text, text, text, text, text, text[], timestamptz)`,
	`DROP TRIGGER fragment_contents_append_only ON fragment_contents`,
	`CREATE TRIGGER fragment_contents_append_only BEFORE UPDATE OR DELETE ON fragment_contents
    FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation()`,
	`DROP FUNCTION densemem_fragment_content_guard()`,
	`DROP TABLE fragment_erasures, privacy_erasures`,
	`DROP FUNCTION densemem_fragment_tombstone()`,
}

// privacyErasureDown undoes migration 18 while nothing was erased.
func privacyErasureDown(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, false, func(m *rolesRun) error { return m.execAll(privacyErasureDownSQL...) })
}

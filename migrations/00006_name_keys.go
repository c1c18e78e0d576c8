package migrations

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/densemem/densemem/identity"
)

// Migration 6 gives entity names Unicode-aware lookup keys. Keys were lower case with collapsed
// white space; they become identity.NormalizeName (NFKC, case folding, default-ignorable characters
// removed) with a confusable skeleton (identity.Skeleton) that entity lookups and name locks use. The
// keys are computed in Go, so this migration is Go: it changes the schema, recomputes the key and
// skeleton of every stored name (the one sanctioned rewrite of the append-only entity_names, inside
// the migration's transaction), and bounds the names an entity may hold.
//
// Recomputing can give two entities of one team and kind the same key where their old keys differed
// (the NFC and NFD spellings of one name). They are never merged: each such group is recorded in
// entity_name_collisions and gets an open identity review item, and until it is resolved a mention of
// that name is ambiguous (identity_needs_review with both candidates).
var nameKeys = goose.NewGoMigration(6, &goose.GoFunc{RunTx: nameKeysUp}, &goose.GoFunc{RunTx: nameKeysDown})

// nameKeysPage bounds the names read and rewritten per statement.
const nameKeysPage = 5000

const nameKeysSchemaSQL = `
-- Names are unique per entity by their verbatim text: two spellings of one key may both be kept.
ALTER TABLE entity_names DROP CONSTRAINT entity_names_pkey;
ALTER TABLE entity_names ADD PRIMARY KEY (team_id, entity_id, name);
ALTER TABLE entity_names ADD COLUMN skeleton text;
CREATE UNIQUE INDEX entity_names_canonical ON entity_names (team_id, entity_id) WHERE name_kind = 'canonical';

-- entity_name_collisions: groups of entities that came to share a name key when keys were
-- recomputed. Append-only; each row names the identity review item opened for it.
CREATE TABLE entity_name_collisions (
    team_id         text        NOT NULL REFERENCES teams (team_id),
    collision_id    text        NOT NULL,
    entity_kind     text        NOT NULL,
    normalized_name text        NOT NULL,
    entity_ids      text[]      NOT NULL,
    cause           text        NOT NULL,
    review_id       text        NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (team_id, collision_id)
);
CREATE TRIGGER entity_name_collisions_append_only BEFORE UPDATE OR DELETE ON entity_name_collisions
    FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER entity_name_collisions_no_truncate BEFORE TRUNCATE ON entity_name_collisions
    FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();

-- densemem_entity_names_bounded: an entity holds at most 256 names (a canonical name and 255
-- aliases, densemem.HardMaxAliasesPerEntity), whatever the library's configuration.
CREATE FUNCTION densemem_entity_names_bounded() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM entity_names WHERE team_id = NEW.team_id AND entity_id = NEW.entity_id) >= 256 THEN
        RAISE EXCEPTION 'densemem: entity % already holds 256 names', NEW.entity_id USING ERRCODE = 'DM001';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER entity_names_bounded BEFORE INSERT ON entity_names
    FOR EACH ROW EXECUTE FUNCTION densemem_entity_names_bounded();
`

const nameKeysFinishSQL = `
ALTER TABLE entity_names ALTER COLUMN skeleton SET NOT NULL;
CREATE INDEX entity_names_skeleton ON entity_names (team_id, skeleton);
`

func nameKeysUp(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, nameKeysSchemaSQL); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	// The old keys are kept aside to tell recomputed collisions from names that already shared a key.
	if _, err := tx.ExecContext(ctx, `CREATE TEMPORARY TABLE name_key_changes (team_id text, entity_id text,
		entity_kind text, old_key text, new_key text) ON COMMIT DROP`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE entity_names DISABLE TRIGGER entity_names_append_only`); err != nil {
		return err
	}
	if err := recomputeNameKeys(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE entity_names ENABLE TRIGGER entity_names_append_only`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, nameKeysFinishSQL); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	return recordNameCollisions(ctx, tx)
}

// recomputeNameKeys rewrites every name's key and skeleton, a page at a time in primary-key order.
func recomputeNameKeys(ctx context.Context, tx *sql.Tx) error {
	var afterTeam, afterEntity, afterName string
	for {
		rows, err := tx.QueryContext(ctx, `SELECT n.team_id, n.entity_id, n.name, n.normalized_name, e.entity_kind
			FROM entity_names n JOIN entities e ON e.team_id = n.team_id AND e.entity_id = n.entity_id
			WHERE (n.team_id, n.entity_id, n.name) > ($1, $2, $3)
			ORDER BY n.team_id, n.entity_id, n.name LIMIT $4`, afterTeam, afterEntity, afterName, nameKeysPage)
		if err != nil {
			return err
		}
		var teams, entities, names, kinds, oldKeys, newKeys, skeletons []string
		for rows.Next() {
			var team, entity, name, old, kind string
			if err := rows.Scan(&team, &entity, &name, &old, &kind); err != nil {
				rows.Close()
				return err
			}
			key := identity.NormalizeName(name)
			teams, entities, names, kinds = append(teams, team), append(entities, entity), append(names, name), append(kinds, kind)
			oldKeys, newKeys, skeletons = append(oldKeys, old), append(newKeys, key), append(skeletons, identity.Skeleton(key))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE entity_names n SET normalized_name = u.key, skeleton = u.skeleton
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(team_id, entity_id, name, key, skeleton)
			WHERE n.team_id = u.team_id AND n.entity_id = u.entity_id AND n.name = u.name`,
			teams, entities, names, newKeys, skeletons); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO name_key_changes
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])`,
			teams, entities, kinds, oldKeys, newKeys); err != nil {
			return err
		}
		last := len(names) - 1
		afterTeam, afterEntity, afterName = teams[last], entities[last], names[last]
	}
}

// recordNameCollisions records every group of entities of one team and kind that share a new key but
// did not all share one old key, and opens an identity review item for it.
func recordNameCollisions(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `
		WITH g AS (
		    SELECT team_id, entity_kind, new_key, array_agg(DISTINCT entity_id ORDER BY entity_id) AS ids
		    FROM name_key_changes GROUP BY team_id, entity_kind, new_key HAVING count(DISTINCT entity_id) > 1),
		o AS (
		    SELECT team_id, entity_kind, new_key, array_agg(DISTINCT entity_id ORDER BY entity_id) AS ids
		    FROM name_key_changes GROUP BY team_id, entity_kind, new_key, old_key)
		SELECT g.team_id, g.entity_kind, g.new_key, array_to_string(g.ids, ',') FROM g
		WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.team_id = g.team_id AND o.entity_kind = g.entity_kind
		                  AND o.new_key = g.new_key AND o.ids = g.ids)
		ORDER BY g.team_id, g.entity_kind, g.new_key`)
	if err != nil {
		return err
	}
	type collision struct {
		team, kind, key string
		ids             []string
	}
	var found []collision
	for rows.Next() {
		var c collision
		var ids string
		if err := rows.Scan(&c.team, &c.kind, &c.key, &ids); err != nil {
			rows.Close()
			return err
		}
		c.ids = strings.Split(ids, ",")
		found = append(found, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// A migration runs outside the library's injected clock: its rows record when it ran.
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i, c := range found {
		if err := openCollisionReview(ctx, tx, now, i, c.team, c.kind, c.key, c.ids); err != nil {
			return err
		}
	}
	return nil
}

// collisionPrompt has the JSON shape of densemem.ReviewPrompt, which this package cannot import.
type collisionPrompt struct {
	ReviewID         string               `json:"review_id"`
	Kind             string               `json:"kind"`
	Question         string               `json:"question"`
	Choices          []collisionChoice    `json:"choices"`
	EntityCandidates []collisionCandidate `json:"entity_candidates"`
}

type collisionChoice struct {
	Action      string `json:"action"`
	Description string `json:"description"`
}

type collisionCandidate struct {
	EntityID        string            `json:"entity_id"`
	Name            string            `json:"name"`
	EntityKind      string            `json:"entity_kind"`
	IdentityContext map[string]string `json:"identity_context,omitempty"`
}

func openCollisionReview(ctx context.Context, tx *sql.Tx, now time.Time, n int, team, kind, key string, ids []string) error {
	prompt := collisionPrompt{ReviewID: newID("rev", now, n), Kind: "identity",
		Question: fmt.Sprintf("Entities %s (%s) now share the name key %q after Unicode normalization. Are they one entity?",
			strings.Join(ids, ", "), kind, key),
		Choices: []collisionChoice{
			{"select_entity", "name the entity that mentions of this name mean"},
			{"keep_distinct", "keep the entities distinct; mentions must carry identity context or a known_entity_id"},
		}}
	owner := ""
	for _, id := range ids {
		var c collisionCandidate
		var ctxJSON []byte
		var createdBy string
		err := tx.QueryRowContext(ctx, `SELECT e.entity_id, n.name, e.entity_kind, e.identity_context, e.created_by
			FROM entities e JOIN entity_names n ON n.team_id = e.team_id AND n.entity_id = e.entity_id AND n.name_kind = 'canonical'
			WHERE e.team_id = $1 AND e.entity_id = $2`, team, id).Scan(&c.EntityID, &c.Name, &c.EntityKind, &ctxJSON, &createdBy)
		if err != nil {
			return fmt.Errorf("entity %s: %w", id, err)
		}
		if err := json.Unmarshal(ctxJSON, &c.IdentityContext); err != nil {
			return err
		}
		prompt.EntityCandidates = append(prompt.EntityCandidates, c)
		owner = createdBy // the entities are in ID order, so the newest entity's creator owns the item
	}
	body, err := json.Marshal(prompt)
	if err != nil {
		return err
	}
	item := fmt.Sprintf("item_name_collision_%d", n+1)
	if _, err := tx.ExecContext(ctx, `INSERT INTO review_items (team_id, review_id, ingest_id, placement_item_id, kind,
		status, profile_id, observation_id, relationship_id, related_ids, choices, created_at)
		VALUES ($1, $2, 'migration_00006', $3, 'identity', 'open', $4, '', NULL, $5, $6, $7)`,
		team, prompt.ReviewID, item, owner, "{"+strings.Join(ids, ",")+"}", body, now); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO entity_name_collisions (team_id, collision_id, entity_kind, normalized_name,
		entity_ids, cause, review_id, created_at) VALUES ($1, $2, $3, $4, $5, 'migration_00006_unicode_name_keys', $6, $7)`,
		team, newID("nmc", now, n), kind, key, "{"+strings.Join(ids, ",")+"}", prompt.ReviewID, now)
	return err
}

// newID is an identity.FormatID identifier at now with sequence n.
func newID(prefix string, now time.Time, n int) string {
	var tail [6]byte
	_, _ = rand.Read(tail[:])
	return identity.FormatID(prefix, now.UnixMilli(), uint32(n), tail)
}

func nameKeysDown(ctx context.Context, tx *sql.Tx) error {
	// The old keys are not restored (the new keys serve lookups as well), nor is the old primary key,
	// which two spellings of one key held by one entity would violate.
	_, err := tx.ExecContext(ctx, `
DROP TRIGGER entity_names_bounded ON entity_names;
DROP FUNCTION densemem_entity_names_bounded();
DROP TABLE entity_name_collisions;
DROP INDEX entity_names_skeleton;
DROP INDEX entity_names_canonical;
ALTER TABLE entity_names DROP COLUMN skeleton;`)
	return err
}

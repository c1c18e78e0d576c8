-- A Remember on a conflict key whose predicate allows several current values (cardinality many, or
-- an event) compares a statement only with the key's statements about the same object, and the key's
-- held ones (issue 21): this index finds those among a key's live relationships, by status and
-- object, so a Remember about an entity with 100k relationships on one key reads a handful of rows.
-- It leads with relationships_conflict_key_live's columns and covers its reads, which it replaces.

-- +goose Up
CREATE INDEX relationships_conflict_key_live_object ON relationships
    (team_id, subject_entity_id, predicate_key, scope, status, object_entity_id, object_value_id)
    WHERE status IN ('active', 'pending_evidence', 'needs_review');
DROP INDEX relationships_conflict_key_live;

-- +goose Down
CREATE INDEX relationships_conflict_key_live ON relationships (team_id, subject_entity_id, predicate_key, scope)
    WHERE status IN ('active', 'pending_evidence', 'needs_review');
DROP INDEX relationships_conflict_key_live_object;

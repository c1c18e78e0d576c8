-- The nightly reviewer reads only a conflict key's live relationships (active, pending_evidence,
-- needs_review): this partial index serves that read, so a case's review does not cost more as the
-- key's closed history (superseded, retracted, rejected) grows.

-- +goose Up
CREATE INDEX relationships_conflict_key_live ON relationships (team_id, subject_entity_id, predicate_key, scope)
    WHERE status IN ('active', 'pending_evidence', 'needs_review');

-- +goose Down
DROP INDEX relationships_conflict_key_live;

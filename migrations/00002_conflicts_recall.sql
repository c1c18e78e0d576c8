-- Cross-profile corrections, durable team conflict cases, and the indexes recall reads through.

-- +goose Up

-- btree_gin lets a GIN index lead with team_id, so full-text lookups stay inside one team.
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- relationship_cross_references: append-only links between relationships of different owners.
CREATE TABLE relationship_cross_references (
    team_id              text        NOT NULL,
    xref_id              text        NOT NULL,
    kind                 text        NOT NULL CHECK (kind IN ('corrects', 'challenges', 'confirms', 'adopts_evidence_from')),
    from_relationship_id text        NOT NULL,
    from_version         integer     NOT NULL,
    to_relationship_id   text        NOT NULL,
    to_version           integer     NOT NULL,
    author_profile_id    text        NOT NULL,
    verification_id      text,
    ingest_id            text        NOT NULL,
    created_at           timestamptz NOT NULL,
    PRIMARY KEY (team_id, xref_id),
    FOREIGN KEY (team_id, from_relationship_id) REFERENCES relationships (team_id, relationship_id),
    FOREIGN KEY (team_id, to_relationship_id) REFERENCES relationships (team_id, relationship_id)
);
CREATE INDEX relationship_cross_references_from ON relationship_cross_references (team_id, from_relationship_id);
CREATE INDEX relationship_cross_references_to ON relationship_cross_references (team_id, to_relationship_id);

-- conflict_cases: materialised workflow state of one team conflict case. At most one live case per key.
CREATE TABLE conflict_cases (
    team_id               text        NOT NULL REFERENCES teams (team_id),
    conflict_id           text        NOT NULL,
    kind                  text        NOT NULL CHECK (kind IN ('cross_profile_current_state', 'identity_correction')),
    subject_entity_id     text        NOT NULL,
    predicate_key         text        NOT NULL,
    scope                 text        NOT NULL,
    status                text        NOT NULL CHECK (status IN ('open', 'overdue', 'resolved', 'dismissed')),
    version               integer     NOT NULL CHECK (version > 0),
    opened_at             timestamptz NOT NULL,
    review_due_at         timestamptz NOT NULL,
    next_review_at        timestamptz NOT NULL,
    claim_token           text,
    lease_expires_at      timestamptz,
    review_attempts       integer     NOT NULL DEFAULT 0,
    last_evaluated_at     timestamptz,
    resolved_at           timestamptz,
    effective_at          timestamptz,
    effective_time_basis  text CHECK (effective_time_basis IN ('evidence_time', 'recorded_fallback')),
    preferred_position_id text,
    policy_version        integer     NOT NULL,
    opened_by_profile_id  text        NOT NULL,
    updated_at            timestamptz NOT NULL,
    PRIMARY KEY (team_id, conflict_id)
);
CREATE UNIQUE INDEX conflict_cases_one_live ON conflict_cases (team_id, subject_entity_id, predicate_key, scope)
    WHERE status IN ('open', 'overdue');
CREATE INDEX conflict_cases_key ON conflict_cases (team_id, subject_entity_id, predicate_key, scope, opened_at);
CREATE INDEX conflict_cases_due ON conflict_cases (team_id, next_review_at) WHERE status IN ('open', 'overdue');

-- conflict_positions: the identity of one position (object, polarity) of a case. Append-only.
CREATE TABLE conflict_positions (
    team_id          text        NOT NULL,
    position_id      text        NOT NULL,
    conflict_id      text        NOT NULL,
    object_entity_id text,
    object_value_id  text,
    polarity         text        NOT NULL CHECK (polarity IN ('+', '-')),
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, position_id),
    FOREIGN KEY (team_id, conflict_id) REFERENCES conflict_cases (team_id, conflict_id)
);
CREATE UNIQUE INDEX conflict_positions_identity ON conflict_positions
    (team_id, conflict_id, COALESCE(object_entity_id, ''), COALESCE(object_value_id, ''), polarity);

-- conflict_position_members: versioned membership. A member row is added at one case version and
-- removed at a later one; only removed_version may ever be set, once.
CREATE TABLE conflict_position_members (
    team_id              text    NOT NULL,
    conflict_id          text    NOT NULL,
    position_id          text    NOT NULL,
    relationship_id      text    NOT NULL,
    relationship_version integer NOT NULL,
    owner_profile_id     text    NOT NULL,
    added_version        integer NOT NULL,
    removed_version      integer,
    PRIMARY KEY (team_id, conflict_id, relationship_id, added_version),
    CHECK (removed_version IS NULL OR removed_version > added_version),
    FOREIGN KEY (team_id, position_id) REFERENCES conflict_positions (team_id, position_id),
    FOREIGN KEY (team_id, relationship_id) REFERENCES relationships (team_id, relationship_id)
);
CREATE INDEX conflict_position_members_relationship ON conflict_position_members (team_id, relationship_id);

-- conflict_events: append-only ledger of every case change; each holds the resulting membership.
CREATE TABLE conflict_events (
    team_id          text        NOT NULL,
    event_id         text        NOT NULL,
    conflict_id      text        NOT NULL,
    case_version     integer     NOT NULL,
    prior_status     text,
    resulting_status text        NOT NULL,
    actor_kind       text        NOT NULL CHECK (actor_kind IN ('profile', 'system_conflict_reviewer', 'system')),
    actor_profile_id text,
    reason_code      text        NOT NULL,
    policy_version   integer     NOT NULL,
    time_basis       text,
    referenced       jsonb       NOT NULL,
    positions        jsonb       NOT NULL,
    ingest_id        text        NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, event_id),
    UNIQUE (team_id, conflict_id, case_version),
    FOREIGN KEY (team_id, conflict_id) REFERENCES conflict_cases (team_id, conflict_id)
);

-- +goose StatementBegin
-- densemem_guard_member allows exactly one change of a membership row: setting removed_version.
CREATE FUNCTION densemem_guard_member() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE' OR OLD.removed_version IS NOT NULL OR NEW.removed_version IS NULL
       OR (NEW.team_id, NEW.conflict_id, NEW.position_id, NEW.relationship_id, NEW.relationship_version,
           NEW.owner_profile_id, NEW.added_version)
          IS DISTINCT FROM
          (OLD.team_id, OLD.conflict_id, OLD.position_id, OLD.relationship_id, OLD.relationship_version,
           OLD.owner_profile_id, OLD.added_version) THEN
        RAISE EXCEPTION 'densemem: conflict membership rows only gain a removed_version' USING ERRCODE = 'DM001';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER conflict_position_members_guard BEFORE UPDATE OR DELETE ON conflict_position_members
    FOR EACH ROW EXECUTE FUNCTION densemem_guard_member();

CREATE TRIGGER relationship_cross_references_append_only BEFORE UPDATE OR DELETE ON relationship_cross_references FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER conflict_positions_append_only BEFORE UPDATE OR DELETE ON conflict_positions FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER conflict_events_append_only BEFORE UPDATE OR DELETE ON conflict_events FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER relationship_cross_references_no_truncate BEFORE TRUNCATE ON relationship_cross_references FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER conflict_positions_no_truncate BEFORE TRUNCATE ON conflict_positions FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER conflict_events_no_truncate BEFORE TRUNCATE ON conflict_events FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER conflict_position_members_no_truncate BEFORE TRUNCATE ON conflict_position_members FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER conflict_cases_no_truncate BEFORE TRUNCATE ON conflict_cases FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();

-- Recall: full-text search over fragment content and entity names, team-first GIN indexes.
ALTER TABLE fragment_contents ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED;
CREATE INDEX fragment_contents_search ON fragment_contents USING gin (team_id, search);
ALTER TABLE entity_names ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', name)) STORED;
CREATE INDEX entity_names_search ON entity_names USING gin (team_id, search);
-- known_at reconstruction reads each relationship's transitions by recorded time.
CREATE INDEX relationship_transitions_recorded ON relationship_transitions (team_id, relationship_id, created_at);
CREATE INDEX relationships_active ON relationships (team_id, created_at) WHERE status = 'active';

-- +goose Down
DROP INDEX relationships_active;
DROP INDEX relationship_transitions_recorded;
DROP INDEX entity_names_search;
ALTER TABLE entity_names DROP COLUMN search;
DROP INDEX fragment_contents_search;
ALTER TABLE fragment_contents DROP COLUMN search;
DROP TABLE conflict_events, conflict_position_members, conflict_positions, conflict_cases, relationship_cross_references;
DROP FUNCTION densemem_guard_member();

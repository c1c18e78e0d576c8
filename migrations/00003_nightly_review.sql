-- The nightly Conflict reviewer: daily run reservations, per-day attempt accounting, and the
-- database-level fence that keeps the reviewer away from everything it must not write.

-- +goose Up

-- nightly_runs reserves one run per team and run date (in the team's time zone).
CREATE TABLE nightly_runs (
    team_id     text        NOT NULL REFERENCES teams (team_id),
    run_date    date        NOT NULL,
    worker_id   text        NOT NULL,
    reserved_at timestamptz NOT NULL,
    PRIMARY KEY (team_id, run_date)
);

-- review_attempts counts the attempts of attempts_date (the run date they were made on).
ALTER TABLE conflict_cases ADD COLUMN attempts_date date;
ALTER TABLE conflict_cases ADD COLUMN escalated_date date;

-- +goose StatementBegin
-- densemem_refuse_reviewer refuses any write to a table the nightly reviewer must never touch, when
-- the transaction runs as the reviewer (SET LOCAL densemem.actor = 'system_conflict_reviewer').
CREATE FUNCTION densemem_refuse_reviewer() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('densemem.actor', true) = 'system_conflict_reviewer' THEN
        RAISE EXCEPTION 'densemem: the conflict reviewer may not % %', TG_OP, TG_TABLE_NAME USING ERRCODE = 'DM004';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER evidence_fragments_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON evidence_fragments FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER fragment_contents_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON fragment_contents FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER observations_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON observations FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER verification_events_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON verification_events FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER support_links_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON support_links FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER relationship_cross_references_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON relationship_cross_references FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER entities_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON entities FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER entity_names_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON entity_names FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER entity_resolution_events_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON entity_resolution_events FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER literal_values_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON literal_values FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER idempotency_records_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON idempotency_records FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER review_items_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON review_items FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER predicate_definitions_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON predicate_definitions FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER profiles_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON profiles FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();
CREATE TRIGGER team_policies_not_reviewer BEFORE INSERT OR UPDATE OR DELETE ON team_policies FOR EACH STATEMENT EXECUTE FUNCTION densemem_refuse_reviewer();

-- +goose StatementBegin
-- densemem_reviewer_relationships lets the reviewer change a relationship only by superseding it:
-- no inserts, and an update must end at status superseded (authored fields are guarded already).
CREATE FUNCTION densemem_reviewer_relationships() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('densemem.actor', true) = 'system_conflict_reviewer'
       AND (TG_OP <> 'UPDATE' OR NEW.status <> 'superseded' OR OLD.status <> 'active' OR NEW.tier <> OLD.tier) THEN
        RAISE EXCEPTION 'densemem: the conflict reviewer may only supersede active relationships' USING ERRCODE = 'DM004';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER relationships_reviewer BEFORE INSERT OR UPDATE ON relationships
    FOR EACH ROW EXECUTE FUNCTION densemem_reviewer_relationships();

-- +goose StatementBegin
-- densemem_reviewer_transitions: under the reviewer actor, transitions carry that actor.
CREATE FUNCTION densemem_reviewer_transitions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('densemem.actor', true) = 'system_conflict_reviewer'
       AND (NEW.actor_kind <> 'system_conflict_reviewer' OR NEW.actor_profile_id IS NOT NULL) THEN
        RAISE EXCEPTION 'densemem: reviewer transitions must name the reviewer as actor' USING ERRCODE = 'DM004';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER relationship_transitions_reviewer BEFORE INSERT ON relationship_transitions
    FOR EACH ROW EXECUTE FUNCTION densemem_reviewer_transitions();

-- +goose Down
DROP TRIGGER relationship_transitions_reviewer ON relationship_transitions;
DROP FUNCTION densemem_reviewer_transitions();
DROP TRIGGER relationships_reviewer ON relationships;
DROP FUNCTION densemem_reviewer_relationships();
DROP TRIGGER evidence_fragments_not_reviewer ON evidence_fragments;
DROP TRIGGER fragment_contents_not_reviewer ON fragment_contents;
DROP TRIGGER observations_not_reviewer ON observations;
DROP TRIGGER verification_events_not_reviewer ON verification_events;
DROP TRIGGER support_links_not_reviewer ON support_links;
DROP TRIGGER relationship_cross_references_not_reviewer ON relationship_cross_references;
DROP TRIGGER entities_not_reviewer ON entities;
DROP TRIGGER entity_names_not_reviewer ON entity_names;
DROP TRIGGER entity_resolution_events_not_reviewer ON entity_resolution_events;
DROP TRIGGER literal_values_not_reviewer ON literal_values;
DROP TRIGGER idempotency_records_not_reviewer ON idempotency_records;
DROP TRIGGER review_items_not_reviewer ON review_items;
DROP TRIGGER predicate_definitions_not_reviewer ON predicate_definitions;
DROP TRIGGER profiles_not_reviewer ON profiles;
DROP TRIGGER team_policies_not_reviewer ON team_policies;
DROP FUNCTION densemem_refuse_reviewer();
ALTER TABLE conflict_cases DROP COLUMN escalated_date;
ALTER TABLE conflict_cases DROP COLUMN attempts_date;
DROP TABLE nightly_runs;

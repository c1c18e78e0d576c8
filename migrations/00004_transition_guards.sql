-- Transitions must describe a real change: every transition is matched by its relationship row at
-- commit, and under the reviewer actor a transition can only record a supersession.

-- +goose Up

-- +goose StatementBegin
-- densemem_transition_has_relationship (deferred): at commit, the relationship has reached the
-- transition's version, and when it is still at that version its state is the transition's.
CREATE FUNCTION densemem_transition_has_relationship() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r relationships%ROWTYPE;
BEGIN
    SELECT * INTO r FROM relationships WHERE team_id = NEW.team_id AND relationship_id = NEW.relationship_id;
    IF NOT FOUND OR r.version < NEW.to_version
       OR (r.version = NEW.to_version AND (r.status <> NEW.to_status OR r.tier <> NEW.to_tier
                                           OR r.valid_to IS DISTINCT FROM NEW.to_valid_to)) THEN
        RAISE EXCEPTION 'densemem: transition % of relationship % has no matching relationship change',
            NEW.to_version, NEW.relationship_id USING ERRCODE = 'DM002';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER relationship_transitions_match AFTER INSERT ON relationship_transitions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION densemem_transition_has_relationship();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION densemem_reviewer_transitions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('densemem.actor', true) = 'system_conflict_reviewer'
       AND (NEW.actor_kind <> 'system_conflict_reviewer' OR NEW.actor_profile_id IS NOT NULL
            OR NEW.from_status IS DISTINCT FROM 'active' OR NEW.to_status <> 'superseded'
            OR NEW.from_tier IS DISTINCT FROM NEW.to_tier) THEN
        RAISE EXCEPTION 'densemem: the conflict reviewer may only record supersessions, as itself' USING ERRCODE = 'DM004';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER relationship_transitions_match ON relationship_transitions;
DROP FUNCTION densemem_transition_has_relationship();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION densemem_reviewer_transitions() RETURNS trigger
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

-- An entity resolution event records the identity context the mention was stated with and the
-- entities the caller's evidence shows it is not (distinct_from_entity_ids, or the candidates a
-- confirm_new_entity decision set aside): a decision placing the observation again keeps the context,
-- and Trace shows the distinction the identity-correction path (DESIGN §6.5) acted on.

-- +goose Up
ALTER TABLE entity_resolution_events
    ADD COLUMN identity_context  jsonb  NOT NULL DEFAULT '{}',
    ADD COLUMN distinct_from_ids text[] NOT NULL DEFAULT '{}';
-- A lifecycle change of a relationship on entity X locks the identity cases X may be in: those of the
-- entities X was stated distinct from. This finds them without reading X's other mentions.
CREATE INDEX entity_resolution_events_distinct ON entity_resolution_events (team_id, entity_id)
    WHERE distinct_from_ids <> '{}';

-- +goose Down
DROP INDEX entity_resolution_events_distinct;
ALTER TABLE entity_resolution_events
    DROP COLUMN identity_context,
    DROP COLUMN distinct_from_ids;

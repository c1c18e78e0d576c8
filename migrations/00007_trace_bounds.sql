-- Trace reads every list a page at a time in its (created_at, IDs) order, asking for the rows after
-- the page's cursor with a LIMIT. These indexes return the lists' rows in that order, so a page
-- reads its LIMIT rows and stops, however many rows the list holds (a hub entity's resolution
-- history, a relationship's supports). Where an index of 00001/00002 is a prefix of the new one it is
-- replaced: the wider index serves every query the old one served.

-- +goose Up
-- A relationship's supports in (created_at, observation_id, verification_id, support_id) order,
-- which is also the order of its observations and of the verification events its supports cite: a
-- support link is recorded with its observation and verification, in the same transaction, so they
-- share created_at.
DROP INDEX support_links_relationship;
CREATE INDEX support_links_relationship ON support_links
    (team_id, relationship_id, created_at, observation_id, verification_id, support_id);

DROP INDEX entity_resolution_events_entity;
CREATE INDEX entity_resolution_events_entity ON entity_resolution_events (team_id, entity_id, created_at, resolution_id);

DROP INDEX relationship_cross_references_from;
CREATE INDEX relationship_cross_references_from ON relationship_cross_references
    (team_id, from_relationship_id, created_at, xref_id);
DROP INDEX relationship_cross_references_to;
CREATE INDEX relationship_cross_references_to ON relationship_cross_references
    (team_id, to_relationship_id, created_at, xref_id);

-- Review items about a relationship, and those naming it as a related prior (GIN: related_ids is an
-- array; btree_gin lets the index lead with team_id).
CREATE INDEX review_items_relationship ON review_items (team_id, relationship_id, created_at, review_id)
    WHERE relationship_id IS NOT NULL;
CREATE INDEX review_items_related ON review_items USING gin (team_id, related_ids);

-- +goose Down
DROP INDEX review_items_related;
DROP INDEX review_items_relationship;
DROP INDEX relationship_cross_references_to;
CREATE INDEX relationship_cross_references_to ON relationship_cross_references (team_id, to_relationship_id);
DROP INDEX relationship_cross_references_from;
CREATE INDEX relationship_cross_references_from ON relationship_cross_references (team_id, from_relationship_id);
DROP INDEX entity_resolution_events_entity;
CREATE INDEX entity_resolution_events_entity ON entity_resolution_events (team_id, entity_id);
DROP INDEX support_links_relationship;
CREATE INDEX support_links_relationship ON support_links (team_id, relationship_id);

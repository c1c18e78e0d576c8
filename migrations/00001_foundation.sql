-- Dense-Mem foundation: tenancy, vocabulary, identity, evidence, relationships and their ledgers.
--
-- Every table carries team_id and every index that serves a query leads with it.
-- Recorded times come from the library's clock as parameters; nothing here defaults to now().

-- +goose Up

-- +goose StatementBegin
-- densemem_reject_mutation is attached to every append-only table: UPDATE and DELETE raise.
CREATE FUNCTION densemem_reject_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'densemem: % on append-only table % is not allowed', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'DM001';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- densemem_expect_rows fails the statement (and so the transaction) unless n = expected. Fenced updates
-- use it so a stale version aborts on the server, even inside a pipelined batch that ends in COMMIT.
CREATE FUNCTION densemem_expect_rows(n bigint, expected bigint, what text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF n <> expected THEN
        RAISE EXCEPTION 'densemem: % changed concurrently', what USING ERRCODE = 'DM003';
    END IF;
    RETURN n;
END;
$$;
-- +goose StatementEnd

CREATE TABLE teams (
    team_id    text        NOT NULL PRIMARY KEY,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE profiles (
    team_id    text        NOT NULL REFERENCES teams (team_id),
    profile_id text        NOT NULL,
    name       text        NOT NULL,
    status     text        NOT NULL CHECK (status IN ('active', 'disabled')),
    scopes     text[]      NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (team_id, profile_id)
);

-- team_policies is versioned: a change appends a new version, the highest version is in force.
CREATE TABLE team_policies (
    team_id                    text        NOT NULL REFERENCES teams (team_id),
    version                    integer     NOT NULL CHECK (version > 0),
    review_ttl_seconds         bigint      NOT NULL CHECK (review_ttl_seconds BETWEEN 86400 AND 2592000),
    auto_write_threshold       double precision NOT NULL CHECK (auto_write_threshold BETWEEN 0 AND 1),
    authoritative_profile_ids  text[]      NOT NULL,
    time_zone                  text        NOT NULL,
    created_by                 text        NOT NULL,
    created_at                 timestamptz NOT NULL,
    PRIMARY KEY (team_id, version)
);

-- predicate_definitions: immutable rows; a change registers a new version of the key.
CREATE TABLE predicate_definitions (
    team_id             text        NOT NULL REFERENCES teams (team_id),
    predicate_key       text        NOT NULL,
    version             integer     NOT NULL CHECK (version > 0),
    relationship_kind   text        NOT NULL CHECK (relationship_kind IN ('state', 'event')),
    current_cardinality text        NOT NULL CHECK (current_cardinality IN ('one', 'many')),
    aliases             text[]      NOT NULL,
    subject_kinds       text[]      NOT NULL,
    object_kinds        text[]      NOT NULL,
    value_object        boolean     NOT NULL,
    description         text        NOT NULL,
    created_by          text        NOT NULL,
    created_at          timestamptz NOT NULL,
    PRIMARY KEY (team_id, predicate_key, version)
);

CREATE TABLE entities (
    team_id          text        NOT NULL REFERENCES teams (team_id),
    entity_id        text        NOT NULL,
    entity_kind      text        NOT NULL,
    identity_context jsonb       NOT NULL,
    created_by       text        NOT NULL,
    ingest_id        text        NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, entity_id)
);

CREATE TABLE entity_names (
    team_id         text        NOT NULL,
    entity_id       text        NOT NULL,
    name            text        NOT NULL,
    normalized_name text        NOT NULL,
    name_kind       text        NOT NULL CHECK (name_kind IN ('canonical', 'alias')),
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (team_id, entity_id, normalized_name),
    FOREIGN KEY (team_id, entity_id) REFERENCES entities (team_id, entity_id)
);
CREATE INDEX entity_names_lookup ON entity_names (team_id, normalized_name);

-- values are typed literal objects, shared by every relationship that names the same literal.
CREATE TABLE literal_values (
    team_id    text        NOT NULL REFERENCES teams (team_id),
    value_id   text        NOT NULL,
    value_type text        NOT NULL CHECK (value_type IN ('string', 'number', 'boolean', 'date', 'date_time')),
    value_text text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (team_id, value_id),
    UNIQUE (team_id, value_type, value_text)
);

-- evidence_fragments holds the metadata of one verbatim evidence item; its bytes live in fragment_contents.
CREATE TABLE evidence_fragments (
    team_id           text        NOT NULL REFERENCES teams (team_id),
    fragment_id       text        NOT NULL,
    ingest_id         text        NOT NULL,
    evidence_index    integer     NOT NULL,
    author_profile_id text        NOT NULL,
    source_type       text        NOT NULL,
    authority         text        NOT NULL CHECK (authority IN ('authoritative', 'standard')),
    source_group      text        NOT NULL,
    source_key        text        NOT NULL,
    source_revision   text        NOT NULL,
    content_sha256    text        NOT NULL,
    content_length    integer     NOT NULL,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (team_id, fragment_id),
    FOREIGN KEY (team_id, author_profile_id) REFERENCES profiles (team_id, profile_id)
);
CREATE INDEX evidence_fragments_ingest ON evidence_fragments (team_id, ingest_id);

CREATE TABLE fragment_contents (
    team_id     text NOT NULL,
    fragment_id text NOT NULL,
    content     text NOT NULL,
    PRIMARY KEY (team_id, fragment_id),
    FOREIGN KEY (team_id, fragment_id) REFERENCES evidence_fragments (team_id, fragment_id)
);

-- observations: one proposed relationship occurrence exactly as the caller stated it.
CREATE TABLE observations (
    team_id          text        NOT NULL REFERENCES teams (team_id),
    observation_id   text        NOT NULL,
    ingest_id        text        NOT NULL,
    profile_id       text        NOT NULL,
    proposal_id      text        NOT NULL,
    subject_ref      text        NOT NULL,
    subject_name     text        NOT NULL,
    predicate_phrase text        NOT NULL,
    predicate_key    text,
    predicate_version integer,
    object_ref       text        NOT NULL,
    object_name      text        NOT NULL,
    object_value     jsonb,
    polarity         text        NOT NULL CHECK (polarity IN ('+', '-')),
    modality         text        NOT NULL,
    scope            text        NOT NULL,
    valid_from       timestamptz,
    valid_to         timestamptz,
    citations        jsonb       NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, observation_id),
    FOREIGN KEY (team_id, profile_id) REFERENCES profiles (team_id, profile_id)
);
CREATE INDEX observations_ingest ON observations (team_id, ingest_id);

CREATE TABLE verification_events (
    team_id              text        NOT NULL,
    verification_id      text        NOT NULL,
    observation_id       text        NOT NULL,
    verifier             text        NOT NULL,
    verdict              text        NOT NULL CHECK (verdict IN ('entailed', 'contradicted', 'insufficient')),
    confidence           double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    rationale            text        NOT NULL,
    confirmed_valid_from timestamptz,
    support_granted      boolean     NOT NULL,
    created_at           timestamptz NOT NULL,
    PRIMARY KEY (team_id, verification_id),
    FOREIGN KEY (team_id, observation_id) REFERENCES observations (team_id, observation_id)
);
CREATE INDEX verification_events_observation ON verification_events (team_id, observation_id);

-- entity_resolution_events: how each mention of an observation was resolved; the latest one is current.
CREATE TABLE entity_resolution_events (
    team_id        text        NOT NULL,
    resolution_id  text        NOT NULL,
    observation_id text        NOT NULL,
    mention_ref    text        NOT NULL,
    mention_name   text        NOT NULL,
    entity_kind    text        NOT NULL,
    entity_id      text,
    decision       text        NOT NULL CHECK (decision IN ('known', 'reused', 'created', 'ambiguous')),
    candidate_ids  text[]      NOT NULL,
    profile_id     text        NOT NULL,
    ingest_id      text        NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (team_id, resolution_id),
    FOREIGN KEY (team_id, observation_id) REFERENCES observations (team_id, observation_id)
);
CREATE INDEX entity_resolution_events_entity ON entity_resolution_events (team_id, entity_id);
CREATE INDEX entity_resolution_events_observation ON entity_resolution_events (team_id, observation_id);

-- relationships: the owner's current authored belief. The only mutable knowledge row; see the
-- guard trigger below for what may change and how.
CREATE TABLE relationships (
    team_id           text        NOT NULL REFERENCES teams (team_id),
    relationship_id   text        NOT NULL,
    owner_profile_id  text        NOT NULL,
    subject_entity_id text        NOT NULL,
    predicate_key     text        NOT NULL,
    predicate_version integer     NOT NULL,
    object_entity_id  text,
    object_value_id   text,
    polarity          text        NOT NULL CHECK (polarity IN ('+', '-')),
    scope             text        NOT NULL,
    valid_from        timestamptz,
    valid_to          timestamptz,
    status            text        NOT NULL CHECK (status IN ('pending_evidence', 'active', 'needs_review', 'superseded', 'retracted', 'rejected')),
    tier              text        NOT NULL CHECK (tier IN ('candidate', 'validated_claim', 'fact')),
    version           integer     NOT NULL CHECK (version > 0),
    observation_id    text        NOT NULL,
    ingest_id         text        NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (team_id, relationship_id),
    CHECK ((object_entity_id IS NULL) <> (object_value_id IS NULL)),
    FOREIGN KEY (team_id, owner_profile_id) REFERENCES profiles (team_id, profile_id),
    FOREIGN KEY (team_id, subject_entity_id) REFERENCES entities (team_id, entity_id),
    FOREIGN KEY (team_id, object_entity_id) REFERENCES entities (team_id, entity_id),
    FOREIGN KEY (team_id, object_value_id) REFERENCES literal_values (team_id, value_id)
);
-- relationships_conflict_key serves the key lookups of the write path and the conflict policy.
CREATE INDEX relationships_conflict_key ON relationships (team_id, subject_entity_id, predicate_key, scope);
CREATE INDEX relationships_object ON relationships (team_id, object_entity_id) WHERE object_entity_id IS NOT NULL;

CREATE TABLE support_links (
    team_id           text        NOT NULL,
    support_id        text        NOT NULL,
    relationship_id   text        NOT NULL,
    fragment_id       text        NOT NULL,
    observation_id    text        NOT NULL,
    verification_id   text        NOT NULL,
    span_start        integer     NOT NULL,
    span_end          integer     NOT NULL,
    source_group      text        NOT NULL,
    content_sha256    text        NOT NULL,
    authority         text        NOT NULL,
    author_profile_id text        NOT NULL,
    profile_id        text        NOT NULL,
    ingest_id         text        NOT NULL,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (team_id, support_id),
    CHECK (span_start >= 0 AND span_end > span_start),
    FOREIGN KEY (team_id, relationship_id) REFERENCES relationships (team_id, relationship_id),
    FOREIGN KEY (team_id, fragment_id) REFERENCES evidence_fragments (team_id, fragment_id),
    FOREIGN KEY (team_id, verification_id) REFERENCES verification_events (team_id, verification_id)
);
CREATE INDEX support_links_relationship ON support_links (team_id, relationship_id);
CREATE INDEX support_links_fragment ON support_links (team_id, fragment_id);

-- relationship_transitions: every change of a relationship's status, tier, validity or version,
-- including its creation (from_status NULL).
CREATE TABLE relationship_transitions (
    team_id                 text        NOT NULL,
    transition_id           text        NOT NULL,
    relationship_id         text        NOT NULL,
    from_status             text,
    to_status               text        NOT NULL,
    from_tier               text,
    to_tier                 text        NOT NULL,
    from_valid_to           timestamptz,
    to_valid_to             timestamptz,
    from_version            integer,
    to_version              integer     NOT NULL,
    reason                  text        NOT NULL,
    actor_kind              text        NOT NULL CHECK (actor_kind IN ('profile', 'system_conflict_reviewer', 'system')),
    actor_profile_id        text,
    related_relationship_id text,
    ingest_id               text        NOT NULL,
    idempotency_key         text        NOT NULL,
    created_at              timestamptz NOT NULL,
    PRIMARY KEY (team_id, transition_id),
    UNIQUE (team_id, relationship_id, to_version),
    FOREIGN KEY (team_id, relationship_id) REFERENCES relationships (team_id, relationship_id)
);

-- idempotency_records: one per (team, profile, key); the stored result is replayed verbatim.
CREATE TABLE idempotency_records (
    team_id         text        NOT NULL,
    profile_id      text        NOT NULL,
    idempotency_key text        NOT NULL,
    operation       text        NOT NULL,
    request_hash    text        NOT NULL,
    ingest_id       text        NOT NULL,
    result          jsonb       NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (team_id, profile_id, idempotency_key),
    FOREIGN KEY (team_id, profile_id) REFERENCES profiles (team_id, profile_id)
);

-- review_items: open client decisions (identity, predicate, relationship holds, pending evidence).
CREATE TABLE review_items (
    team_id           text        NOT NULL,
    review_id         text        NOT NULL,
    ingest_id         text        NOT NULL,
    placement_item_id text        NOT NULL,
    kind              text        NOT NULL,
    status            text        NOT NULL CHECK (status IN ('open', 'resolved')),
    profile_id        text        NOT NULL,
    observation_id    text        NOT NULL,
    relationship_id   text,
    related_ids       text[]      NOT NULL,
    choices           jsonb       NOT NULL,
    created_at        timestamptz NOT NULL,
    resolved_at       timestamptz,
    PRIMARY KEY (team_id, review_id),
    UNIQUE (team_id, ingest_id, placement_item_id)
);

-- search_refresh_queue: rebuildable search work, drained after commit. A queue, not a ledger.
CREATE TABLE search_refresh_queue (
    team_id         text        NOT NULL,
    refresh_id      bigint      GENERATED ALWAYS AS IDENTITY,
    relationship_id text        NOT NULL,
    reason          text        NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (team_id, refresh_id)
);

-- +goose StatementBegin
-- densemem_guard_relationship keeps authored fields immutable and forces every change through a
-- version bump; densemem_relationship_has_transition (deferred) proves the matching transition exists.
CREATE FUNCTION densemem_guard_relationship() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'densemem: relationships are never deleted' USING ERRCODE = 'DM001';
    END IF;
    IF (NEW.team_id, NEW.relationship_id, NEW.owner_profile_id, NEW.subject_entity_id, NEW.predicate_key,
        NEW.predicate_version, NEW.object_entity_id, NEW.object_value_id, NEW.polarity, NEW.scope,
        NEW.valid_from, NEW.observation_id, NEW.ingest_id, NEW.created_at)
       IS DISTINCT FROM
       (OLD.team_id, OLD.relationship_id, OLD.owner_profile_id, OLD.subject_entity_id, OLD.predicate_key,
        OLD.predicate_version, OLD.object_entity_id, OLD.object_value_id, OLD.polarity, OLD.scope,
        OLD.valid_from, OLD.observation_id, OLD.ingest_id, OLD.created_at) THEN
        RAISE EXCEPTION 'densemem: authored relationship fields are immutable' USING ERRCODE = 'DM001';
    END IF;
    IF NEW.version <> OLD.version + 1 THEN
        RAISE EXCEPTION 'densemem: a relationship change must bump its version by one' USING ERRCODE = 'DM001';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER relationships_guard BEFORE UPDATE OR DELETE ON relationships
    FOR EACH ROW EXECUTE FUNCTION densemem_guard_relationship();

-- +goose StatementBegin
CREATE FUNCTION densemem_relationship_has_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM relationship_transitions t
                   WHERE t.team_id = NEW.team_id AND t.relationship_id = NEW.relationship_id
                     AND t.to_version = NEW.version AND t.to_status = NEW.status AND t.to_tier = NEW.tier
                     AND t.to_valid_to IS NOT DISTINCT FROM NEW.valid_to) THEN
        RAISE EXCEPTION 'densemem: relationship % version % has no matching transition', NEW.relationship_id, NEW.version
            USING ERRCODE = 'DM002';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER relationships_have_transition AFTER INSERT OR UPDATE ON relationships
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION densemem_relationship_has_transition();

CREATE TRIGGER predicate_definitions_append_only BEFORE UPDATE OR DELETE ON predicate_definitions FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER team_policies_append_only BEFORE UPDATE OR DELETE ON team_policies FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER entities_append_only BEFORE UPDATE OR DELETE ON entities FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER entity_names_append_only BEFORE UPDATE OR DELETE ON entity_names FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER literal_values_append_only BEFORE UPDATE OR DELETE ON literal_values FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER evidence_fragments_append_only BEFORE UPDATE OR DELETE ON evidence_fragments FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER fragment_contents_append_only BEFORE UPDATE OR DELETE ON fragment_contents FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER observations_append_only BEFORE UPDATE OR DELETE ON observations FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER verification_events_append_only BEFORE UPDATE OR DELETE ON verification_events FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER entity_resolution_events_append_only BEFORE UPDATE OR DELETE ON entity_resolution_events FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER support_links_append_only BEFORE UPDATE OR DELETE ON support_links FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER relationship_transitions_append_only BEFORE UPDATE OR DELETE ON relationship_transitions FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER idempotency_records_append_only BEFORE UPDATE OR DELETE ON idempotency_records FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation();

-- TRUNCATE bypasses row triggers; statement-level triggers refuse it on every ledger and on relationships.
CREATE TRIGGER predicate_definitions_no_truncate BEFORE TRUNCATE ON predicate_definitions FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER team_policies_no_truncate BEFORE TRUNCATE ON team_policies FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER entities_no_truncate BEFORE TRUNCATE ON entities FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER entity_names_no_truncate BEFORE TRUNCATE ON entity_names FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER literal_values_no_truncate BEFORE TRUNCATE ON literal_values FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER evidence_fragments_no_truncate BEFORE TRUNCATE ON evidence_fragments FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER fragment_contents_no_truncate BEFORE TRUNCATE ON fragment_contents FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER observations_no_truncate BEFORE TRUNCATE ON observations FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER verification_events_no_truncate BEFORE TRUNCATE ON verification_events FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER entity_resolution_events_no_truncate BEFORE TRUNCATE ON entity_resolution_events FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER support_links_no_truncate BEFORE TRUNCATE ON support_links FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER relationship_transitions_no_truncate BEFORE TRUNCATE ON relationship_transitions FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER idempotency_records_no_truncate BEFORE TRUNCATE ON idempotency_records FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();
CREATE TRIGGER relationships_no_truncate BEFORE TRUNCATE ON relationships FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation();

-- semantic_edges is the graph-shaped read of current knowledge: active relationships only.
-- It is a view, so a status change removes the edge in the same transaction.
CREATE VIEW semantic_edges AS
SELECT r.team_id,
       r.relationship_id,
       r.owner_profile_id,
       r.subject_entity_id,
       sn.name AS subject_name,
       r.predicate_key,
       r.object_entity_id,
       r.object_value_id,
       COALESCE(obn.name, v.value_text) AS object_name,
       r.polarity,
       r.scope,
       r.valid_from,
       r.valid_to,
       r.tier,
       r.version
FROM relationships r
LEFT JOIN entity_names sn
       ON sn.team_id = r.team_id AND sn.entity_id = r.subject_entity_id AND sn.name_kind = 'canonical'
LEFT JOIN entity_names obn
       ON obn.team_id = r.team_id AND obn.entity_id = r.object_entity_id AND obn.name_kind = 'canonical'
LEFT JOIN literal_values v
       ON v.team_id = r.team_id AND v.value_id = r.object_value_id
WHERE r.status = 'active';

-- +goose Down
DROP VIEW semantic_edges;
DROP TABLE search_refresh_queue, review_items, idempotency_records, relationship_transitions, support_links,
    relationships, entity_resolution_events, verification_events, observations, fragment_contents,
    evidence_fragments, literal_values, entity_names, entities, predicate_definitions, team_policies,
    profiles, teams;
DROP FUNCTION densemem_relationship_has_transition();
DROP FUNCTION densemem_guard_relationship();
DROP FUNCTION densemem_reject_mutation();
DROP FUNCTION densemem_expect_rows(bigint, bigint, text);

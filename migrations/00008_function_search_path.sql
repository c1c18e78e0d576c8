-- Every Dense-Mem function runs with the schema that holds Dense-Mem's objects as its search_path,
-- whatever the calling session's: the library connects on a host's pool, whose search_path is the
-- host's, and trigger functions name tables without a schema. Migrations run with that schema as
-- their search_path, so FROM CURRENT records it. Every later function sets it too.

-- +goose Up
ALTER FUNCTION densemem_reject_mutation() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_expect_rows(bigint, bigint, text) SET search_path FROM CURRENT;
ALTER FUNCTION densemem_guard_relationship() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_relationship_has_transition() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_guard_member() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_refuse_reviewer() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_reviewer_relationships() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_reviewer_transitions() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_transition_has_relationship() SET search_path FROM CURRENT;
ALTER FUNCTION densemem_entity_names_bounded() SET search_path FROM CURRENT;

-- +goose Down
ALTER FUNCTION densemem_reject_mutation() RESET search_path;
ALTER FUNCTION densemem_expect_rows(bigint, bigint, text) RESET search_path;
ALTER FUNCTION densemem_guard_relationship() RESET search_path;
ALTER FUNCTION densemem_relationship_has_transition() RESET search_path;
ALTER FUNCTION densemem_guard_member() RESET search_path;
ALTER FUNCTION densemem_refuse_reviewer() RESET search_path;
ALTER FUNCTION densemem_reviewer_relationships() RESET search_path;
ALTER FUNCTION densemem_reviewer_transitions() RESET search_path;
ALTER FUNCTION densemem_transition_has_relationship() RESET search_path;
ALTER FUNCTION densemem_entity_names_bounded() RESET search_path;

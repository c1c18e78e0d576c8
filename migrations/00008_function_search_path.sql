-- Every Dense-Mem function runs with the schema that holds Dense-Mem's objects as its search_path,
-- whatever the calling session's: the library connects on a host's pool, whose search_path is the
-- host's, and trigger functions name tables without a schema. Migrations run with that schema as
-- their search_path, and the migration records that value. Every later function sets it too.
--
-- The value is spelled out (SET search_path = <the session's value>), not SET ... FROM CURRENT: both
-- record the same setting, but Citus refuses FROM CURRENT on a function it has already propagated
-- to the workers (issue 25). An installation that applied the FROM CURRENT form holds the same
-- setting, so nothing needs redoing.

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'densemem_reject_mutation()',
        'densemem_expect_rows(bigint, bigint, text)',
        'densemem_guard_relationship()',
        'densemem_relationship_has_transition()',
        'densemem_guard_member()',
        'densemem_refuse_reviewer()',
        'densemem_reviewer_relationships()',
        'densemem_reviewer_transitions()',
        'densemem_transition_has_relationship()',
        'densemem_entity_names_bounded()']
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f, current_setting('search_path'));
    END LOOP;
END
$$;
-- +goose StatementEnd

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

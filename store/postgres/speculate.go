package postgres

import (
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// speculatedKeysSQL computes, in SQL, the conflict keys a request's statements can fall on (store.
// KeySpeculation), as Go will compute them from what the same round trip reads, and lists them: one
// row per statement, subject candidate, predicate and object candidate. m holds the entities each
// mention can resolve to (role 's' a statement's subject, 'o' its object; $2–$5: role, statement,
// kind, skeleton per name, matched as entitiesByNameSQL matches them; $6–$8 known entities; $9, $10
// value objects by ID). t crosses each statement's subject candidates with the predicates whose key
// or alias is its phrase ($11–$14: statement, phrase, scope, whether it has an object; an alias is
// also compared normalised as relationship.NormalizePhrase does for ASCII text — Go's match decides,
// and a key it finds that was not read sends the call to the locked path), in their latest
// version: a row is read whole (wide) unless the predicate compares by object (relationship.
// Predicate.ComparesByObject) and the statement has an object, then for its object candidate (none
// when the object is new). ids are the relationships to read: every live one of a key read whole;
// otherwise the live ones about the row's object, the key's held ones and the live ones about a
// held one's object — each a probe of relationships_conflict_key_live_object by key, status and
// object as in byObjectIDs — and the named ones ($15) by ID, whatever their status; live_cases the
// keys' live cases. Every join to a table is LATERAL (a nested loop of index probes under any
// generic plan), and nothing is sorted or deduplicated: a key's rows are merged in Go, and an ID
// listed twice is read once. After the rows, one row without a key records the IDs of ids and
// live_cases, for the statements after it in the read's transaction (the settings
// densemem.speculated_relationships and densemem.speculated_cases, local to it): the keys are
// computed once, and each later statement reads its rows by primary key.
const speculatedKeysSQL = `-- name: SpeculatedKeys
WITH m AS MATERIALIZED (
    SELECT l.role, l.i, e.entity_id, NULL::text AS value_id
    FROM unnest($2::text[], $3::int[], $4::text[], $5::text[]) AS l(role, i, kind, skel)
    CROSS JOIN LATERAL (SELECT n.entity_id FROM {schema}.entity_names n WHERE n.team_id = $1 AND n.skeleton = l.skel) n
    CROSS JOIN LATERAL (SELECT e.entity_id FROM {schema}.entities e
                        WHERE e.team_id = $1 AND e.entity_id = n.entity_id AND e.entity_kind = l.kind) e
  UNION ALL
    SELECT k.role, k.i, k.id, NULL FROM unnest($6::text[], $7::int[], $8::text[]) AS k(role, i, id)
  UNION ALL
    SELECT 'o', v.i, NULL, v.id FROM unnest($9::int[], $10::text[]) AS v(i, id)),
t AS MATERIALIZED (
    SELECT s.entity_id AS subject, d.predicate_key AS predicate, q.scope,
           NOT (q.has_object AND (d.relationship_kind = 'event' OR d.current_cardinality <> 'one')) AS wide,
           o.entity_id AS object_entity, o.value_id AS object_value
    FROM unnest($11::int[], $12::text[], $13::text[], $14::bool[]) AS q(i, phrase, scope, has_object)
    JOIN m s ON s.role = 's' AND s.i = q.i
    CROSS JOIN LATERAL (SELECT p.predicate_key, p.relationship_kind, p.current_cardinality
        FROM {schema}.predicate_definitions p
        WHERE p.team_id = $1
          AND (p.predicate_key = q.phrase OR q.phrase = ANY(p.aliases) OR q.phrase IN (SELECT replace(regexp_replace(regexp_replace(
               lower(a), '^\s+|\s+$', '', 'g'), '\s+', '_', 'g'), '-', '_') FROM unnest(p.aliases) AS a))
          AND p.version = (SELECT max(v.version) FROM {schema}.predicate_definitions v
                           WHERE v.team_id = $1 AND v.predicate_key = p.predicate_key)) d
    LEFT JOIN m o ON o.role = 'o' AND o.i = q.i),
ids AS MATERIALIZED (
    SELECT w.relationship_id FROM t
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (SELECT w.relationship_id FROM {schema}.relationships w
        WHERE w.team_id = $1 AND w.subject_entity_id = t.subject AND w.predicate_key = t.predicate AND w.scope = t.scope
          AND w.status = st.status AND w.status IN ('active', 'pending_evidence', 'needs_review') OFFSET 0) w
    WHERE t.wide
  UNION ALL
    SELECT o.relationship_id FROM t
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (SELECT o.relationship_id FROM {schema}.relationships o
        WHERE o.team_id = $1 AND o.subject_entity_id = t.subject AND o.predicate_key = t.predicate AND o.scope = t.scope
          AND o.status = st.status AND o.status IN ('active', 'pending_evidence', 'needs_review')
          AND o.object_entity_id = t.object_entity OFFSET 0) o
    WHERE NOT t.wide AND t.object_entity IS NOT NULL
  UNION ALL
    SELECT o.relationship_id FROM t
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (SELECT o.relationship_id FROM {schema}.relationships o
        WHERE o.team_id = $1 AND o.subject_entity_id = t.subject AND o.predicate_key = t.predicate AND o.scope = t.scope
          AND o.status = st.status AND o.status IN ('active', 'pending_evidence', 'needs_review')
          AND o.object_entity_id IS NULL AND o.object_value_id = t.object_value OFFSET 0) o
    WHERE NOT t.wide AND t.object_value IS NOT NULL
  UNION ALL
    SELECT h.relationship_id FROM (SELECT t.subject, t.predicate, t.scope FROM t WHERE NOT t.wide) AS k
    CROSS JOIN LATERAL (` + heldObjects + `) h
  UNION ALL
    SELECT n.relationship_id FROM {schema}.relationships n WHERE n.team_id = $1 AND n.relationship_id = ANY($15::text[])),
live_cases AS MATERIALIZED (
    SELECT l.conflict_id FROM t
    CROSS JOIN LATERAL (SELECT l.conflict_id FROM {schema}.conflict_cases l
        WHERE l.team_id = $1 AND l.status IN ('open', 'overdue')
          AND l.subject_entity_id = t.subject AND l.predicate_key = t.predicate AND l.scope = t.scope OFFSET 0) l)
SELECT t.subject, t.predicate, t.scope, t.wide, t.object_entity, t.object_value, sn.name
FROM t
LEFT JOIN LATERAL (SELECT n.name FROM {schema}.entity_names n
    WHERE n.team_id = $1 AND n.entity_id = t.subject AND n.name_kind = 'canonical' LIMIT 1) sn ON true
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL,
       set_config('densemem.speculated_relationships', ARRAY(SELECT relationship_id FROM ids)::text, true) ||
       set_config('densemem.speculated_cases', ARRAY(SELECT conflict_id FROM live_cases)::text, true)`

// speculatedIDs and speculatedCaseIDs are the IDs speculatedKeysSQL recorded, each read by an
// InitPlan: a setting read in the expression itself is evaluated by the planner to estimate the
// selectivity of = ANY, and on a Citus cluster the coordinator plans the statement, where the
// worker's setting does not exist ("unrecognized configuration parameter"); the planner does not
// run subqueries, and the statement reads the setting on the worker that set it.
const (
	speculatedIDs     = `(SELECT current_setting('densemem.speculated_relationships'))::text[]`
	speculatedCaseIDs = `(SELECT current_setting('densemem.speculated_cases'))::text[]`
)

const speculatedRelationshipsSQL = `-- name: SpeculatedRelationships
SELECT ` + lockedRelationships + `
WHERE r.team_id = $1 AND r.relationship_id = ANY(` + speculatedIDs + `)
ORDER BY r.relationship_id`

const speculatedSupportsSQL = `-- name: SpeculatedSupports
SELECT ` + relationshipSupports + `
WHERE r.team_id = $1 AND r.relationship_id = ANY(` + speculatedIDs + `)` + liveFilter + `
ORDER BY s.relationship_id, s.support_id`

const speculatedItemsSQL = `-- name: SpeculatedItems
SELECT i.review_id, i.ingest_id, i.placement_item_id, i.kind, i.profile_id, i.relationship_id, i.related_ids,
       i.relationship_version, COALESCE(i.related_versions, '{}'), i.observation_id, i.choices, i.created_at
FROM {schema}.relationships r
JOIN {schema}.review_items i ON i.team_id = r.team_id AND i.relationship_id = r.relationship_id
WHERE r.team_id = $1 AND r.relationship_id = ANY(` + speculatedIDs + `) AND r.status = 'needs_review'
  AND i.status = 'open' AND i.kind = 'relationship_conflict'
ORDER BY i.relationship_id, i.created_at, i.review_id`

// speculatedCaseFilter selects the keys' live cases by primary key.
const speculatedCaseFilter = `c.team_id = $1 AND c.conflict_id = ANY(` + speculatedCaseIDs + `)`

const speculatedCasesSQL = `-- name: SpeculatedCases
SELECT ` + caseColumns + `
FROM {schema}.conflict_cases c WHERE ` + speculatedCaseFilter + `
ORDER BY c.conflict_id`

const speculatedCasePositionsSQL = `-- name: SpeculatedCasePositions
SELECT p.conflict_id, p.position_id, COALESCE(p.object_entity_id, ''), COALESCE(p.object_value_id, ''), p.polarity
FROM {schema}.conflict_cases c JOIN {schema}.conflict_positions p ON p.team_id = c.team_id AND p.conflict_id = c.conflict_id
WHERE ` + speculatedCaseFilter + `
ORDER BY p.conflict_id, p.position_id`

const speculatedCaseMembersSQL = `-- name: SpeculatedCaseMembers
SELECT m.conflict_id, m.position_id, m.relationship_id, m.relationship_version, m.owner_profile_id
FROM {schema}.conflict_cases c JOIN {schema}.conflict_position_members m ON m.team_id = c.team_id AND m.conflict_id = c.conflict_id
WHERE ` + speculatedCaseFilter + ` AND m.removed_version IS NULL
ORDER BY m.conflict_id, m.relationship_id`

// speculationArgs are speculatedKeysSQL's arguments for sp: the mentions' lookups by role and
// statement, the value objects, the statements and the named relationships.
func speculationArgs(team identity.TeamID, sp *store.KeySpeculation) []any {
	var nameRoles, knownRoles, kinds, skeletons, knowns, values, phrases, scopes []string
	var nameStmts, knownStmts, valueStmts, stmts []int32
	var hasObject []bool
	add := func(role string, i int32, m store.MentionLookup) {
		if m.Known != "" {
			knownRoles, knownStmts, knowns = append(knownRoles, role), append(knownStmts, i), append(knowns, string(m.Known))
			return
		}
		for _, n := range m.Names {
			nameRoles, nameStmts = append(nameRoles, role), append(nameStmts, i)
			kinds, skeletons = append(kinds, n.Kind), append(skeletons, n.Skeleton)
		}
	}
	for n, s := range sp.Statements {
		i := int32(n)
		add("s", i, s.Subject)
		add("o", i, s.Object)
		if s.ObjectValue != "" {
			valueStmts, values = append(valueStmts, i), append(values, s.ObjectValue)
		}
		stmts, phrases, scopes, hasObject = append(stmts, i), append(phrases, s.Predicate), append(scopes, s.Scope), append(hasObject, s.HasObject())
	}
	named := make([]string, len(sp.Named))
	for i, id := range sp.Named {
		named[i] = string(id)
	}
	return []any{team, nameRoles, nameStmts, kinds, skeletons, knownRoles, knownStmts, knowns, valueStmts, values,
		stmts, phrases, scopes, hasObject, named}
}

// queueSpeculation queues the statements of a key speculation into out.
func queueSpeculation(b *pgx.Batch, out *store.KeysSpeculated, team identity.TeamID, sp *store.KeySpeculation) {
	args := speculationArgs(team, sp)
	st := &out.State
	st.ObjectNames, st.SubjectNames = map[relationship.ID]string{}, map[identity.EntityID]string{}
	byKey := map[conflict.Key]int{}
	b.Queue(speculatedKeysSQL, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var subject, predicate, scope, entity, value, name *string
			var wide *bool
			if err := rows.Scan(&subject, &predicate, &scope, &wide, &entity, &value, &name); err != nil {
				return err
			}
			if subject == nil {
				continue // the row recording the IDs to read
			}
			k := conflict.Key{Team: team, Subject: identity.EntityID(*subject), PredicateKey: *predicate, Scope: *scope}
			i, ok := byKey[k]
			if !ok {
				i, byKey[k] = len(out.Keys), len(out.Keys)
				out.Keys = append(out.Keys, store.SpeculatedKey{Key: k})
			}
			sk := &out.Keys[i]
			sk.Wide = sk.Wide || *wide
			var o relationship.Object
			switch {
			case entity != nil:
				o.EntityID = identity.EntityID(*entity)
			case value != nil:
				o.ValueID = *value
			}
			if o != (relationship.Object{}) && !slices.Contains(sk.Objects, o) {
				sk.Objects = append(sk.Objects, o)
			}
			if name != nil {
				st.SubjectNames[k.Subject] = *name
			}
		}
		return rows.Err()
	})
	b.Queue(speculatedRelationshipsSQL, team).Query(func(rows pgx.Rows) error {
		return readKeyRelationships(rows, st)
	})
	b.Queue(speculatedSupportsSQL, team).Query(func(rows pgx.Rows) (err error) {
		st.Supports, err = pgx.CollectRows(rows, scanKeySupport)
		return err
	})
	b.Queue(speculatedItemsSQL, team).Query(func(rows pgx.Rows) (err error) {
		st.Items, err = pgx.CollectRows(rows, scanKeyItem)
		return err
	})
	c := &keyCaseReader{out: st, team: team, byID: map[conflict.ID]int{}, positions: map[conflict.PositionID]conflict.PositionKey{}}
	b.Queue(speculatedCasesSQL, team).Query(c.readCases)
	b.Queue(speculatedCasePositionsSQL, team).Query(c.readPositions)
	b.Queue(speculatedCaseMembersSQL, team).Query(c.readMembers)
}

// keysFenceRelationshipsSQL locks what KeysLock with LiveOnly and the same keys, objects and named
// relationships (byObjectIDs' arguments, $1–$24) locks, in the same order (the live relationships by
// ID), and fails with DM003 unless they are the relationships read at the versions read ($25, $26),
// with as many supports and as many of them retired ($27, $28).
const keysFenceRelationshipsSQL = `-- name: KeysFenceRelationships
WITH rels AS MATERIALIZED (
    SELECT r.relationship_id, r.version FROM {schema}.relationships r
    WHERE r.team_id = $1 AND r.relationship_id = ANY(` + byObjectIDs + `)` + liveFilter + `
    ORDER BY r.relationship_id
    FOR UPDATE OF r),
sups AS (
    SELECT fr.retirement_id FROM rels
    JOIN {schema}.support_links s ON s.team_id = $1 AND s.relationship_id = rels.relationship_id
    LEFT JOIN {schema}.fragment_retirements fr ON fr.team_id = $1 AND fr.fragment_id = s.fragment_id)
SELECT {schema}.densemem_expect_rows((SELECT count(*) FROM rels), cardinality($25::text[]), 'fence: live relationships of the keys'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM rels
           WHERE (rels.relationship_id, rels.version) IN (SELECT * FROM unnest($25::text[], $26::int[]))),
           cardinality($25::text[]), 'fence: versions of the live relationships'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM sups), $27::bigint, 'fence: supports'),
       {schema}.densemem_expect_rows((SELECT count(retirement_id) FROM sups), $28::bigint, 'fence: retired supports')`

// keysFenceCasesSQL locks the keys' live cases ($2–$4: subject, predicate, scope) as KeysLock does,
// after the relationships, and fails with DM003 unless they are the cases read at the versions read
// ($5, $6) and the open relationship_conflict review items of the keys' held relationships are
// those read ($7).
const keysFenceCasesSQL = `-- name: KeysFenceCases
WITH cases AS MATERIALIZED (
    SELECT c.conflict_id, c.version FROM {schema}.conflict_cases c
    WHERE c.team_id = $1 AND c.conflict_id = ANY(ARRAY(
        SELECT l.conflict_id FROM {schema}.conflict_cases l
        WHERE l.team_id = $1 AND l.status IN ('open', 'overdue')
          AND l.subject_entity_id = ANY($2::text[]) AND l.predicate_key = ANY($3::text[]) AND l.scope = ANY($4::text[])
          AND (l.subject_entity_id, l.predicate_key, l.scope) IN (SELECT * FROM unnest($2::text[], $3::text[], $4::text[]))))
    ORDER BY c.conflict_id
    FOR UPDATE),
items AS (
    SELECT i.review_id FROM {schema}.relationships r
    JOIN {schema}.review_items i ON i.team_id = r.team_id AND i.relationship_id = r.relationship_id
    WHERE ` + keyFilter + ` AND r.status = 'needs_review' AND i.status = 'open' AND i.kind = 'relationship_conflict')
SELECT {schema}.densemem_expect_rows((SELECT count(*) FROM cases), cardinality($5::text[]), 'fence: cases of the keys'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM cases
           WHERE (cases.conflict_id, cases.version) IN (SELECT * FROM unnest($5::text[], $6::int[]))),
           cardinality($5::text[]), 'fence: versions of the cases'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM items), cardinality($7::text[]), 'fence: review items of the keys'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM items WHERE items.review_id = ANY($7::text[])),
           cardinality($7::text[]), 'fence: review items of the keys')`

// queueKeysFence queues f's conflict-key locks and its two fence statements.
func queueKeysFence(b *pgx.Batch, f *store.KeysFence) {
	p := f.Params
	queueKeyLocks(b, p.Team, p.Keys, p.MaxLocks)
	rels, cases := make([]string, len(f.Relationships)), make([]string, len(f.Cases))
	for i, id := range f.Relationships {
		rels[i] = string(id)
	}
	for i, id := range f.Cases {
		cases[i] = string(id)
	}
	items := f.Items
	if items == nil {
		items = []string{}
	}
	b.Queue(keysFenceRelationshipsSQL, append(byObjectArgs(p), rels, f.Versions, f.Supports, f.Retired)...)
	k := newKeyArrays(p)
	b.Queue(keysFenceCasesSQL, p.Team, k.subjects, k.preds, k.scopes, cases, f.CaseVersions, items)
}

package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// speculatedKeys is the common head of the statements of a key speculation
// (store.KeySpeculation): the keys a request's statements can fall on, computed in SQL from its
// lookups, as Go will compute them from what the same round trip reads. Each statement is numbered
// (i): its subject's lookups ($2–$4: statement, kind, skeleton; known entities $5, $6), its phrase,
// scope and whether it has an object ($7–$10), its object's lookups ($11–$13; known $14, $15;
// value IDs $16, $17). subj and obj are the entities a lookup can resolve to (as entitiesByNameSQL
// matches them: skeleton, then kind), pred the predicates whose key or alias is the phrase (an alias
// normalised as relationship.NormalizePhrase does for ASCII text: Go's match decides, and a key it
// finds that was not read sends the call to the locked path), in their latest version; a statement's keys are its subject
// candidates crossed with its predicates, read whole (wide) unless the predicate compares by
// object (relationship.Predicate.ComparesByObject) and the statement has an object; objs lists, for
// each key not read whole, the object candidates of its statements. ids are the relationships to
// read: every live one of a wide key; of another key, the live ones about one of its objects, the
// held ones and the live ones about a held one's object — each a probe of
// relationships_conflict_key_live_object by key, status and object as in byObjectIDs — and the
// named ones ($18) by ID, whatever their status; live_cases the keys' live cases. Every join to a
// table is LATERAL (a nested loop of index probes under any generic plan).
const speculatedKeys = `WITH subj AS MATERIALIZED (
    SELECT s.i, e.entity_id
    FROM unnest($2::int[], $3::text[], $4::text[]) AS s(i, kind, skel)
    CROSS JOIN LATERAL (SELECT n.entity_id FROM {schema}.entity_names n WHERE n.team_id = $1 AND n.skeleton = s.skel) n
    CROSS JOIN LATERAL (SELECT e.entity_id FROM {schema}.entities e
                        WHERE e.team_id = $1 AND e.entity_id = n.entity_id AND e.entity_kind = s.kind) e
  UNION
    SELECT s.i, s.id FROM unnest($5::int[], $6::text[]) AS s(i, id)),
pred AS MATERIALIZED (
    SELECT q.i, q.scope, q.has_object, d.predicate_key, d.relationship_kind = 'event' OR d.current_cardinality <> 'one' AS by_object
    FROM unnest($7::int[], $8::text[], $9::text[], $10::bool[]) AS q(i, phrase, scope, has_object)
    JOIN (SELECT DISTINCT ON (p.predicate_key) p.predicate_key, p.relationship_kind, p.current_cardinality, p.aliases
          FROM {schema}.predicate_definitions p WHERE p.team_id = $1
          ORDER BY p.predicate_key, p.version DESC) d
      ON d.predicate_key = q.phrase OR q.phrase = ANY(d.aliases) OR q.phrase IN (SELECT replace(regexp_replace(regexp_replace(
          lower(a), '^\s+|\s+$', '', 'g'), '\s+', '_', 'g'), '-', '_') FROM unnest(d.aliases) AS a)),
obj AS MATERIALIZED (
    SELECT o.i, e.entity_id, NULL::text AS value_id
    FROM unnest($11::int[], $12::text[], $13::text[]) AS o(i, kind, skel)
    CROSS JOIN LATERAL (SELECT n.entity_id FROM {schema}.entity_names n WHERE n.team_id = $1 AND n.skeleton = o.skel) n
    CROSS JOIN LATERAL (SELECT e.entity_id FROM {schema}.entities e
                        WHERE e.team_id = $1 AND e.entity_id = n.entity_id AND e.entity_kind = o.kind) e
  UNION
    SELECT o.i, o.id, NULL FROM unnest($14::int[], $15::text[]) AS o(i, id)
  UNION
    SELECT o.i, NULL, o.v FROM unnest($16::int[], $17::text[]) AS o(i, v)),
stmt AS MATERIALIZED (
    SELECT s.i, s.entity_id AS subject, p.predicate_key AS predicate, p.scope, NOT (p.by_object AND p.has_object) AS wide
    FROM subj s JOIN pred p ON p.i = s.i),
keys AS MATERIALIZED (
    SELECT t.subject, t.predicate, t.scope, bool_or(t.wide) AS wide FROM stmt t GROUP BY t.subject, t.predicate, t.scope),
objs AS MATERIALIZED (
    SELECT DISTINCT k.subject, k.predicate, k.scope, o.entity_id, o.value_id
    FROM keys k
    JOIN stmt t ON t.subject = k.subject AND t.predicate = k.predicate AND t.scope = k.scope
    JOIN obj o ON o.i = t.i
    WHERE NOT k.wide),
ids AS MATERIALIZED (
    SELECT w.relationship_id FROM keys k
    CROSS JOIN LATERAL (SELECT w.relationship_id FROM {schema}.relationships w
        WHERE w.team_id = $1 AND w.subject_entity_id = k.subject AND w.predicate_key = k.predicate AND w.scope = k.scope
          AND w.status IN ('active', 'pending_evidence', 'needs_review')) w
    WHERE k.wide
  UNION
    SELECT o.relationship_id FROM objs x
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (SELECT o.relationship_id FROM {schema}.relationships o
        WHERE o.team_id = $1 AND o.subject_entity_id = x.subject AND o.predicate_key = x.predicate AND o.scope = x.scope
          AND o.status = st.status AND o.status IN ('active', 'pending_evidence', 'needs_review')
          AND o.object_entity_id = x.entity_id OFFSET 0) o
    WHERE x.entity_id IS NOT NULL
  UNION
    SELECT o.relationship_id FROM objs x
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (SELECT o.relationship_id FROM {schema}.relationships o
        WHERE o.team_id = $1 AND o.subject_entity_id = x.subject AND o.predicate_key = x.predicate AND o.scope = x.scope
          AND o.status = st.status AND o.status IN ('active', 'pending_evidence', 'needs_review')
          AND o.object_entity_id IS NULL AND o.object_value_id = x.value_id OFFSET 0) o
    WHERE x.value_id IS NOT NULL
  UNION
    SELECT t.relationship_id FROM keys k
    CROSS JOIN LATERAL (SELECT h.object_entity_id, h.object_value_id FROM {schema}.relationships h
        WHERE h.team_id = $1 AND h.subject_entity_id = k.subject AND h.predicate_key = k.predicate AND h.scope = k.scope
          AND h.status = 'needs_review') h
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (SELECT t.relationship_id FROM {schema}.relationships t
        WHERE t.team_id = $1 AND t.subject_entity_id = k.subject AND t.predicate_key = k.predicate AND t.scope = k.scope
          AND t.status = st.status AND t.status IN ('active', 'pending_evidence', 'needs_review')
          AND t.object_entity_id IS NOT DISTINCT FROM h.object_entity_id AND t.object_value_id IS NOT DISTINCT FROM h.object_value_id) t
    WHERE NOT k.wide
  UNION
    SELECT n.relationship_id FROM {schema}.relationships n WHERE n.team_id = $1 AND n.relationship_id = ANY($18::text[])),
live_cases AS MATERIALIZED (
    SELECT l.conflict_id FROM keys k
    CROSS JOIN LATERAL (SELECT l.conflict_id FROM {schema}.conflict_cases l
        WHERE l.team_id = $1 AND l.status IN ('open', 'overdue')
          AND l.subject_entity_id = k.subject AND l.predicate_key = k.predicate AND l.scope = k.scope) l)
`

// speculatedKeysSQL lists the keys, each with its objects (entities, values) when not read whole,
// and its subject's canonical name; then one row without a key that records, for the statements
// after it in the transaction, the IDs of the relationships (ids) and live cases (live_cases) to
// read (the settings densemem.speculated_relationships and densemem.speculated_cases, local to the
// read's transaction): the keys are computed once, and each later statement reads its rows by
// primary key.
const speculatedKeysSQL = `-- name: SpeculatedKeys
` + speculatedKeys + `SELECT k.subject, k.predicate, k.scope, k.wide,
       ARRAY(SELECT x.entity_id FROM objs x WHERE x.subject = k.subject AND x.predicate = k.predicate AND x.scope = k.scope
             AND x.entity_id IS NOT NULL ORDER BY 1),
       ARRAY(SELECT x.value_id FROM objs x WHERE x.subject = k.subject AND x.predicate = k.predicate AND x.scope = k.scope
             AND x.value_id IS NOT NULL ORDER BY 1),
       sn.name
FROM keys k
LEFT JOIN LATERAL (SELECT n.name FROM {schema}.entity_names n
    WHERE n.team_id = $1 AND n.entity_id = k.subject AND n.name_kind = 'canonical' LIMIT 1) sn ON true
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL,
       set_config('densemem.speculated_relationships', ARRAY(SELECT relationship_id FROM ids)::text, true) ||
       set_config('densemem.speculated_cases', ARRAY(SELECT conflict_id FROM live_cases)::text, true)`

// speculatedIDs and speculatedCaseIDs are the IDs speculatedKeysSQL recorded.
const (
	speculatedIDs     = `current_setting('densemem.speculated_relationships')::text[]`
	speculatedCaseIDs = `current_setting('densemem.speculated_cases')::text[]`
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

// lookupArgs are the statement-numbered lookups of speculatedKeys' mentions: (statement, kind,
// skeleton) per name, and (statement, entity) per known entity.
type lookupArgs struct {
	nameStmts, knownStmts    []int32
	kinds, skeletons, knowns []string
}

func (a *lookupArgs) add(i int32, m store.MentionLookup) {
	if m.Known != "" {
		a.knownStmts, a.knowns = append(a.knownStmts, i), append(a.knowns, string(m.Known))
		return
	}
	for _, n := range m.Names {
		a.nameStmts, a.kinds, a.skeletons = append(a.nameStmts, i), append(a.kinds, n.Kind), append(a.skeletons, n.Skeleton)
	}
}

// speculationArgs are speculatedKeys' arguments for sp.
func speculationArgs(team identity.TeamID, sp *store.KeySpeculation) []any {
	var subj, obj lookupArgs
	var stmts, valueStmts []int32
	var phrases, scopes, values []string
	var hasObject []bool
	for n, s := range sp.Statements {
		i := int32(n)
		subj.add(i, s.Subject)
		obj.add(i, s.Object)
		if s.ObjectValue != "" {
			valueStmts, values = append(valueStmts, i), append(values, s.ObjectValue)
		}
		stmts, phrases, scopes, hasObject = append(stmts, i), append(phrases, s.Predicate), append(scopes, s.Scope), append(hasObject, s.HasObject())
	}
	named := make([]string, len(sp.Named))
	for i, id := range sp.Named {
		named[i] = string(id)
	}
	return []any{team, subj.nameStmts, subj.kinds, subj.skeletons, subj.knownStmts, subj.knowns,
		stmts, phrases, scopes, hasObject, obj.nameStmts, obj.kinds, obj.skeletons, obj.knownStmts, obj.knowns,
		valueStmts, values, named}
}

// queueSpeculation queues the statements of a key speculation into out.
func queueSpeculation(b *pgx.Batch, out *store.KeysSpeculated, team identity.TeamID, sp *store.KeySpeculation) {
	args := speculationArgs(team, sp)
	st := &out.State
	st.ObjectNames, st.SubjectNames = map[relationship.ID]string{}, map[identity.EntityID]string{}
	b.Queue(speculatedKeysSQL, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			k := store.SpeculatedKey{Key: conflict.Key{Team: team}}
			var subject, predicate, scope *string
			var wide *bool
			var entities, values []string
			var name *string
			if err := rows.Scan(&subject, &predicate, &scope, &wide, &entities, &values, &name); err != nil {
				return err
			}
			if subject == nil {
				continue // the row recording the IDs to read
			}
			k.Key.Subject, k.Key.PredicateKey, k.Key.Scope, k.Wide = identity.EntityID(*subject), *predicate, *scope, *wide
			for _, e := range entities {
				k.Objects = append(k.Objects, relationship.Object{EntityID: identity.EntityID(e)})
			}
			for _, v := range values {
				k.Objects = append(k.Objects, relationship.Object{ValueID: v})
			}
			if name != nil {
				st.SubjectNames[k.Key.Subject] = *name
			}
			out.Keys = append(out.Keys, k)
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
// relationships (byObjectIDs' arguments, $1–$16) locks, in the same order (the live relationships by
// ID), and fails with DM003 unless they are the relationships read at the versions read ($17, $18),
// with as many supports and as many of them retired ($19, $20).
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
SELECT {schema}.densemem_expect_rows((SELECT count(*) FROM rels), cardinality($17::text[]), 'fence: live relationships of the keys'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM rels
           WHERE (rels.relationship_id, rels.version) IN (SELECT * FROM unnest($17::text[], $18::int[]))),
           cardinality($17::text[]), 'fence: versions of the live relationships'),
       {schema}.densemem_expect_rows((SELECT count(*) FROM sups), $19::bigint, 'fence: supports'),
       {schema}.densemem_expect_rows((SELECT count(retirement_id) FROM sups), $20::bigint, 'fence: retired supports')`

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

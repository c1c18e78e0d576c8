package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/failpoint"
)

// tx is one transaction on one connection. BEGIN is queued in front of the first batch and, when no
// failpoint is armed, COMMIT behind the write batch.
type tx struct {
	s          *Store
	conn       *pgx.Conn
	begun      bool   // BEGIN has been sent
	done       bool   // COMMIT has been sent and succeeded, or the work is over
	foldCommit bool   // queue COMMIT behind the write batch
	timeout    string // the statement timeout, in milliseconds
	actor      string // the actor the transaction is bound to (store.WithActor)
	team       identity.TeamID
}

// Generic plans (settingsSQL sets plan_cache_mode): the transaction's prepared statements use their
// generic plans. The write path's statements are index-driven by design (team first, keys by = ANY),
// so a generic plan is as good as a custom one, and re-planning them on every call cost more than
// executing them.

// errTxOver is returned by a Tx call after WriteSetApply.
var errTxOver = errors.New("densemem store: transaction already ended by WriteSetApply")

// batch returns a new batch for the transaction, starting with BEGIN and the settings of team when
// none was sent yet. A transaction belongs to one team: a call naming another one is refused.
func (t *tx) batch(team identity.TeamID) (*pgx.Batch, error) {
	if t.done {
		return nil, errTxOver
	}
	b := &pgx.Batch{}
	switch {
	case !t.begun && team == "":
		return nil, fmt.Errorf("%w: a transaction must start with a call that names its team", store.ErrInternal)
	case !t.begun:
		b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED, READ WRITE")
		b.Queue(settingsSQL, t.timeout, team, t.actor)
		t.begun, t.team = true, team
	case team != "" && team != t.team:
		return nil, fmt.Errorf("%w: transaction of team %s called for team %s", store.ErrInternal, t.team, team)
	}
	return b, nil
}

var _ store.Tx = (*tx)(nil)

const relationshipColumns = `r.relationship_id, r.owner_profile_id, r.subject_entity_id, r.predicate_key, r.predicate_version,
       r.object_entity_id, r.object_value_id, r.polarity, r.scope, r.valid_from, r.valid_to, r.status, r.tier, r.version`

const profileShareSQL = `-- name: ProfileShare
SELECT status, scopes FROM {schema}.profiles WHERE team_id = $1 AND profile_id = $2 FOR SHARE`

// IntakeLock takes the idempotency and entity-name locks, then re-reads under them.
func (t *tx) IntakeLock(ctx context.Context, p store.IntakeLockParams) (store.IntakeLocked, error) {
	var out store.IntakeLocked
	b, err := t.batch(p.Team)
	if err != nil {
		return out, err
	}
	var locks lockSet
	locks.add(idempotencyLockID(p.Team, p.Profile, p.IdempotencyKey), false)
	locks.class("entity-name", p.Team, nameLockIDs(p.Team, p.NameLocks), p.MaxLocks)
	locks.class("source-key", p.Team, sourceLockIDs(p.Team, p.Revisions, p.AdoptSources), p.MaxLocks)
	b.Queue(lockManySQL, locks.ids, locks.shared)
	queueIdempotency(b, &out.Idempotency, p.Team, p.Profile, p.IdempotencyKey)
	b.Queue(profileShareSQL, p.Team, p.Profile).QueryRow(func(row pgx.Row) error {
		var status string
		var scopes []string
		err := row.Scan(&status, &scopes)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		out.ProfileActive = identity.ProfileStatus(status) == identity.ProfileActive
		for _, s := range scopes {
			out.ProfileScopes = append(out.ProfileScopes, identity.Scope(s))
		}
		return err
	})
	queueEntityReads(b, &out.Candidates, &out.Known, p.Team, p.Names, p.KnownEntities)
	queueAdoptable(b, &out.Adoptable, p.Team, p.AdoptFragments, false)
	if p.DistinctionsOf != "" {
		b.Queue(distinctionsSQL, p.Team, p.DistinctionsOf).Query(func(rows pgx.Rows) error {
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			out.Distinctions = entityIDs(ids)
			return err
		})
	}
	if len(p.Revisions) > 0 {
		queueSources(b, &out.Sources, p)
	}
	if err := t.s.sendOn(ctx, t.conn, b); err != nil {
		return store.IntakeLocked{}, translate(err)
	}
	return out, nil
}

// distinctionsSQL reads the entities the mentions resolved to an entity were stated distinct from
// (entity_resolution_events_distinct: only such mentions are read).
const distinctionsSQL = `-- name: EntityDistinctions
SELECT DISTINCT d FROM {schema}.entity_resolution_events e, unnest(e.distinct_from_ids) d
WHERE e.team_id = $1 AND e.entity_id = $2 AND e.distinct_from_ids <> '{}'
ORDER BY d`

// keyFilter selects a team's relationships of a set of conflict keys ($2, $3, $4: parallel arrays of
// subject, predicate and scope). The ANY conditions let a generic plan use relationships_conflict_key.
const keyFilter = `r.team_id = $1
  AND r.subject_entity_id = ANY($2::text[]) AND r.predicate_key = ANY($3::text[]) AND r.scope = ANY($4::text[])
  AND (r.subject_entity_id, r.predicate_key, r.scope) IN (SELECT * FROM unnest($2::text[], $3::text[], $4::text[]))`

// lockedRelationships is the column list and joins of a read of relationships (r) to lock, each with
// its object's name: the statements that use it add their filter, order and lock. The name is one
// probe of entity_names_canonical per relationship under any plan (a join planned while the team
// was small scanned every canonical name of the team for each relationship, decision 123).
const lockedRelationships = relationshipColumns + `, COALESCE(obn.name, v.value_text, '')
FROM {schema}.relationships r
LEFT JOIN LATERAL (
    SELECT n.name FROM {schema}.entity_names n
    WHERE n.team_id = $1 AND n.entity_id = r.object_entity_id AND n.name_kind = 'canonical'
    LIMIT 1) obn ON true
LEFT JOIN {schema}.literal_values v ON v.team_id = $1 AND v.value_id = r.object_value_id`

// relationshipSupports is the column list and joins of a read of the supports of relationships
// (r), with their verification's confirmed valid_from and their fragment's retirement.
const relationshipSupports = supportColumns + `
FROM {schema}.relationships r
JOIN {schema}.support_links s ON s.team_id = $1 AND s.relationship_id = r.relationship_id
JOIN {schema}.verification_events v ON v.team_id = $1 AND v.verification_id = s.verification_id
` + retiredJoin

// liveFilter keeps the relationships that can still change a case or a decision: the statuses of
// relationships_conflict_key_live (migration 19), so a key's closed history is never read.
const liveFilter = `
  AND r.status IN ('active', 'pending_evidence', 'needs_review')`

// keyItemsSQL reads the open relationship_conflict review items about the keys' held relationships
// with their prompts (review_items_relationship per held relationship).
const keyItemsSQL = `-- name: KeyOpenItems
SELECT i.review_id, i.ingest_id, i.placement_item_id, i.kind, i.profile_id, i.relationship_id, i.related_ids,
       i.relationship_version, COALESCE(i.related_versions, '{}'), i.observation_id, i.choices, i.created_at
FROM {schema}.relationships r
JOIN {schema}.review_items i ON i.team_id = $1 AND i.relationship_id = r.relationship_id
WHERE ` + keyFilter + ` AND r.status = 'needs_review' AND i.status = 'open' AND i.kind = 'relationship_conflict'
ORDER BY i.relationship_id, i.created_at, i.review_id`

// keySubjectNamesSQL reads the canonical name of each key's subject (entity_names_canonical).
const keySubjectNamesSQL = `-- name: KeySubjectNames
SELECT n.entity_id, n.name FROM {schema}.entity_names n
WHERE n.team_id = $1 AND n.entity_id = ANY($2::text[]) AND n.name_kind = 'canonical'`

const keyRelationshipsSQL = `-- name: KeyRelationshipsLock
SELECT ` + lockedRelationships + `
WHERE ` + keyFilter + `
ORDER BY r.relationship_id
FOR UPDATE OF r`

// keyNamedClosedSQL reads the closed relationships among $5 that lie on the keys (KeysLockParams.
// Named), by primary key, unlocked: a closed relationship never changes.
const keyNamedClosedSQL = `-- name: KeyNamedClosedRelationships
SELECT ` + lockedRelationships + `
WHERE ` + keyFilter + ` AND r.relationship_id = ANY($5::text[])
  AND r.status NOT IN ('active', 'pending_evidence', 'needs_review')
ORDER BY r.relationship_id`

// byObjectIDs are the IDs of the live relationships a read narrowed by object (KeysLockParams.
// ByObject) takes: every live relationship of the keys read whole ($2, $3, $4: subject, predicate,
// scope); of the narrowed keys ($5, $6, $7), the live ones about a listed object (entities: $8, $9,
// $10, $11 as subject, predicate, scope, entity; values: $12 … $15 likewise), the held ones and the
// live ones about a held one's object, and the live ones among $16 (named by ID); the adopters an
// object names are left out ($17–$20 for the entities, $21–$24 for the values: fragment, caller,
// author and polarity, notAdopter). Each branch probes
// relationships_conflict_key_live_object (migration 24) by key, status and object — the statuses
// joined as rows, so that the status column is an equality of the probe under any generic plan, and
// listed, so that the partial index applies — and
// a key's relationships about other objects are never read; the rows are then reached by primary
// key (decision 123).
const byObjectIDs = `ARRAY(
    SELECT w.relationship_id FROM unnest($2::text[], $3::text[], $4::text[]) AS k(subject, predicate, scope)
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (SELECT w.relationship_id FROM {schema}.relationships w
        WHERE w.team_id = $1 AND w.subject_entity_id = k.subject AND w.predicate_key = k.predicate AND w.scope = k.scope
          AND w.status = st.status AND w.status IN ('active', 'pending_evidence', 'needs_review') OFFSET 0) w
  UNION
    SELECT o.relationship_id FROM unnest($8::text[], $9::text[], $10::text[], $11::text[], $17::text[], $18::text[], $19::text[],
        $20::text[]) AS k(subject, predicate, scope, entity, fragment, caller, author, polarity)
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    JOIN {schema}.relationships o ON o.team_id = $1 AND o.subject_entity_id = k.subject AND o.predicate_key = k.predicate
     AND o.scope = k.scope AND o.status = st.status AND o.status IN ('active', 'pending_evidence', 'needs_review') AND o.object_entity_id = k.entity
    WHERE ` + notAdopter + `
  UNION
    SELECT o.relationship_id FROM unnest($12::text[], $13::text[], $14::text[], $15::text[], $21::text[], $22::text[], $23::text[],
        $24::text[]) AS k(subject, predicate, scope, value, fragment, caller, author, polarity)
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    JOIN {schema}.relationships o ON o.team_id = $1 AND o.subject_entity_id = k.subject AND o.predicate_key = k.predicate
     AND o.scope = k.scope AND o.status = st.status AND o.status IN ('active', 'pending_evidence', 'needs_review') AND o.object_entity_id IS NULL AND o.object_value_id = k.value
    WHERE ` + notAdopter + `
  UNION
    SELECT t.relationship_id FROM unnest($5::text[], $6::text[], $7::text[]) AS k(subject, predicate, scope)
    CROSS JOIN LATERAL (` + heldObjects + `) t
  UNION
    SELECT n.relationship_id FROM {schema}.relationships n
    WHERE n.team_id = $1 AND n.relationship_id = ANY($16::text[]) AND n.status IN ('active', 'pending_evidence', 'needs_review')
      AND (n.subject_entity_id, n.predicate_key, n.scope) IN (SELECT * FROM unnest($5::text[], $6::text[], $7::text[])))`

// heldObjects lists the live relationships of key k (subject, predicate, scope) about the object of
// one of its held (needs_review) relationships: the held ones probed along
// relationships_conflict_key_live_object by status, then, per held one, its object's live
// relationships by status and object — an entity's or a value's, each an equality of the index —
// so a key's relationships about other objects are never scanned.
const heldObjects = `SELECT t.relationship_id
    FROM (SELECT h.object_entity_id, h.object_value_id FROM {schema}.relationships h
          WHERE h.team_id = $1 AND h.subject_entity_id = k.subject AND h.predicate_key = k.predicate AND h.scope = k.scope
            AND h.status = 'needs_review' AND h.status IN ('active', 'pending_evidence', 'needs_review') OFFSET 0) h
    CROSS JOIN unnest('{active,pending_evidence,needs_review}'::text[]) AS st(status)
    CROSS JOIN LATERAL (
        SELECT t.relationship_id FROM {schema}.relationships t
        WHERE h.object_entity_id IS NOT NULL AND t.team_id = $1 AND t.subject_entity_id = k.subject AND t.predicate_key = k.predicate
          AND t.scope = k.scope AND t.status = st.status AND t.status IN ('active', 'pending_evidence', 'needs_review')
          AND t.object_entity_id = h.object_entity_id
      UNION ALL
        SELECT t.relationship_id FROM {schema}.relationships t
        WHERE h.object_entity_id IS NULL AND t.team_id = $1 AND t.subject_entity_id = k.subject AND t.predicate_key = k.predicate
          AND t.scope = k.scope AND t.status = st.status AND t.status IN ('active', 'pending_evidence', 'needs_review')
          AND t.object_entity_id IS NULL AND t.object_value_id = h.object_value_id) t`

// notAdopter keeps a relationship o about an object k of byObjectIDs unless k names adopters to
// leave out (KeyObject.Adopters: k.fragment not empty) and o is one of them: another owner's than the
// caller's and the fragment author's, of the polarity named, supported by the fragment.
const notAdopter = `(k.fragment = '' OR o.owner_profile_id IN (k.caller, k.author) OR o.polarity <> k.polarity
       OR NOT EXISTS (SELECT 1 FROM {schema}.support_links s
                      WHERE s.team_id = $1 AND s.relationship_id = o.relationship_id AND s.fragment_id = k.fragment))`

// keyObjectRelationshipsSQL and keyObjectSupportsSQL are KeysLock's reads narrowed by object.
const keyObjectRelationshipsSQL = `-- name: KeyObjectRelationshipsLock
SELECT ` + lockedRelationships + `
WHERE r.team_id = $1 AND r.relationship_id = ANY(` + byObjectIDs + `)` + liveFilter + `
ORDER BY r.relationship_id
FOR UPDATE OF r`

const keyObjectSupportsSQL = `-- name: KeyObjectSupports
SELECT ` + relationshipSupports + `
WHERE r.team_id = $1 AND r.relationship_id = ANY(` + byObjectIDs + `)` + liveFilter + `
ORDER BY s.relationship_id, s.support_id`

// keyRelationshipsReadSQL and keyLiveRelationshipsReadSQL are KeysRead's: the same rows, unlocked.
const keyRelationshipsReadSQL = `-- name: KeyRelationshipsRead
SELECT ` + lockedRelationships + `
WHERE ` + keyFilter + `
ORDER BY r.relationship_id`

const keyLiveRelationshipsReadSQL = `-- name: KeyLiveRelationshipsRead
SELECT ` + lockedRelationships + `
WHERE ` + keyFilter + liveFilter + `
ORDER BY r.relationship_id`

// supportColumns are a support link's columns as scanKeySupport reads them, with the retirement
// of its fragment (retiredJoin), if any.
const supportColumns = `s.relationship_id, s.fragment_id, COALESCE(fr.retirement_id, ''), s.source_group, s.content_sha256,
       s.authority, s.author_profile_id, v.confirmed_valid_from, s.observation_id, s.verification_id, s.span_start, s.span_end`

// retiredJoin joins a support link (s) to the retirement of its fragment (fr), if any.
const retiredJoin = `LEFT JOIN {schema}.fragment_retirements fr ON fr.team_id = $1 AND fr.fragment_id = s.fragment_id`

const keySupportsSQL = `-- name: KeySupports
SELECT ` + relationshipSupports + `
WHERE ` + keyFilter + `
ORDER BY s.relationship_id, s.support_id`

// keyLiveSupportsSQL is keySupportsSQL for the live relationships only.
const keyLiveSupportsSQL = `-- name: KeyLiveSupports
SELECT ` + relationshipSupports + `
WHERE ` + keyFilter + liveFilter + `
ORDER BY s.relationship_id, s.support_id`

// caseFilter selects the live cases of the keys and the cases named in $2. Each half is an index
// lookup (the primary key; conflict_cases_one_live), and the cases are reached by primary key from
// the array of their IDs, so the cost never grows with the team's cases: a semi-join could be
// planned, in a generic plan made while the team was small, as a scan of every case the team ever
// had (decision 123).
const caseFilter = `c.team_id = $1 AND c.conflict_id = ANY(ARRAY(
    SELECT n.conflict_id FROM {schema}.conflict_cases n WHERE n.team_id = $1 AND n.conflict_id = ANY($2::text[])
  UNION
    SELECT l.conflict_id FROM {schema}.conflict_cases l
    WHERE l.team_id = $1 AND l.status IN ('open', 'overdue')
      AND l.subject_entity_id = ANY($3::text[]) AND l.predicate_key = ANY($4::text[]) AND l.scope = ANY($5::text[])
      AND (l.subject_entity_id, l.predicate_key, l.scope) IN (SELECT * FROM unnest($3::text[], $4::text[], $5::text[]))))`

// caseColumns are a case row's columns as keyCaseReader.readCases scans them.
const caseColumns = `c.conflict_id, c.kind, c.subject_entity_id, c.predicate_key, c.scope, c.status, c.version, c.opened_at,
       c.review_due_at, c.next_review_at, c.policy_version, c.opened_by_profile_id, c.resolved_at, c.effective_at,
       COALESCE(c.effective_time_basis, ''), COALESCE(c.preferred_position_id, ''), COALESCE(c.claim_token, '')`

const keyCasesSQL = `-- name: KeyCasesLock
SELECT ` + caseColumns + `
FROM {schema}.conflict_cases c WHERE ` + caseFilter + `
ORDER BY c.conflict_id
FOR UPDATE`

// keyCasesReadSQL is KeysRead's: the same cases, unlocked.
const keyCasesReadSQL = `-- name: KeyCasesRead
SELECT ` + caseColumns + `
FROM {schema}.conflict_cases c WHERE ` + caseFilter + `
ORDER BY c.conflict_id`

const keyCasePositionsSQL = `-- name: KeyCasePositions
SELECT p.conflict_id, p.position_id, COALESCE(p.object_entity_id, ''), COALESCE(p.object_value_id, ''), p.polarity
FROM {schema}.conflict_cases c JOIN {schema}.conflict_positions p ON p.team_id = $1 AND p.conflict_id = c.conflict_id
WHERE ` + caseFilter + `
ORDER BY p.conflict_id, p.position_id`

const keyCaseMembersSQL = `-- name: KeyCaseMembers
SELECT m.conflict_id, m.position_id, m.relationship_id, m.relationship_version, m.owner_profile_id
FROM {schema}.conflict_cases c JOIN {schema}.conflict_position_members m ON m.team_id = $1 AND m.conflict_id = c.conflict_id
WHERE ` + caseFilter + ` AND m.removed_version IS NULL
ORDER BY m.conflict_id, m.relationship_id`

// memberFilter selects the relationships that are current members of the cases caseFilter selects
// and do not lie on the keys ($3, $4, $5): an identity_correction case's members.
const memberFilter = `r.team_id = $1 AND r.relationship_id IN (
    SELECT m.relationship_id FROM {schema}.conflict_cases c
    JOIN {schema}.conflict_position_members m ON m.team_id = $1 AND m.conflict_id = c.conflict_id
    WHERE ` + caseFilter + ` AND m.removed_version IS NULL)
  AND (r.subject_entity_id, r.predicate_key, r.scope) NOT IN (SELECT * FROM unnest($3::text[], $4::text[], $5::text[]))`

const memberRelationshipsSQL = `-- name: CaseMemberRelationshipsLock
SELECT ` + lockedRelationships + `
WHERE ` + memberFilter + `
ORDER BY r.relationship_id
FOR UPDATE OF r`

const memberSupportsSQL = `-- name: CaseMemberSupports
SELECT ` + relationshipSupports + `
WHERE ` + memberFilter + `
ORDER BY s.relationship_id, s.support_id`

// KeysLock takes the conflict-key locks, then locks and reads every owner's relationships of the keys
// and the keys' live cases (and the named ones).
func (t *tx) KeysLock(ctx context.Context, p store.KeysLockParams) (store.KeysLocked, error) {
	var out store.KeysLocked
	b, err := t.batch(p.Team)
	if err != nil {
		return out, err
	}
	queueKeyLocks(b, p.Team, p.Keys, p.MaxLocks)
	queueKeyReads(b, p, &out, true)
	if err := t.s.sendOn(ctx, t.conn, b); err != nil {
		return store.KeysLocked{}, translate(err)
	}
	return out, nil
}

// KeysRead reads what KeysLock would, unlocked, in a read-only transaction of one round trip.
func (s *Store) KeysRead(ctx context.Context, p store.KeysLockParams) (store.KeysLocked, error) {
	var out store.KeysLocked
	if p.Members || p.Predicates {
		return out, fmt.Errorf("%w: KeysRead reads neither members on other keys nor predicates", store.ErrInternal)
	}
	b := &pgx.Batch{}
	queueKeyReads(b, p, &out, false)
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.KeysLocked{}, err
	}
	return out, nil
}

// queueKeyLocks queues the conflict-key advisory locks of keys (sorted; past maxLocks the team's key
// lock, exclusive).
func queueKeyLocks(b *pgx.Batch, team identity.TeamID, keys []conflict.Key, maxLocks int) {
	var locks lockSet
	locks.class("conflict-key", team, keyLockIDs(keys), maxLocks)
	if len(locks.ids) > 0 {
		b.Queue(lockManySQL, locks.ids, locks.shared)
	}
}

// queueKeyReads queues the reads of KeysLock (lock) or KeysRead into out: the keys' relationships and
// their supports, the predicates when asked for, the keys' live cases and the named ones with their
// positions and current members, and the cases' members on other keys when asked for.
func queueKeyReads(b *pgx.Batch, p store.KeysLockParams, out *store.KeysLocked, lock bool) {
	k := newKeyArrays(p)
	out.ObjectNames = map[relationship.ID]string{}
	relsSQL, supsSQL, casesSQL := keyRelationshipsSQL, keySupportsSQL, keyCasesSQL
	relsArgs := []any{p.Team, k.subjects, k.preds, k.scopes}
	switch {
	case p.LiveOnly && lock:
		// Through byObjectIDs, with or without ByObject (then every key is read whole): its probes
		// are bound by status to relationships_conflict_key_live_object under any generic plan.
		relsSQL, supsSQL, relsArgs = keyObjectRelationshipsSQL, keyObjectSupportsSQL, byObjectArgs(p)
	case p.LiveOnly:
		relsSQL, supsSQL, casesSQL = keyLiveRelationshipsReadSQL, keyLiveSupportsSQL, keyCasesReadSQL
	case !lock:
		relsSQL, casesSQL = keyRelationshipsReadSQL, keyCasesReadSQL
	}
	supsArgs := relsArgs
	b.Queue(relsSQL, relsArgs...).Query(func(rows pgx.Rows) error {
		return readKeyRelationships(rows, out)
	})
	if p.LiveOnly && len(p.Named) > 0 {
		named := make([]string, len(p.Named))
		for i, id := range p.Named {
			named[i] = string(id)
		}
		b.Queue(keyNamedClosedSQL, p.Team, k.subjects, k.preds, k.scopes, named).Query(func(rows pgx.Rows) error {
			return readKeyRelationships(rows, out)
		})
	}
	b.Queue(supsSQL, supsArgs...).Query(func(rows pgx.Rows) (err error) {
		out.Supports, err = pgx.CollectRows(rows, scanKeySupport)
		return err
	})
	b.Queue(keyItemsSQL, p.Team, k.subjects, k.preds, k.scopes).Query(func(rows pgx.Rows) (err error) {
		out.Items, err = pgx.CollectRows(rows, scanKeyItem)
		return err
	})
	out.SubjectNames = map[identity.EntityID]string{}
	b.Queue(keySubjectNamesSQL, p.Team, k.subjects).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				return err
			}
			out.SubjectNames[identity.EntityID(id)] = name
		}
		return rows.Err()
	})
	if p.Predicates {
		b.Queue(predicateListSQL, p.Team).Query(func(rows pgx.Rows) error {
			preds, err := pgx.CollectRows(rows, scanPredicate)
			out.Predicates = preds
			return err
		})
	}
	// The keys' live cases and the named ones (locked), with their positions and current members.
	c := &keyCaseReader{out: out, team: p.Team, byID: map[conflict.ID]int{},
		positions: map[conflict.PositionID]conflict.PositionKey{}}
	b.Queue(casesSQL, p.Team, k.caseIDs, k.subjects, k.preds, k.scopes).Query(c.readCases)
	b.Queue(keyCasePositionsSQL, p.Team, k.caseIDs, k.subjects, k.preds, k.scopes).Query(c.readPositions)
	b.Queue(keyCaseMembersSQL, p.Team, k.caseIDs, k.subjects, k.preds, k.scopes).Query(c.readMembers)
	// The cases' members on other keys, locked after the case rows, and their supports.
	if p.Members {
		var members store.KeysLocked
		members.ObjectNames = out.ObjectNames
		b.Queue(memberRelationshipsSQL, p.Team, k.caseIDs, k.subjects, k.preds, k.scopes).Query(func(rows pgx.Rows) error {
			err := readKeyRelationships(rows, &members)
			out.Members = members.Relationships
			return err
		})
		b.Queue(memberSupportsSQL, p.Team, k.caseIDs, k.subjects, k.preds, k.scopes).Query(func(rows pgx.Rows) error {
			sups, err := pgx.CollectRows(rows, scanKeySupport)
			out.Supports = append(out.Supports, sups...)
			return err
		})
	}
}

// byObjectArgs are the arguments of byObjectIDs for p: the keys ByObject does not name, those it
// names, their entity and value objects, and the named relationships.
func byObjectArgs(p store.KeysLockParams) []any {
	narrowed := map[conflict.Key]bool{}
	var keys, entities, values store.KeysLockParams
	var entityIDs, valueIDs []string
	for _, o := range p.ByObject {
		if !narrowed[o.Key] {
			narrowed[o.Key] = true
			keys.Keys = append(keys.Keys, o.Key)
		}
		if o.Object.EntityID != "" {
			entities.Keys, entityIDs = append(entities.Keys, o.Key), append(entityIDs, string(o.Object.EntityID))
		} else {
			values.Keys, valueIDs = append(values.Keys, o.Key), append(valueIDs, o.Object.ValueID)
		}
	}
	var wide store.KeysLockParams
	for _, k := range p.Keys {
		if !narrowed[k] {
			wide.Keys = append(wide.Keys, k)
		}
	}
	w, n, e, v := newKeyArrays(wide), newKeyArrays(keys), newKeyArrays(entities), newKeyArrays(values)
	named := make([]string, len(p.Named))
	for i, id := range p.Named {
		named[i] = string(id)
	}
	var ea, va adopterArrays
	for _, o := range p.ByObject {
		if o.Object.EntityID != "" {
			ea.add(o.Adopters)
		} else {
			va.add(o.Adopters)
		}
	}
	return []any{p.Team, w.subjects, w.preds, w.scopes, n.subjects, n.preds, n.scopes, e.subjects, e.preds, e.scopes, entityIDs,
		v.subjects, v.preds, v.scopes, valueIDs, named, ea.fragments, ea.callers, ea.authors, ea.polarities,
		va.fragments, va.callers, va.authors, va.polarities}
}

// adopterArrays are byObjectIDs' arrays of the adopters each object leaves out ("" for none).
type adopterArrays struct {
	fragments, callers, authors, polarities []string
}

func (a *adopterArrays) add(ad *store.KeyAdopters) {
	var x store.KeyAdopters
	if ad != nil {
		x = *ad
	}
	a.fragments, a.callers = append(a.fragments, string(x.Fragment)), append(a.callers, string(x.Caller))
	a.authors, a.polarities = append(a.authors, string(x.Author)), append(a.polarities, string(x.Polarity))
}

// keyArrays are KeysLock's keys as parallel arrays of subject, predicate and scope (keyFilter's $2,
// $3, $4), and the named cases' IDs.
type keyArrays struct {
	subjects, preds, scopes, caseIDs []string
}

// newKeyArrays returns p's keys and cases as KeysLock's statements take them.
func newKeyArrays(p store.KeysLockParams) keyArrays {
	k := keyArrays{subjects: make([]string, len(p.Keys)), preds: make([]string, len(p.Keys)),
		scopes: make([]string, len(p.Keys)), caseIDs: make([]string, len(p.Cases))}
	for i, key := range p.Keys {
		k.subjects[i], k.preds[i], k.scopes[i] = string(key.Subject), key.PredicateKey, key.Scope
	}
	for i, id := range p.Cases {
		k.caseIDs[i] = string(id)
	}
	return k
}

// readKeyRelationships reads the rows of keyRelationshipsSQL into out's relationships and their
// object names.
func readKeyRelationships(rows pgx.Rows, out *store.KeysLocked) error {
	for rows.Next() {
		var objName string
		r, err := scanRelationship(rows, &objName)
		if err != nil {
			return err
		}
		out.Relationships = append(out.Relationships, r)
		out.ObjectNames[r.ID] = objName
	}
	return rows.Err()
}

// scanRelationship scans relationshipColumns, then the row's further columns into extra.
func scanRelationship(row pgx.Row, extra ...any) (relationship.Relationship, error) {
	var r relationship.Relationship
	var objEntity, objValue *string
	var pol, status, tier string
	dst := append([]any{&r.ID, &r.Owner, &r.Subject, &r.PredicateKey, &r.PredicateVersion, &objEntity, &objValue,
		&pol, &r.Scope, &r.Validity.From, &r.Validity.To, &status, &tier, &r.Version}, extra...)
	if err := row.Scan(dst...); err != nil {
		return r, err
	}
	if objEntity != nil {
		r.Object.EntityID = identity.EntityID(*objEntity)
	}
	if objValue != nil {
		r.Object.ValueID = *objValue
	}
	r.Polarity, r.Status, r.Tier = relationship.Polarity(pol), relationship.Status(status), relationship.Tier(tier)
	return r, nil
}

// scanKeyItem scans a row of keyItemsSQL.
func scanKeyItem(row pgx.CollectableRow) (store.ReviewItemRow, error) {
	var it store.ReviewItemRow
	err := row.Scan(&it.ID, &it.IngestID, &it.PlacementItemID, &it.Kind, &it.Profile, &it.RelationshipID, &it.Related,
		&it.RelationshipVersion, &it.RelatedVersions, &it.ObservationID, &it.Choices, &it.CreatedAt)
	return it, err
}

// scanKeySupport scans a row of keySupportsSQL.
func scanKeySupport(row pgx.CollectableRow) (store.SupportRow, error) {
	var s store.SupportRow
	var auth string
	err := row.Scan(&s.RelationshipID, &s.FragmentID, &s.Retirement, &s.Group, &s.ContentHash, &auth, &s.Author, &s.ConfirmedFrom,
		&s.ObservationID, &s.VerificationID, &s.Start, &s.End)
	s.Authority = evidence.Authority(auth)
	return s, err
}

// keyCaseReader reads KeysLock's cases, then their positions and members into them: the three
// reads run in this order in one batch, each after the one before.
type keyCaseReader struct {
	out  *store.KeysLocked
	team identity.TeamID
	// byID indexes out.Cases by case ID; positions holds the key of every position read.
	byID      map[conflict.ID]int
	positions map[conflict.PositionID]conflict.PositionKey
}

// readCases reads the rows of keyCasesSQL into out.Cases.
func (c *keyCaseReader) readCases(rows pgx.Rows) error {
	for rows.Next() {
		cr := store.CaseRow{Team: c.team, Positions: map[conflict.PositionKey]conflict.PositionID{}}
		var kind, status string
		if err := rows.Scan(&cr.ID, &kind, &cr.Key.Subject, &cr.Key.PredicateKey, &cr.Key.Scope, &status, &cr.Version,
			&cr.OpenedAt, &cr.ReviewDueAt, &cr.NextReviewAt, &cr.PolicyVersion, &cr.OpenedBy, &cr.ResolvedAt, &cr.EffectiveAt,
			&cr.TimeBasis, &cr.Preferred, &cr.ClaimToken); err != nil {
			return err
		}
		cr.Key.Team, cr.Kind, cr.Status = c.team, conflict.Kind(kind), conflict.Status(status)
		c.byID[cr.ID] = len(c.out.Cases)
		c.out.Cases = append(c.out.Cases, cr)
	}
	return rows.Err()
}

// readPositions reads the rows of keyCasePositionsSQL into their cases' positions.
func (c *keyCaseReader) readPositions(rows pgx.Rows) error {
	for rows.Next() {
		var caseID conflict.ID
		var id conflict.PositionID
		var entity, value, pol string
		if err := rows.Scan(&caseID, &id, &entity, &value, &pol); err != nil {
			return err
		}
		k := conflict.PositionKey{Object: relationship.Object{EntityID: identity.EntityID(entity), ValueID: value},
			Polarity: relationship.Polarity(pol)}
		c.positions[id] = k
		if i, ok := c.byID[caseID]; ok {
			c.out.Cases[i].Positions[k] = id
		}
	}
	return rows.Err()
}

// readMembers reads the rows of keyCaseMembersSQL into their cases' current members.
func (c *keyCaseReader) readMembers(rows pgx.Rows) error {
	for rows.Next() {
		var caseID conflict.ID
		var pos conflict.PositionID
		var m conflict.MemberRef
		if err := rows.Scan(&caseID, &pos, &m.Relationship, &m.Version, &m.Owner); err != nil {
			return err
		}
		m.Position = c.positions[pos]
		if i, ok := c.byID[caseID]; ok {
			c.out.Cases[i].Members = append(c.out.Cases[i].Members, m)
		}
	}
	return rows.Err()
}

// The write set's statements, one per row, sent as one batch.
const (
	entityInsertSQL = `-- name: EntityInsert
INSERT INTO {schema}.entities (team_id, entity_id, entity_kind, identity_context, created_by, ingest_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	entityNameInsertSQL = `-- name: EntityNameInsert
INSERT INTO {schema}.entity_names (team_id, entity_id, name, normalized_name, skeleton, name_kind, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`
	valueInsertSQL = `-- name: ValueInsert
INSERT INTO {schema}.literal_values (team_id, value_id, value_type, value_text, created_at)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`
	// A fragment and its content are two INSERT … VALUES: an INSERT … SELECT from a CTE is executed
	// by Citus as a COPY into the shard, which row-level security refuses.
	fragmentInsertSQL = `-- name: FragmentInsert
INSERT INTO {schema}.evidence_fragments (team_id, fragment_id, ingest_id, evidence_index, author_profile_id, source_type,
    authority, source_group, source_key, source_revision, content_sha256, content_length, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, octet_length($12::text), $13)`
	fragmentContentInsertSQL = `-- name: FragmentContentInsert
INSERT INTO {schema}.fragment_contents (team_id, fragment_id, content) VALUES ($1, $2, $3)`
	observationInsertSQL = `-- name: ObservationInsert
INSERT INTO {schema}.observations (team_id, observation_id, ingest_id, profile_id, proposal_id, subject_ref, subject_name,
    predicate_phrase, predicate_key, predicate_version, object_ref, object_name, object_value, polarity, modality,
    scope, valid_from, valid_to, citations, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), NULLIF($10, 0), $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`
	verificationInsertSQL = `-- name: VerificationInsert
INSERT INTO {schema}.verification_events (team_id, verification_id, observation_id, verifier, verdict, confidence, rationale,
    confirmed_valid_from, support_granted, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	resolutionInsertSQL = `-- name: ResolutionInsert
INSERT INTO {schema}.entity_resolution_events (team_id, resolution_id, observation_id, mention_ref, mention_name, entity_kind,
    entity_id, decision, candidate_ids, profile_id, ingest_id, created_at, identity_context, distinct_from_ids)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8, $9, $10, $11, $12, COALESCE($13::jsonb, '{}'), COALESCE($14::text[], '{}'))`
	relationshipInsertSQL = `-- name: RelationshipInsert
INSERT INTO {schema}.relationships (team_id, relationship_id, owner_profile_id, subject_entity_id, predicate_key,
    predicate_version, object_entity_id, object_value_id, polarity, scope, valid_from, valid_to, status, tier,
    version, observation_id, ingest_id, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18)`
	relationshipUpdateSQL = `-- name: RelationshipUpdate
WITH u AS (
    UPDATE {schema}.relationships SET status = $4, tier = $5, valid_to = $6, version = version + 1, updated_at = $7
    WHERE team_id = $1 AND relationship_id = $2 AND version = $3
    RETURNING 1)
SELECT {schema}.densemem_expect_rows(count(*), 1, 'relationship ' || $2::text || ' at version ' || $3::text) FROM u`
	retirementInsertSQL = `-- name: RetirementInsert
INSERT INTO {schema}.fragment_retirements (team_id, retirement_id, fragment_id, cause, replaced_by_fragment_id, actor_kind,
    actor_profile_id, reason, ingest_id, created_at)
VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, NULLIF($7, ''), $8, $9, $10)`
	supportInsertSQL = `-- name: SupportInsert
INSERT INTO {schema}.support_links (team_id, support_id, relationship_id, fragment_id, observation_id, verification_id,
    span_start, span_end, source_group, content_sha256, authority, author_profile_id, profile_id, ingest_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	transitionInsertSQL = `-- name: TransitionInsert
INSERT INTO {schema}.relationship_transitions (team_id, transition_id, relationship_id, from_status, to_status, from_tier,
    to_tier, from_valid_to, to_valid_to, from_version, to_version, reason, actor_kind, actor_profile_id,
    related_relationship_id, ingest_id, idempotency_key, created_at)
VALUES ($1, $2, $3, NULLIF($4, ''), $5, NULLIF($6, ''), $7, $8, $9, NULLIF($10, 0), $11, $12, $13, NULLIF($14, ''),
    NULLIF($15, ''), $16, $17, $18)`
	crossRefInsertSQL = `-- name: CrossReferenceInsert
INSERT INTO {schema}.relationship_cross_references (team_id, xref_id, kind, from_relationship_id, from_version,
    to_relationship_id, to_version, author_profile_id, verification_id, ingest_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), $10, $11)`
	caseInsertSQL = `-- name: CaseInsert
INSERT INTO {schema}.conflict_cases (team_id, conflict_id, kind, subject_entity_id, predicate_key, scope, status, version,
    opened_at, review_due_at, next_review_at, policy_version, opened_by_profile_id, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $9)`
	positionInsertSQL = `-- name: PositionInsert
INSERT INTO {schema}.conflict_positions (team_id, position_id, conflict_id, object_entity_id, object_value_id, polarity, created_at)
VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), $6, $7)`
	caseUpdateSQL = `-- name: CaseUpdate
WITH u AS (
    UPDATE {schema}.conflict_cases SET status = $4, version = $5, updated_at = $6
    WHERE team_id = $1 AND conflict_id = $2 AND version = $3
    RETURNING 1)
SELECT {schema}.densemem_expect_rows(count(*), 1, 'conflict case ' || $2::text || ' at version ' || $3::text) FROM u`
	memberEndSQL = `-- name: MemberEnd
UPDATE {schema}.conflict_position_members SET removed_version = $4
WHERE team_id = $1 AND conflict_id = $2 AND relationship_id = $3 AND removed_version IS NULL`
	memberInsertSQL = `-- name: MemberInsert
INSERT INTO {schema}.conflict_position_members (team_id, conflict_id, position_id, relationship_id, relationship_version,
    owner_profile_id, added_version)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	caseEventInsertSQL = `-- name: CaseEventInsert
INSERT INTO {schema}.conflict_events (team_id, event_id, conflict_id, case_version, prior_status, resulting_status, actor_kind,
    actor_profile_id, reason_code, policy_version, time_basis, referenced, positions, ingest_id, created_at)
VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, $7, NULLIF($8, ''), $9, $10, NULLIF($11, ''), $12, $13, $14, $15)`
	reviewItemInsertSQL = `-- name: ReviewItemInsert
INSERT INTO {schema}.review_items (team_id, review_id, ingest_id, placement_item_id, kind, status, profile_id, observation_id,
    relationship_id, related_ids, choices, relationship_version, related_versions, created_at)
VALUES ($1, $2, $3, $4, $5, 'open', $6, $7, NULLIF($8, ''), $9, $10, $11, $12, $13)`
	idempotencyInsertSQL = `-- name: IdempotencyInsert
INSERT INTO {schema}.idempotency_records (team_id, profile_id, idempotency_key, operation, request_hash, ingest_id, result, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
)

// WriteSetApply writes every row of ws in one round trip, in dependency order.
func (t *tx) WriteSetApply(ctx context.Context, ws store.WriteSet) error {
	b, err := t.batch("")
	if err != nil {
		return err
	}
	return t.applyOn(ctx, b, &ws)
}

// fenceSQL fails (densemem_expect_rows: SQLSTATE DM003, ErrStaleVersion) unless what an optimistic
// plan read before its transaction still holds, read under the transaction's intake locks: no
// idempotency record under the key ($3); the profile ($2) with the status and scopes read ($4, $5),
// held FOR SHARE as IntakeLock holds it; and no entity name matching the kinds ($6) and skeletons
// ($7), as entitiesByNameSQL matches them, other than the (entity, name) pairs read ($8, $9).
// Entities and names are append-only, so a name the read saw cannot have changed. The names are
// found first (m, materialized as in entitiesByNameSQL): one probe of entity_names_skeleton per
// skeleton under the generic plan, then one of the entities' primary key per match, so the fence
// costs the matches, not the team's names.
const fenceSQL = `-- name: WriteFence
WITH m AS MATERIALIZED (
    SELECT n.entity_id, n.name FROM {schema}.entity_names n WHERE n.team_id = $1 AND n.skeleton = ANY($7::text[]))
SELECT {schema}.densemem_expect_rows((SELECT count(*) FROM {schema}.idempotency_records i
        WHERE i.team_id = $1 AND i.profile_id = $2 AND i.idempotency_key = $3), 0, 'fence: idempotency key ' || $3::text),
    {schema}.densemem_expect_rows((SELECT count(*) FROM (SELECT 1 FROM {schema}.profiles p
        WHERE p.team_id = $1 AND p.profile_id = $2 AND p.status = $4 AND p.scopes = $5::text[] FOR SHARE) x),
        1, 'fence: profile ' || $2::text),
    {schema}.densemem_expect_rows((SELECT count(*) FROM m
        WHERE (m.entity_id, m.name) NOT IN (SELECT * FROM unnest($8::text[], $9::text[]))
          AND EXISTS (SELECT 1 FROM {schema}.entities e WHERE e.team_id = $1 AND e.entity_id = m.entity_id
                      AND e.entity_kind = ANY($6::text[]))), 0, 'fence: entity names')`

// WriteSetApplyFenced starts the transaction, takes IntakeLock's locks of f, checks f's fence under
// them and writes ws, COMMIT included, in one round trip.
func (t *tx) WriteSetApplyFenced(ctx context.Context, f store.WriteFence, ws store.WriteSet) error {
	b, err := t.batch(f.Team)
	if err != nil {
		return err
	}
	var locks lockSet
	locks.add(idempotencyLockID(f.Team, f.Profile, f.IdempotencyKey), false)
	locks.class("entity-name", f.Team, nameLockIDs(f.Team, f.NameLocks), f.MaxLocks)
	b.Queue(lockManySQL, locks.ids, locks.shared)
	scopes := make([]string, len(f.ProfileScopes))
	for i, sc := range f.ProfileScopes {
		scopes[i] = string(sc)
	}
	kinds, skeletons := nameArgs(f.Names)
	var ids, names []string
	for _, e := range f.Candidates {
		for _, n := range e.Names {
			ids, names = append(ids, string(e.ID)), append(names, n.Name)
		}
	}
	b.Queue(fenceSQL, f.Team, f.Profile, f.IdempotencyKey, string(f.ProfileStatus), scopes, kinds, skeletons, ids, names)
	if f.Keys != nil {
		queueKeysFence(b, f.Keys)
	}
	return t.applyOn(ctx, b, &ws)
}

// applyOn queues every row of ws on b, in dependency order, and sends b as the transaction's write
// batch.
func (t *tx) applyOn(ctx context.Context, b *pgx.Batch, ws *store.WriteSet) error {
	w := writeBatch{ctx: ctx, b: b, armed: failpoint.Armed(ctx)}
	// 1. Entities, their names and literal values.
	if err := w.queueEntities(ws); err != nil {
		return err
	}
	// 2. Evidence: fragments, observations, verifications and resolutions.
	w.queueEvidence(ws)
	// 3. Relationships: new ones, updates, supports, transitions and cross-references.
	w.queueRelationships(ws)
	// 4. Conflict cases: cases, positions, updates, reviews, members and events.
	w.queueCases(ws)
	// 5. Review items, the decisions on them and their closes, and the idempotency
	// record.
	w.queueRecords(ws)
	// 6. COMMIT, when it travels with the write batch, and the round trip.
	return t.sendWrites(ctx, b, w.armed)
}

// writeBatch is WriteSetApply's batch: the rows' statements in dependency order, with a failpoint
// check after each table when failpoints are armed on ctx.
type writeBatch struct {
	ctx   context.Context
	b     *pgx.Batch
	armed bool
}

// step queues a failpoint check that runs once the rows of one table have been written.
func (w writeBatch) step(name string, n int) {
	if w.armed && n > 0 {
		w.b.Queue("-- name: Failpoint\nSELECT 1").Exec(func(pgconn.CommandTag) error {
			return failpoint.Check(w.ctx, "writeset.after:"+name)
		})
	}
}

// queueEntities queues the new entities, their names and the literal values.
func (w writeBatch) queueEntities(ws *store.WriteSet) error {
	b := w.b
	for _, e := range ws.Entities {
		ctxJSON, err := json.Marshal(nonNilMap(e.Context))
		if err != nil {
			return err
		}
		b.Queue(entityInsertSQL, e.Team, e.ID, e.Kind, ctxJSON, e.CreatedBy, e.IngestID, e.CreatedAt)
	}
	w.step("entities", len(ws.Entities))
	for _, n := range ws.EntityNames {
		b.Queue(entityNameInsertSQL, n.Team, n.EntityID, n.Name, n.Normalized, n.Skeleton, n.Kind, n.CreatedAt)
	}
	for _, v := range ws.Values {
		b.Queue(valueInsertSQL, v.Team, v.ID, v.Type, v.Text, v.CreatedAt)
	}
	return nil
}

// queueEvidence queues the fragments, the retirements of fragments, observations, verification events and resolution events.
func (w writeBatch) queueEvidence(ws *store.WriteSet) {
	b := w.b
	for _, f := range ws.Fragments {
		b.Queue(fragmentInsertSQL, f.Team, f.ID, f.IngestID, f.EvidenceIndex, f.Author, f.SourceType, f.Authority,
			f.SourceGroup, f.SourceKey, f.Revision, f.ContentHash, f.Content, f.CreatedAt)
		b.Queue(fragmentContentInsertSQL, f.Team, f.ID, f.Content)
	}
	w.step("fragments", len(ws.Fragments))
	for _, r := range ws.Retirements {
		b.Queue(retirementInsertSQL, r.Team, r.ID, r.FragmentID, r.Cause, r.ReplacedBy, r.ActorKind, r.ActorProfile,
			r.Reason, r.IngestID, r.CreatedAt)
	}
	w.step("retirements", len(ws.Retirements))
	for _, o := range ws.Observations {
		var value any
		if o.ObjectValue != nil {
			value = []byte(o.ObjectValue)
		}
		b.Queue(observationInsertSQL, o.Team, o.ID, o.IngestID, o.Profile, o.ProposalID, o.SubjectRef, o.SubjectName,
			o.PredicatePhrase, o.PredicateKey, o.PredicateVersion, o.ObjectRef, o.ObjectName, value, o.Polarity,
			o.Modality, o.Scope, o.ValidFrom, o.ValidTo, []byte(o.Citations), o.CreatedAt)
	}
	w.step("observations", len(ws.Observations))
	for _, v := range ws.Verifications {
		b.Queue(verificationInsertSQL, v.Team, v.ID, v.ObservationID, v.Verifier, v.Verdict, v.Confidence, v.Rationale,
			v.ConfirmedValidFrom, v.SupportGranted, v.CreatedAt)
	}
	for _, r := range ws.Resolutions {
		b.Queue(resolutionInsertSQL, r.Team, r.ID, r.ObservationID, r.MentionRef, r.MentionName, r.EntityKind,
			r.EntityID, r.Decision, idStrings(r.Candidates), r.Profile, r.IngestID, r.CreatedAt, contextJSON(r.Context),
			optionalEntityStrings(r.DistinctFrom))
	}
}

// queueRelationships queues the new relationships, the updates of existing ones, the support links,
// the transitions and the cross-references.
func (w writeBatch) queueRelationships(ws *store.WriteSet) {
	b := w.b
	for _, r := range ws.Relationships {
		rel := r.Relationship
		b.Queue(relationshipInsertSQL, r.Team, rel.ID, rel.Owner, rel.Subject, rel.PredicateKey, rel.PredicateVersion,
			rel.Object.EntityID, rel.Object.ValueID, rel.Polarity, rel.Scope, rel.Validity.From, rel.Validity.To,
			rel.Status, rel.Tier, rel.Version, r.ObservationID, r.IngestID, r.CreatedAt)
	}
	w.step("relationships", len(ws.Relationships))
	for _, u := range ws.Updates {
		b.Queue(relationshipUpdateSQL, u.Team, u.ID, u.ExpectVersion, u.Status, u.Tier, u.ValidTo, u.UpdatedAt)
	}
	w.step("updates", len(ws.Updates))
	for _, s := range ws.Supports {
		b.Queue(supportInsertSQL, s.Team, s.ID, s.RelationshipID, s.FragmentID, s.ObservationID, s.VerificationID,
			s.Start, s.End, s.SourceGroup, s.ContentHash, s.Authority, s.Author, s.Profile, s.IngestID, s.CreatedAt)
	}
	w.step("supports", len(ws.Supports))
	for _, tr := range ws.Transitions {
		b.Queue(transitionInsertSQL, tr.Team, tr.ID, tr.RelationshipID, tr.FromStatus, tr.ToStatus, tr.FromTier,
			tr.ToTier, tr.FromValidTo, tr.ToValidTo, tr.FromVersion, tr.ToVersion, tr.Reason, tr.ActorKind,
			tr.ActorProfile, tr.Related, tr.IngestID, tr.IdempotencyKey, tr.CreatedAt)
	}
	w.step("transitions", len(ws.Transitions))
	for _, x := range ws.CrossRefs {
		b.Queue(crossRefInsertSQL, x.Team, x.ID, x.Kind, x.From, x.FromVersion, x.To, x.ToVersion, x.Author,
			x.VerificationID, x.IngestID, x.CreatedAt)
	}
	w.step("cross_references", len(ws.CrossRefs))
}

// queueCases queues the new cases and positions, the case updates and reviews, the membership
// changes and the case events.
func (w writeBatch) queueCases(ws *store.WriteSet) {
	b := w.b
	for _, c := range ws.CaseInserts {
		b.Queue(caseInsertSQL, c.Team, c.ID, c.Kind, c.Key.Subject, c.Key.PredicateKey, c.Key.Scope, c.Status, c.Version,
			c.OpenedAt, c.ReviewDueAt, c.NextReviewAt, c.PolicyVersion, c.OpenedBy)
	}
	for _, p := range ws.Positions {
		b.Queue(positionInsertSQL, p.Team, p.ID, p.CaseID, p.Key.Object.EntityID, p.Key.Object.ValueID, p.Key.Polarity, p.CreatedAt)
	}
	for _, u := range ws.CaseUpdates {
		b.Queue(caseUpdateSQL, u.Team, u.ID, u.ExpectVersion, u.Status, u.Version, u.UpdatedAt)
	}
	for _, u := range ws.CaseReviews {
		b.Queue(caseReviewSQL, u.Team, u.ID, u.Token, u.ExpectVersion, u.Status, u.Version, u.NextReviewAt, u.ResolvedAt,
			u.EffectiveAt, u.TimeBasis, u.Preferred, dateOrNil(u.EscalatedDate), u.UpdatedAt)
	}
	for _, m := range ws.MemberEnds {
		b.Queue(memberEndSQL, m.Team, m.CaseID, m.Relationship, m.RemovedVersion)
	}
	for _, m := range ws.MemberAdds {
		b.Queue(memberInsertSQL, m.Team, m.CaseID, m.Position, m.Relationship, m.Version, m.Owner, m.AddedVersion)
	}
	for _, e := range ws.CaseEvents {
		b.Queue(caseEventInsertSQL, e.Team, e.ID, e.CaseID, e.CaseVersion, e.PriorStatus, e.ResultingStatus, e.ActorKind,
			e.ActorProfile, e.Reason, e.PolicyVersion, e.TimeBasis, []byte(e.Referenced), []byte(e.Positions), e.IngestID, e.CreatedAt)
	}
	w.step("cases", len(ws.CaseInserts)+len(ws.CaseUpdates)+len(ws.CaseEvents))
}

// queueRecords queues the decisions (each naming an existing review item), the closes of review
// items (each naming its decision), the new review items and the idempotency
// record.
//
// Decisions and the closes of existing review items come before the new items: a close of every
// open item about a relationship (a question answered) must not close the item the same
// transaction asks anew about it (a pending relationship now held for review).
func (w writeBatch) queueRecords(ws *store.WriteSet) {
	b := w.b
	w.queueDecisions(ws)
	w.queueIdentityDecisions(ws)
	w.queueItemCloses(ws)
	for _, r := range ws.ReviewItems {
		related := r.Related
		if related == nil {
			related = []string{}
		}
		b.Queue(reviewItemInsertSQL, r.Team, r.ID, r.IngestID, r.PlacementItemID, r.Kind, r.Profile, r.ObservationID,
			r.RelationshipID, related, []byte(r.Choices), r.RelationshipVersion, r.RelatedVersions, r.CreatedAt)
	}
	w.step("review_items", len(ws.ReviewItems))
	if ir := ws.Idempotency; ir != nil {
		b.Queue(idempotencyInsertSQL, ir.Team, ir.Profile, ir.Key, ir.Operation, ir.RequestHash, ir.IngestID,
			[]byte(ir.Result), ir.CreatedAt)
	}
	w.step("idempotency", 1)
}

// checkDeferredSQL runs right before every COMMIT of a write transaction: on a Citus cluster it fires
// the deferred constraint triggers on the team's worker, so that a violation is this statement's
// error, with its SQLSTATE, rather than the coordinator's "could not commit transaction"; on plain
// PostgreSQL it does nothing, and the checks run at COMMIT (densemem_check_deferred, migration 27,
// decision 207).
const checkDeferredSQL = "SELECT {schema}.densemem_check_deferred($1)"

// sendWrites sends the write batch b, with COMMIT behind it when the transaction folds COMMIT in,
// and settles a COMMIT's outcome (commitOutcome). The transaction is over once COMMIT succeeded.
func (t *tx) sendWrites(ctx context.Context, b *pgx.Batch, armed bool) error {
	commit := t.foldCommit
	if commit {
		b.Queue(checkDeferredSQL, t.team)
		b.Queue("COMMIT")
	}
	err := t.s.sendOn(ctx, t.conn, b)
	if commit {
		err = t.commitOutcome(ctx, armed, err)
	}
	if err != nil {
		return translate(err)
	}
	t.done = commit
	return nil
}

// failCommitAckLost is the failpoint that loses the answer of a COMMIT that succeeded: the round trip
// carrying COMMIT runs to its end, then the connection is closed and the answer dropped, as when the
// network fails between the server's commit and its acknowledgement.
const failCommitAckLost = "tx.commit_ack_lost"

// commitOutcome settles err, the result of the round trip that carried COMMIT. An error the server
// reported means it did not commit (the transaction was aborted before or at COMMIT), and an error
// raised before anything was sent means COMMIT never left: both are returned as they are. Any other
// error lost the answer of a COMMIT that may have run, and becomes store.ErrCommitUnknown. armed says
// whether failpoints are armed on ctx, so an unarmed call costs nothing more.
func (t *tx) commitOutcome(ctx context.Context, armed bool, err error) error {
	if err == nil && armed {
		if err = failpoint.Check(ctx, failCommitAckLost); err != nil {
			_ = t.conn.Close(context.WithoutCancel(ctx))
		}
	}
	var pgErr *pgconn.PgError
	if err == nil || errors.As(err, &pgErr) || pgconn.SafeToRetry(err) {
		return err
	}
	return classify(err, store.ErrCommitUnknown, store.ErrUnavailable)
}

func dateOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format(time.DateOnly)
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

package postgres

import (
	"hash/fnv"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// Advisory lock identifiers. Every writer takes its locks in one global order — idempotency key,
// entity names, source keys (a source revision), conflict keys, then case and relationship rows — and
// within a class in ascending
// identifier order, so concurrent calls cannot deadlock on them. A hash collision only serialises
// two unrelated keys.
//
// Each class (entity names, source keys, conflict keys) also has one lock per team, taken before the keys of the
// class: shared by a transaction that locks its keys one by one, exclusive by a transaction with more
// keys than its bound, which then takes no key locks at all. Either way two transactions touching one
// key exclude each other, and no transaction holds more than its bound of a class's locks.

func lockID(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// lockSet is the advisory locks of one call in the order they are taken, each shared or exclusive.
type lockSet struct {
	ids    []int64
	shared []bool
}

func (l *lockSet) add(id int64, shared bool) {
	l.ids = append(l.ids, id)
	l.shared = append(l.shared, shared)
}

// class adds the locks of one lock class: the team's class lock shared and then the keys' locks
// sorted, or, with more than max keys (max > 0), only the team's class lock, exclusive.
func (l *lockSet) class(class string, team identity.TeamID, keys []int64, max int) {
	if len(keys) == 0 {
		return
	}
	whole := lockID(class+"/team", string(team))
	if max > 0 && len(keys) > max {
		l.add(whole, false)
		return
	}
	l.add(whole, true)
	for _, id := range sortedUnique(keys) {
		l.add(id, false)
	}
}

func idempotencyLockID(team identity.TeamID, profile identity.ProfileID, key string) int64 {
	return lockID("idempotency", string(team), string(profile), key)
}

// nameLockIDs locks names by kind and skeleton, so look-alike names serialise their creators too.
func nameLockIDs(team identity.TeamID, names []store.NameLookup) []int64 {
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		ids = append(ids, lockID("entity-name", string(team), n.Kind, n.Skeleton))
	}
	return sortedUnique(ids)
}

func keyLockIDs(keys []conflict.Key) []int64 {
	ids := make([]int64, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, lockID("conflict-key", string(k.Team), string(k.Subject), k.PredicateKey, k.Scope))
	}
	return sortedUnique(ids)
}

func sortedUnique(ids []int64) []int64 {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// lockManySQL takes transaction-scoped advisory locks in array order ($1 the IDs, $2 whether each is
// shared).
const lockManySQL = `-- name: AdvisoryLockMany
SELECT count(CASE WHEN l.shared THEN pg_advisory_xact_lock_shared(l.id) ELSE pg_advisory_xact_lock(l.id) END)
FROM unnest($1::bigint[], $2::boolean[]) WITH ORDINALITY AS l(id, shared, ord)`

package postgres

import (
	"hash/fnv"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// Advisory lock identifiers. Every writer takes its locks in one global order — idempotency key,
// entity names, conflict keys, then case and relationship rows — and within a class in ascending
// identifier order, so concurrent calls cannot deadlock on them. A hash collision only serialises
// two unrelated keys.

func lockID(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

func idempotencyLockID(team identity.TeamID, profile identity.ProfileID, key string) int64 {
	return lockID("idempotency", string(team), string(profile), key)
}

func nameLockIDs(team identity.TeamID, names []store.NameLookup) []int64 {
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		ids = append(ids, lockID("entity-name", string(team), n.Kind, n.Normalized))
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

// lockManySQL takes transaction-scoped advisory locks in array order.
const lockManySQL = `-- name: AdvisoryLockMany
SELECT count(pg_advisory_xact_lock(id)) FROM unnest($1::bigint[]) WITH ORDINALITY AS l(id, ord)`

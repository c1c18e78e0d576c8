// Package review owns the conflict-case workflow writes: the Keeper that opens, repairs and dismisses
// cases for placements and lifecycle changes, and the nightly Conflict reviewer — daily run
// reservation, team-local claims with leases, per-case transactions fenced by the claim token,
// bounded retries — the only automatic resolver. It never calls a Verifier. Its writes carry the
// actor store.ActorSystemConflictReviewer; the database admits them only from a role that may review
// (migration 9), so the host runs it on a store connected as the reviewer role.
package review

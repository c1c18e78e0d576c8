// Package review owns the conflict-case workflow writes: the Keeper that opens, repairs and dismisses
// cases for placements and lifecycle changes, and the nightly Conflict reviewer — daily run
// reservation, team-local claims with leases, per-case transactions fenced by the claim token,
// bounded retries — the only automatic resolver. It never calls a Verifier. Its writes carry the
// actor store.ActorSystemConflictReviewer, which the database fences.
package review

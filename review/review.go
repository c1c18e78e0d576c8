// Package review is the home of the nightly Conflict reviewer: daily run reservation, team-local
// claims with leases, fenced per-case transactions and bounded retries. The reviewer is built on the
// conflict-case model; until it lands this package only names its actor.
package review

// Actor is the ledger actor of every write the nightly reviewer makes.
const Actor = "system_conflict_reviewer"

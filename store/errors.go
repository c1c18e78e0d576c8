package store

import "errors"

// Sentinel errors. The root package re-exports each of them under the same name, so callers test
// them with errors.Is against either spelling.
var (
	// ErrNotFound: the addressed row does not exist in the caller's team.
	ErrNotFound = errors.New("densemem: not found")
	// ErrForbidden: wrong team, inactive profile or missing scope.
	ErrForbidden = errors.New("densemem: forbidden")
	// ErrNotOwner: the caller tried to change another profile's knowledge.
	ErrNotOwner = errors.New("densemem: not the owner")
	// ErrIdempotencyConflict: the idempotency key was used before with a different request.
	ErrIdempotencyConflict = errors.New("densemem: idempotency key reused with a different request")
	// ErrStaleConflictVersion: the conflict case changed since the caller read it.
	ErrStaleConflictVersion = errors.New("densemem: stale conflict case version")
	// ErrNotMaterialToConflict: the proposal does not belong to the named conflict case.
	ErrNotMaterialToConflict = errors.New("densemem: proposal not material to the conflict case")
	// ErrStaleDecision: the review item was decided already, or a relationship it asks about changed
	// since it was issued; nothing was written. Trace the relationship again for the current question.
	ErrStaleDecision = errors.New("densemem: stale decision: the review item was decided or its relationships changed")
	// ErrStaleVersion: a relationship or a team policy changed since it was read.
	ErrStaleVersion = errors.New("densemem: stale version")
	// ErrConflict: a write collided with a concurrent one and could not be retried.
	ErrConflict = errors.New("densemem: concurrent write conflict")
	// ErrUnavailable: the database could not be reached or refused the operation.
	ErrUnavailable = errors.New("densemem: store unavailable")
	// ErrIntegrity: the database refused a write that would break one of its integrity rules
	// (an append-only ledger, an immutable authored field, a missing transition).
	ErrIntegrity = errors.New("densemem: integrity rule violated")
	// ErrTimeout: a statement ran past the store's statement timeout and was cancelled by the
	// database; nothing of its transaction remains.
	ErrTimeout = errors.New("densemem: statement timeout")
	// ErrInternal: the database failed in a way the library does not expect (a bug or a damaged
	// database). The driver's error stays in the chain for diagnostics; nothing of the failed
	// transaction remains.
	ErrInternal = errors.New("densemem: internal store error")
	// ErrMisconfigured: the store cannot work as configured, and retrying will not help: a malformed
	// or empty DSN, unknown role or database, bad credentials, a missing privilege, or a schema newer
	// than the library.
	ErrMisconfigured = errors.New("densemem: misconfigured")
	// ErrNotMigrated: the database's schema is missing or older than the library; run the migrations
	// (migrations.Up, or "densemem migrate up").
	ErrNotMigrated = errors.New("densemem: schema not migrated")
	// ErrCommitUnknown: the transaction's COMMIT was sent, but its answer was lost (the connection
	// broke or the context ended while it was in flight), so the transaction may or may not have
	// committed. It is never retried; read the state again to learn the outcome.
	ErrCommitUnknown = errors.New("densemem: transaction outcome unknown: commit sent, answer lost")
)

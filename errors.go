package densemem

import (
	"errors"
	"fmt"

	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/store"
)

// Sentinel errors, usable with errors.Is. They are the store's sentinels under the root package's names.
var (
	ErrNotFound              = store.ErrNotFound
	ErrForbidden             = store.ErrForbidden
	ErrNotOwner              = store.ErrNotOwner
	ErrIdempotencyConflict   = store.ErrIdempotencyConflict
	ErrStaleConflictVersion  = store.ErrStaleConflictVersion
	ErrNotMaterialToConflict = store.ErrNotMaterialToConflict
	ErrStaleVersion          = store.ErrStaleVersion
	ErrStaleDecision         = store.ErrStaleDecision
	ErrConflict              = store.ErrConflict
	ErrUnavailable           = store.ErrUnavailable
	ErrIntegrity             = store.ErrIntegrity
	// ErrTimeout: a store call ran past Limits.StatementTimeout and was cancelled; nothing was written.
	ErrTimeout = store.ErrTimeout
	// ErrInternal: an unexpected database failure; the driver's error stays in the chain
	// (errors.As reaches *pgconn.PgError) and nothing of the failed call was written.
	ErrInternal = store.ErrInternal
	// ErrCommitUnknown: the COMMIT was sent but its answer was lost, so the call's transaction may or
	// may not have committed. A Remember or Forget retried with the same idempotency key settles it.
	ErrCommitUnknown = store.ErrCommitUnknown
	// ErrMisconfigured: the store cannot work as configured (bad DSN, role, database, privilege, or a
	// zero Client); retrying will not help.
	ErrMisconfigured = store.ErrMisconfigured
	// ErrNotMigrated: the database's schema is missing or older than the library: run migrations.Up.
	ErrNotMigrated = store.ErrNotMigrated
	// ErrVerifier: the configured Verifier failed or answered out of contract; nothing was written.
	ErrVerifier = fmt.Errorf("densemem: verifier failed")
	// ErrErased: the call needs evidence content that a privacy erasure redacted (for example a Resolve
	// that would cite an erased fragment again). Nothing was written; the erased content is gone for
	// good, so retrying will not help: decide with new evidence, or forget the statement.
	ErrErased = errors.New("densemem: evidence content was erased")
)

// FieldProblem is one problem of a request, located by its JSON path.
type FieldProblem = memtype.FieldProblem

// MaxProblems bounds the problems one ValidationError lists; the rest are only counted.
const MaxProblems = memtype.MaxProblems

// ValidationError lists the problems of a rejected request (at most MaxProblems of them, the rest
// counted in Omitted). Nothing was written.
type ValidationError = memtype.ValidationError

// problems accumulates the problems of a request while validating it.
type problems = request.Problems

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

package densemem

import (
	"fmt"
	"strings"

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
)

// FieldProblem is one problem of a request, located by its JSON path.
type FieldProblem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// MaxProblems bounds the problems one ValidationError lists; the rest are only counted.
const MaxProblems = 100

// ValidationError lists the problems of a rejected request (at most MaxProblems of them, the rest
// counted in Omitted). Nothing was written.
type ValidationError struct {
	Problems []FieldProblem `json:"problems"`
	// Omitted counts the problems found past MaxProblems.
	Omitted int `json:"omitted_problems,omitempty"`
}

// Error lists the problems as "path: message" pairs.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Path + ": " + p.Message
	}
	msg := "densemem: invalid request: " + strings.Join(parts, "; ")
	if e.Omitted > 0 {
		msg += fmt.Sprintf("; and %d more", e.Omitted)
	}
	return msg
}

// Has reports whether some listed problem is located at path.
func (e *ValidationError) Has(path string) bool {
	for _, p := range e.Problems {
		if p.Path == path {
			return true
		}
	}
	return false
}

// problems accumulates FieldProblems while validating, keeping the first MaxProblems and counting
// the rest, so a request with millions of problems costs no more than one with a hundred.
type problems struct {
	list    []FieldProblem
	omitted int
}

func (ps *problems) add(path, format string, args ...any) {
	if len(ps.list) >= MaxProblems {
		ps.omitted++
		return
	}
	ps.list = append(ps.list, FieldProblem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// any reports whether a problem was found.
func (ps *problems) any() bool { return len(ps.list) > 0 }

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps.list, Omitted: ps.omitted}
}

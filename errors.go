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
	// ErrCommitUnknown: the COMMIT was sent but its answer was lost, so the call's transaction may or
	// may not have committed. A Remember or Forget retried with the same idempotency key settles it.
	ErrCommitUnknown = store.ErrCommitUnknown
	// ErrVerifier: the configured Verifier failed or answered out of contract; nothing was written.
	ErrVerifier = fmt.Errorf("densemem: verifier failed")
)

// FieldProblem is one problem of a request, located by its JSON path.
type FieldProblem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// ValidationError lists every problem of a rejected request. Nothing was written.
type ValidationError struct {
	Problems []FieldProblem `json:"problems"`
}

// Error lists the problems as "path: message" pairs.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Path + ": " + p.Message
	}
	return "densemem: invalid request: " + strings.Join(parts, "; ")
}

// Has reports whether some problem is located at path.
func (e *ValidationError) Has(path string) bool {
	for _, p := range e.Problems {
		if p.Path == path {
			return true
		}
	}
	return false
}

// problems accumulates FieldProblems while validating.
type problems []FieldProblem

func (ps *problems) add(path, format string, args ...any) {
	*ps = append(*ps, FieldProblem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}

package api

import (
	"fmt"
	"strings"
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

// Problems accumulates FieldProblems while validating, keeping the first MaxProblems and counting
// the rest, so a request with millions of problems costs no more than one with a hundred.
type Problems struct {
	list    []FieldProblem
	omitted int
}

// Add records a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	if len(ps.list) >= MaxProblems {
		ps.omitted++
		return
	}
	ps.list = append(ps.list, FieldProblem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Count is the number of problems found, listed or not.
func (ps *Problems) Count() int { return len(ps.list) + ps.omitted }

// Any reports whether a problem was found.
func (ps *Problems) Any() bool { return len(ps.list) > 0 }

// Err is the problems as a *ValidationError, or nil without any.
func (ps *Problems) Err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps.list, Omitted: ps.omitted}
}

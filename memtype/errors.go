package memtype

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

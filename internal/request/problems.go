package request

import (
	"fmt"

	"github.com/densemem/densemem/memtype"
)

// Problems accumulates a request's memtype.FieldProblems while validating, keeping the first
// memtype.MaxProblems and counting the rest, so a request with millions of problems costs no more
// than one with a hundred.
type Problems struct {
	list    []memtype.FieldProblem
	omitted int
}

// Add records a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	if len(ps.list) >= memtype.MaxProblems {
		ps.omitted++
		return
	}
	ps.list = append(ps.list, memtype.FieldProblem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Count is the number of problems found, listed or not.
func (ps *Problems) Count() int { return len(ps.list) + ps.omitted }

// Any reports whether a problem was found.
func (ps *Problems) Any() bool { return len(ps.list) > 0 }

// Err is the problems as a *memtype.ValidationError, or nil without any.
func (ps *Problems) Err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &memtype.ValidationError{Problems: ps.list, Omitted: ps.omitted}
}

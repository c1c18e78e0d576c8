package review

import (
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
)

// Defaults of the nightly review (DESIGN §14).
const (
	DefaultBatch       = 100
	DefaultLease       = 5 * time.Minute
	DefaultMaxAttempts = 5
)

// Request is one nightly run of one worker.
type Request struct {
	// TeamIDs limits the run to these teams; empty means every team with due cases.
	TeamIDs []identity.TeamID `json:"team_ids,omitempty"`
	// WorkerID names the worker in run reservations (default "worker"); valid UTF-8 without NUL, at
	// most the client's Limits.MaxTextBytes.
	WorkerID string `json:"worker_id,omitempty"`
	// MaxCases bounds the cases this worker claims per team (0 = no bound; a negative value is
	// refused).
	MaxCases int `json:"max_cases,omitempty"`
}

// Report counts what one worker's run did. When the run returns no error, each claimed case is counted in
// exactly one of Resolved, Overdue, Dismissed, KeptOpen, Failed, Unknown and Lost, so they add up to
// Claimed; a run that stopped early leaves its remaining claims to expire. The first four are reviews
// the database acknowledged, Failed ones it certainly did not commit, Unknown ones it may have: the
// run committed at least Resolved+Overdue+Dismissed+KeptOpen reviews and at most Unknown more.
type Report struct {
	Teams int `json:"teams"`
	// Reserved counts the team run dates this worker reserved first; later workers only help.
	Reserved  int `json:"reserved"`
	Claimed   int `json:"claimed"`
	Resolved  int `json:"resolved"`
	Overdue   int `json:"overdue"`
	Dismissed int `json:"dismissed"`
	KeptOpen  int `json:"kept_open"`
	// Failed counts reviews that did not commit: the case stays due and unresolved.
	Failed int `json:"failed"`
	// Unknown counts reviews whose COMMIT was sent but whose answer was lost (the connection broke or
	// the context ended while it was in flight): each such case is either reviewed completely or
	// untouched, due and unresolved like a failed one. They are not counted in Failed.
	Unknown int `json:"unknown"`
	// UnknownCaseIDs lists the cases counted in Unknown, in review order; it never holds more than the
	// cases this worker claimed. A case among them that did not commit keeps its claim until the lease
	// expires, and a later run reviews it.
	UnknownCaseIDs []conflict.ID `json:"unknown_case_ids,omitempty"`
	// Escalated counts cases whose attempts of the run date were exhausted.
	Escalated int `json:"escalated"`
	// Lost counts claims that were no longer this worker's or no longer live when reviewed.
	Lost int `json:"lost"`
}

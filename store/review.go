package store

import (
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
)

// NightlyReserveParams reserves one team's nightly run of a run date.
type NightlyReserveParams struct {
	Team    identity.TeamID
	RunDate time.Time // a date: midnight UTC of the run date in the team's time zone
	Worker  string
	Now     time.Time
}

// CaseClaimDueParams claims a team's due cases for one worker.
type CaseClaimDueParams struct {
	Team        identity.TeamID
	Now         time.Time
	RunDate     time.Time
	Batch       int
	Lease       time.Duration
	Token       string
	MaxAttempts int
}

// ClaimedCase is one case a worker claimed.
type ClaimedCase struct {
	ID       conflict.ID
	Key      conflict.Key
	Attempts int
	// PolicyVersion is the team policy version the case pinned when it opened, which its review applies.
	PolicyVersion int
}

// CaseEscalateParams escalates the cases whose attempts of the run date are exhausted.
type CaseEscalateParams struct {
	Team        identity.TeamID
	Now         time.Time
	RunDate     time.Time
	NextReview  time.Time
	MaxAttempts int
	// Token is the calling worker's claim token: its own exhausted claims are escalated at once.
	Token string
}

// CaseReviewUpdate is the reviewer's change of a case, fenced by its claim token and version: when
// the case is no longer claimed by Token (another worker's claim, or a claim already released) or no
// longer at ExpectVersion, WriteSetApply fails with ErrStaleVersion. It always clears the claim and
// sets the next review time.
type CaseReviewUpdate struct {
	Team          identity.TeamID
	ID            conflict.ID
	Token         string
	ExpectVersion int
	Version       int
	Status        conflict.Status
	NextReviewAt  time.Time
	ResolvedAt    *time.Time
	EffectiveAt   *time.Time
	TimeBasis     string
	Preferred     conflict.PositionID
	EscalatedDate *time.Time
	UpdatedAt     time.Time
}

// Bounds of a run ledger row's failure list (migration 28): at most MaxNightlyFailures failures per
// team and run date, the first ones recorded, each error's text cut to MaxNightlyErrorBytes.
const (
	MaxNightlyFailures   = 20
	MaxNightlyErrorBytes = 300
)

// NightlyCounts counts what nightly review passes did to a team's cases on one run date: cases
// claimed, resolved, dismissed, marked overdue, kept open, escalated after exhausting the day's
// attempts, failed, and of unknown outcome (the COMMIT's answer was lost).
type NightlyCounts struct {
	Claimed, Resolved, Dismissed, Overdue, KeptOpen, Exhausted, Failed, Unknown int
}

// NightlyFailure is one failure of a nightly run: a case's review that did not commit (or whose
// outcome is unknown), with the claim's attempt, or a pass's own error (no case, attempt 0). Error
// is at most MaxNightlyErrorBytes of valid UTF-8.
type NightlyFailure struct {
	ConflictID conflict.ID `json:"conflict_id,omitempty"`
	Attempt    int         `json:"attempt,omitempty"`
	Error      string      `json:"error"`
}

// NightlyFinishParams records the outcome of one worker's pass over a team's run date: its counts
// are added to the date's, its failures appended to the date's list while it has room.
type NightlyFinishParams struct {
	Team     identity.TeamID
	RunDate  time.Time // a date: midnight UTC, as NightlyReserveParams
	Now      time.Time
	Counts   NightlyCounts
	Failures []NightlyFailure
}

// NightlyRun is one team's run date in the run ledger: the reservation (the first worker and when it
// reserved), the passes started and finished, when the latest recorded pass finished (nil when none
// did), the counts of every recorded pass and the first failures.
type NightlyRun struct {
	Team           identity.TeamID
	RunDate        time.Time // midnight UTC of the run date
	Worker         string
	ReservedAt     time.Time
	PassesStarted  int
	PassesFinished int
	FinishedAt     *time.Time
	Counts         NightlyCounts
	Failures       []NightlyFailure
}

// NightlyRunListParams asks for a page of a team's run dates, newest first.
type NightlyRunListParams struct {
	Team identity.TeamID
	// Before, when set, is the run date of the last run of the previous page: the page holds the
	// run dates before it.
	Before *time.Time
	// Limit is the most runs returned (1 or more).
	Limit int
}

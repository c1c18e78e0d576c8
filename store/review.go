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

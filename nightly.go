package densemem

import (
	"context"
	"time"

	"github.com/densemem/densemem/internal/nightly"
	"github.com/densemem/densemem/review"
	"github.com/densemem/densemem/store"
)

// NightlyReviewRequest is one worker's nightly run: which teams (default: every team with due
// cases), the worker's name, and a bound on the cases it claims per team.
type NightlyReviewRequest = review.Request

// NightlyReviewReport counts what a nightly run did: cases claimed, resolved, marked overdue,
// dismissed, kept open, failed, of unknown outcome (the COMMIT's answer was lost; listed by ID), lost
// to another worker, and escalated after exhausting the day's attempts.
type NightlyReviewReport = review.Report

// RunNightlyReview runs the deterministic, model-free Conflict reviewer: for each team it reserves
// the run date (in the team policy's time zone), claims due cases with leases, and reviews each in
// one transaction fenced by its claim, taking locks in the global order. It is the only automatic
// resolver of team conflict cases and never calls the Verifier. Several workers may run at once:
// each case is resolved exactly once. Hosts call it from their own scheduler.
//
// Errors: *ValidationError (a negative max_cases, a worker_id that is not valid text or longer than
// Limits.MaxTextBytes), and the errors of the teams' reviews, joined (see review.Report).
func (c *Client) RunNightlyReview(ctx context.Context, req NightlyReviewRequest) (*NightlyReviewReport, error) {
	ctx, err := c.begin(ctx, store.ReviewerActor)
	if err != nil {
		return nil, err
	}
	var ps problems
	if req.MaxCases < 0 {
		ps.Add("max_cases", "is %d: must be 0 (no bound) or a positive number of cases per team", req.MaxCases)
	}
	checkText(&ps, "worker_id", req.WorkerID, false, c.cfg.Limits.MaxTextBytes)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	st := c.cfg.Nightly.Store
	if st == nil {
		st = c.store
	}
	rep, err := nightly.Run(ctx, nightly.Config{Store: st, Clock: c.now, NewID: c.newID, Logger: c.cfg.Logger,
		Batch: c.cfg.Nightly.Batch, Lease: c.cfg.Nightly.Lease, MaxAttempts: c.cfg.Nightly.MaxAttempts,
		LockedOnly: c.reviewLockedOnly, Hooks: c.nightlyHooks}, req)
	return &rep, err
}

// Bounds of NightlyConfig (DESIGN §14); New refuses a value outside them.
const (
	minNightlyBatch       = 1
	maxNightlyBatch       = 10000
	minNightlyLease       = 10 * time.Second
	maxNightlyLease       = time.Hour
	minNightlyMaxAttempts = 1
	maxNightlyMaxAttempts = 20
)

// NightlyConfig tunes the nightly reviewer. Zero fields take the review package's defaults: batch
// 100 (1..10000), lease 5 minutes (10 s..1 h), 5 attempts per case and run date (1..20). New refuses
// a value outside its bounds with a *ValidationError naming the field.
type NightlyConfig struct {
	Batch       int
	Lease       time.Duration
	MaxAttempts int
	// Store is what RunNightlyReview reads and writes through: a store connected as the reviewer role
	// (migrations.Roles.Reviewer), the only role besides the owner the database lets resolve a case.
	// Nil means the Client's store, which can review only when its role is the owner's (or a
	// superuser's); as the runtime role every case fails with ErrMisconfigured or ErrIntegrity.
	Store store.Store
}

// validate checks every set field against its bound and lists every field out of bounds.
func (n NightlyConfig) validate() error {
	var ps problems
	if n.Batch != 0 && (n.Batch < minNightlyBatch || n.Batch > maxNightlyBatch) {
		ps.Add("config.nightly.batch", "is %d: must be within %d..%d (0 means the default, %d)", n.Batch,
			minNightlyBatch, maxNightlyBatch, review.DefaultBatch)
	}
	if n.Lease != 0 && (n.Lease < minNightlyLease || n.Lease > maxNightlyLease) {
		ps.Add("config.nightly.lease", "is %v: must be within %v..%v (0 means the default, %v)", n.Lease,
			minNightlyLease, maxNightlyLease, review.DefaultLease)
	}
	if n.MaxAttempts != 0 && (n.MaxAttempts < minNightlyMaxAttempts || n.MaxAttempts > maxNightlyMaxAttempts) {
		ps.Add("config.nightly.max_attempts", "is %d: must be within %d..%d (0 means the default, %d)", n.MaxAttempts,
			minNightlyMaxAttempts, maxNightlyMaxAttempts, review.DefaultMaxAttempts)
	}
	return ps.Err()
}

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
func (c *Client) RunNightlyReview(ctx context.Context, req NightlyReviewRequest) (*NightlyReviewReport, error) {
	ctx, err := c.begin(ctx)
	if err != nil {
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

// NightlyConfig tunes the nightly reviewer. Zero fields take the review package's defaults: batch
// 100 (1..10000), lease 5 minutes (10 s..1 h), 5 attempts per case and run date (1..20).
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

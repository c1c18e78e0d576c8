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

// ListNightlyRunsRequest asks for a page of the team's nightly runs (the run ledger), newest run
// date first.
type ListNightlyRunsRequest struct {
	// Limit is the most runs returned: 0 means DefaultPageItems; 1..Limits.MaxPageItems.
	Limit int `json:"limit,omitempty"`
	// After is a previous response's NextAfter ("" for the first page).
	After string `json:"after,omitempty"`
}

// ListNightlyRunsResponse is one page of the team's nightly runs.
type ListNightlyRunsResponse struct {
	Runs []NightlyRun `json:"runs"`
	// NextAfter, when set, is the After of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// NightlyRun is what the nightly review did to a team on one run date: who reserved the date and
// when, how many workers' passes started and recorded their outcome (a pass that crashed, or whose
// context ended, never records: PassesFinished < PassesStarted shows a pass that did not finish, or
// is still running), when the latest recorded pass finished, the counts of every recorded pass, and
// the date's first failures (at most 20: a case's review that did not commit or whose COMMIT's
// answer was lost, with the claim's attempt, or a pass's own error without a case; each error's text
// cut to 300 bytes). A run reserved before the ledger existed (migration 28) has no pass counted.
type NightlyRun struct {
	// RunDate is the run's date in the team's time zone (YYYY-MM-DD).
	RunDate        string     `json:"run_date"`
	ReservedBy     string     `json:"reserved_by"`
	ReservedAt     time.Time  `json:"reserved_at"`
	PassesStarted  int        `json:"passes_started"`
	PassesFinished int        `json:"passes_finished"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	Claimed        int        `json:"claimed"`
	Resolved       int        `json:"resolved"`
	Dismissed      int        `json:"dismissed"`
	MarkedOverdue  int        `json:"marked_overdue"`
	KeptOpen       int        `json:"kept_open"`
	// Exhausted counts cases escalated after failing every attempt of the day.
	Exhausted int `json:"exhausted"`
	Failed    int `json:"failed"`
	// Unknown counts reviews whose COMMIT's answer was lost (reviewed completely, or still due).
	Unknown  int                 `json:"unknown"`
	Failures []NightlyRunFailure `json:"failures"`
}

// NightlyRunFailure is one failure of a nightly run: a case's review (its conflict ID and the claim's
// attempt of the day) or, without a case, the pass's own error that stopped it.
type NightlyRunFailure struct {
	ConflictID string `json:"conflict_id,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	Error      string `json:"error"`
}

// ListNightlyRuns returns a page of the principal's team's nightly runs, newest run date first: the
// run ledger the nightly review writes (one row per run date, every worker's pass counted), so an
// operator sees the runs that decided nothing and the failures short of exhaustion too.
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (a host principal's team does not
// exist).
func (c *Client) ListNightlyRuns(ctx context.Context, p Principal, req ListNightlyRunsRequest) (*ListNightlyRunsResponse, error) {
	ctx, limit, key, err := c.keyedPage(ctx, p, listNightlyRuns, req.Limit, req.After)
	if err != nil {
		return nil, err
	}
	params := store.NightlyRunListParams{Team: p.TeamID, Limit: limit}
	if key != "" {
		before, _ := time.Parse(time.DateOnly, key) // parseListCursor checked it
		params.Before = &before
	}
	page, err := c.store.NightlyRunList(ctx, params)
	if err != nil {
		return nil, err
	}
	out := &ListNightlyRunsResponse{Runs: make([]NightlyRun, 0, len(page.Items))}
	for _, r := range page.Items {
		n := r.Counts
		run := NightlyRun{RunDate: r.RunDate.Format(time.DateOnly), ReservedBy: r.Worker, ReservedAt: r.ReservedAt,
			PassesStarted: r.PassesStarted, PassesFinished: r.PassesFinished, FinishedAt: r.FinishedAt, Claimed: n.Claimed,
			Resolved: n.Resolved, Dismissed: n.Dismissed, MarkedOverdue: n.Overdue, KeptOpen: n.KeptOpen, Exhausted: n.Exhausted,
			Failed: n.Failed, Unknown: n.Unknown, Failures: make([]NightlyRunFailure, 0, len(r.Failures))}
		for _, f := range r.Failures {
			run.Failures = append(run.Failures, NightlyRunFailure{ConflictID: string(f.ConflictID), Attempt: f.Attempt, Error: f.Error})
		}
		out.Runs = append(out.Runs, run)
	}
	if page.More {
		out.NextAfter = listCursor{List: listNightlyRuns, Keys: []string{out.Runs[len(out.Runs)-1].RunDate}}.encode()
	}
	return out, nil
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

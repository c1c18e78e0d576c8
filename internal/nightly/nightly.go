// Package nightly is the nightly Conflict reviewer's machinery: daily run reservation, team-local
// claims with leases, one transaction per case fenced by the claim token, bounded retries. It is the
// only automatic resolver of team conflict cases and never calls a Verifier; what it decides comes
// from conflict.Decide, and the rows from the ledger. The database admits its writes only from a role
// that may review (migration 9), so the host runs it on a store connected as the reviewer role.
package nightly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	_ "time/tzdata" // run dates use the team's IANA zone even on hosts without a zone database

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/failpoint"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/review"
	"github.com/densemem/densemem/store"
)

// Config wires a reviewer. The reviewer has no Verifier: it never calls a model.
type Config struct {
	Store  store.Store
	Clock  func() time.Time
	NewID  func(prefix string, at time.Time) string
	Logger *slog.Logger
	// Batch, Lease and MaxAttempts default to review.DefaultBatch, DefaultLease and DefaultMaxAttempts.
	Batch       int
	Lease       time.Duration
	MaxAttempts int
}

// errLost reports that the worker no longer holds the case's claim (its lease expired and another
// worker took it, or the case left the live statuses).
var errLost = errors.New("densemem: nightly review: claim lost")

// Run reviews the due cases of the requested teams: it reserves each team's run date, escalates
// cases whose attempts of the day are exhausted, then claims due cases in batches and reviews each
// in its own transaction. A failed case stays due and unresolved; its lease expiry makes it
// reclaimable. A case whose COMMIT's answer was lost is counted as Unknown, not Failed: it is either
// reviewed or, like a failed one, due and unresolved. A team's error does not stop the other teams: Run returns the report of everything
// it did together with the joined errors, and stops early when ctx ends.
func Run(ctx context.Context, cfg Config, req review.Request) (review.Report, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = review.DefaultBatch
	}
	if cfg.Lease <= 0 {
		cfg.Lease = review.DefaultLease
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = review.DefaultMaxAttempts
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if req.WorkerID == "" {
		req.WorkerID = "worker"
	}
	var rep review.Report
	teams := req.TeamIDs
	if len(teams) == 0 {
		var err error
		if teams, err = cfg.Store.TeamsWithDueCases(ctx, cfg.Clock()); err != nil {
			return rep, err
		}
	}
	// One team's failure does not starve the others: the run goes on and reports every error.
	var errs []error
	for _, team := range teams {
		rep.Teams++
		if err := runTeam(ctx, cfg, req, team, &rep); err != nil {
			errs = append(errs, fmt.Errorf("%w (nightly review of team %s)", err, team))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return rep, errors.Join(errs...)
}

// runDates returns the run date of now in the team's time zone (as a UTC midnight date) and the
// start of the next run date.
func runDates(now time.Time, tz string) (runDate, next time.Time) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC // unreachable: SetTeamPolicy validates the zone and tzdata is embedded
	}
	l := now.In(loc)
	runDate = time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC)
	next = time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, loc).UTC()
	return runDate, next
}

func runTeam(ctx context.Context, cfg Config, req review.Request, team identity.TeamID, rep *review.Report) error {
	pol, err := cfg.Store.PolicyGet(ctx, team)
	if err != nil {
		return err
	}
	preds, err := cfg.Store.PredicateList(ctx, team)
	if err != nil {
		return err
	}
	now := cfg.Clock()
	runDate, next := runDates(now, pol.TimeZone)
	reserved, err := cfg.Store.NightlyReserve(ctx, store.NightlyReserveParams{Team: team, RunDate: runDate, Worker: req.WorkerID, Now: now})
	if err != nil {
		return err
	}
	if reserved {
		rep.Reserved++
	}
	token := cfg.NewID("clm", now)
	escalate := func() error {
		n, err := cfg.Store.CaseEscalateExhausted(ctx, store.CaseEscalateParams{Team: team, Now: now, RunDate: runDate,
			NextReview: next, MaxAttempts: cfg.MaxAttempts, Token: token})
		rep.Escalated += n
		return err
	}
	if err := escalate(); err != nil {
		return err
	}
	claimedTotal := 0
	for req.MaxCases == 0 || claimedTotal < req.MaxCases {
		batch := cfg.Batch
		if req.MaxCases > 0 {
			batch = min(batch, req.MaxCases-claimedTotal)
		}
		claimed, err := cfg.Store.CaseClaimDue(ctx, store.CaseClaimDueParams{Team: team, Now: now, RunDate: runDate,
			Batch: batch, Lease: cfg.Lease, Token: token, MaxAttempts: cfg.MaxAttempts})
		if err != nil {
			return err
		}
		if len(claimed) == 0 {
			break
		}
		claimedTotal += len(claimed)
		rep.Claimed += len(claimed)
		// Test seam: a worker that dies right after claiming leaves its claims to expire.
		if err := failpoint.Check(ctx, "review.after_claim"); err != nil {
			return err
		}
		for _, c := range claimed {
			outcome, err := reviewCase(ctx, cfg, pol, preds, c, token, now, next)
			if errors.Is(err, errLost) {
				// Another worker or a lifecycle change (a forget that dismissed the case) got there first.
				rep.Lost++
				continue
			}
			if errors.Is(err, store.ErrCommitUnknown) {
				// The COMMIT left but its answer did not come back: the case is reviewed completely or not
				// at all, and which is unknown here. Not settled by a read: the COMMIT may still be arriving.
				rep.Unknown++
				rep.UnknownCaseIDs = append(rep.UnknownCaseIDs, c.ID)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				cfg.Logger.WarnContext(ctx, "densemem: nightly review of a case has an unknown outcome", "team", team,
					"conflict_id", c.ID, "attempt", c.Attempts, "error", err)
				continue
			}
			if err != nil {
				rep.Failed++
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// The claim is kept until its lease expires: the case stays due and unresolved, and a later
				// run retries it (the lease is the backoff), within the day's attempts.
				cfg.Logger.WarnContext(ctx, "densemem: nightly review of a case failed", "team", team, "conflict_id", c.ID,
					"attempt", c.Attempts, "error", err)
				continue
			}
			switch outcome {
			case conflict.OutcomeResolve:
				rep.Resolved++
			case conflict.OutcomeOverdue:
				rep.Overdue++
			case conflict.OutcomeDismiss:
				rep.Dismissed++
			default:
				rep.KeptOpen++
			}
		}
	}
	return escalate()
}

// reviewCase evaluates one claimed case in one transaction fenced by the claim token: it reloads the
// key's relationships, supports and the case under the global lock order, and the ledger repairs
// membership and applies the resolution policy's decision (resolve, overdue, dismiss or keep open).
func reviewCase(ctx context.Context, cfg Config, pol store.Policy, preds []relationship.Predicate, c store.ClaimedCase,
	token string, now, next time.Time) (conflict.Outcome, error) {
	var outcome conflict.Outcome
	err := cfg.Store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: c.Key.Team, Keys: []conflict.Key{c.Key},
			Cases: []conflict.ID{c.ID}})
		if err != nil {
			return err
		}
		l := &ledger.Ledger{Team: c.Key.Team, Actor: ledger.ReviewerActor, IngestID: token, Now: now, Policy: pol,
			NewID: func(prefix string) string { return cfg.NewID(prefix, now) }}
		l.Load(kl, preds)
		cs := l.Case(c.ID)
		if cs == nil || cs.ClaimToken != token || !cs.Status.Live() {
			return errLost
		}
		ks := l.Key(c.Key)
		confirmed := confirmedFrom(ks, kl.Supports)
		outcome = l.Review(ks, cs, token, next, func(positions []conflict.Position) conflict.Decision {
			return conflict.Decide(conflict.PolicyInput{Positions: positions, Now: now, OpenedAt: cs.OpenedAt,
				ReviewDueAt: cs.ReviewDueAt, ConfirmedFrom: confirmed, PolicyVersion: cs.PolicyVersion})
		})
		return tx.WriteSetApply(ctx, l.WS)
	})
	return outcome, err
}

// confirmedFrom maps each relationship of the key to its valid_from when a verification event of
// one of its supports confirmed it (the policy's evidence time).
func confirmedFrom(ks *ledger.KeyState, supports []store.SupportRow) map[relationship.ID]time.Time {
	out := map[relationship.ID]time.Time{}
	for _, s := range supports {
		if r := ks.Find(s.RelationshipID); r != nil && evidence.ConfirmsValidFrom(s.ConfirmedFrom, r.Validity.From) {
			out[r.ID] = *r.Validity.From
		}
	}
	return out
}

package review

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
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Defaults of the nightly review (DESIGN §14).
const (
	DefaultBatch       = 100
	DefaultLease       = 5 * time.Minute
	DefaultMaxAttempts = 5
)

// Config wires a reviewer. The reviewer has no Verifier: it never calls a model.
type Config struct {
	Store  store.Store
	Clock  func() time.Time
	NewID  func(prefix string, at time.Time) string
	Logger *slog.Logger
	// Batch, Lease and MaxAttempts default to DefaultBatch, DefaultLease and DefaultMaxAttempts.
	Batch       int
	Lease       time.Duration
	MaxAttempts int
}

// Request is one nightly run of one worker.
type Request struct {
	// TeamIDs limits the run to these teams; empty means every team with due cases.
	TeamIDs []identity.TeamID `json:"team_ids,omitempty"`
	// WorkerID names the worker in run reservations (default "worker").
	WorkerID string `json:"worker_id,omitempty"`
	// MaxCases bounds the cases this worker claims per team (0 = no bound).
	MaxCases int `json:"max_cases,omitempty"`
}

// Report counts what one worker's run did. When Run returns no error, each claimed case is counted in
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

// errLost reports that the worker no longer holds the case's claim (its lease expired and another
// worker took it, or the case left the live statuses).
var errLost = errors.New("densemem review: claim lost")

// Run reviews the due cases of the requested teams: it reserves each team's run date, escalates
// cases whose attempts of the day are exhausted, then claims due cases in batches and reviews each
// in its own transaction. A failed case stays due and unresolved; its lease expiry makes it
// reclaimable. A case whose COMMIT's answer was lost is counted as Unknown, not Failed: it is either
// reviewed or, like a failed one, due and unresolved. A team's error does not stop the other teams: Run returns the report of everything
// it did together with the joined errors, and stops early when ctx ends.
func Run(ctx context.Context, cfg Config, req Request) (Report, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if req.WorkerID == "" {
		req.WorkerID = "worker"
	}
	var rep Report
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

func runTeam(ctx context.Context, cfg Config, req Request, team identity.TeamID, rep *Report) error {
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
// key's relationships, supports and the case under the global lock order, repairs membership,
// applies the policy and resolves, marks overdue, dismisses or keeps the case open.
func reviewCase(ctx context.Context, cfg Config, pol store.Policy, preds []relationship.Predicate, c store.ClaimedCase,
	token string, now, next time.Time) (conflict.Outcome, error) {
	var outcome conflict.Outcome
	err := cfg.Store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: c.Key.Team, Keys: []conflict.Key{c.Key},
			Cases: []conflict.ID{c.ID}})
		if err != nil {
			return err
		}
		var cs *store.CaseRow
		for i := range kl.Cases {
			if kl.Cases[i].ID == c.ID {
				cs = &kl.Cases[i]
			}
		}
		if cs == nil || cs.ClaimToken != token || !cs.Status.Live() {
			return errLost
		}
		pred, _ := relationship.MatchPredicate(c.Key.PredicateKey, preds)
		ks := &KeyState{Key: c.Key, Pred: pred, Supports: map[relationship.ID][]evidence.Support{}, Live: cs}
		confirmed := map[relationship.ID]time.Time{}
		for i := range kl.Relationships {
			ks.Rels = append(ks.Rels, &kl.Relationships[i])
		}
		byID := map[relationship.ID]*relationship.Relationship{}
		for _, r := range ks.Rels {
			byID[r.ID] = r
		}
		for _, s := range kl.Supports {
			ks.Supports[s.RelationshipID] = append(ks.Supports[s.RelationshipID], Support(s, pol.AuthoritativeProfiles))
			if r := byID[s.RelationshipID]; r != nil && s.ConfirmedFrom != nil && r.Validity.From != nil && s.ConfirmedFrom.Equal(*r.Validity.From) {
				confirmed[r.ID] = *r.Validity.From
			}
		}
		var ws store.WriteSet
		k := &Keeper{Team: c.Key.Team, ActorKind: store.ActorSystemConflictReviewer, IngestID: token, Now: now,
			Policy: pol, WS: &ws, NewID: func(prefix string) string { return cfg.NewID(prefix, now) }}
		live := &conflict.Live{ID: cs.ID, Version: cs.Version, Status: cs.Status, PolicyVersion: cs.PolicyVersion,
			OpenedAt: cs.OpenedAt, ReviewDueAt: cs.ReviewDueAt, PositionIDs: cs.Positions, Members: cs.Members}
		ch := conflict.Maintain(pred, live, ks.Members(), now)
		expect, prior := cs.Version, cs.Status
		upd := store.CaseReviewUpdate{Team: c.Key.Team, ID: cs.ID, Token: token, ExpectVersion: expect, Version: cs.Version,
			Status: cs.Status, NextReviewAt: next, UpdatedAt: now}
		if ch.Action == conflict.ActionDismiss {
			outcome = conflict.OutcomeDismiss
			cs.Version++
			cs.Status = conflict.StatusDismissed
			k.Apply(cs, ch, prior, conflict.ReasonNoDisagreement)
		} else {
			dec := conflict.Decide(conflict.PolicyInput{Positions: ch.Positions, Now: now, OpenedAt: cs.OpenedAt,
				ReviewDueAt: cs.ReviewDueAt, ConfirmedFrom: confirmed, PolicyVersion: cs.PolicyVersion})
			outcome = dec.Outcome
			changed := ch.Action == conflict.ActionUpdate
			switch dec.Outcome {
			case conflict.OutcomeResolve:
				cs.Version++
				cs.Status = conflict.StatusResolved
				winner := ch.Positions[dec.Winner]
				k.Apply(cs, ch, prior, dec.Reason)
				ws.CaseEvents[len(ws.CaseEvents)-1].TimeBasis = string(dec.Basis)
				cutoff := dec.Cutoff
				upd.ResolvedAt, upd.EffectiveAt, upd.TimeBasis = &now, &cutoff, string(dec.Basis)
				upd.Preferred = cs.Positions[winner.Key]
				for i, p := range ch.Positions {
					if i == dec.Winner {
						continue
					}
					for _, m := range p.Members {
						supersede(k, byID[m.Relationship.ID], conflict.LoserValidTo(cutoff, m.Relationship), cs.ID)
					}
				}
			case conflict.OutcomeOverdue:
				if changed || cs.Status == conflict.StatusOpen {
					cs.Version++
					cs.Status = conflict.StatusOverdue
					reason := "overdue_" + dec.Reason
					if prior == conflict.StatusOverdue {
						reason = "membership_repaired"
					}
					k.Apply(cs, ch, prior, reason)
				}
			default:
				if changed {
					cs.Version++
					k.Apply(cs, ch, prior, "membership_repaired")
				}
			}
		}
		upd.Version, upd.Status = cs.Version, cs.Status
		ws.CaseReviews = append(ws.CaseReviews, upd)
		return tx.WriteSetApply(ctx, ws)
	})
	return outcome, err
}

// supersede closes a losing relationship at the resolution's cutoff, as the reviewer.
func supersede(k *Keeper, r *relationship.Relationship, validTo time.Time, caseID conflict.ID) {
	if r == nil || r.Status != relationship.StatusActive {
		return
	}
	k.WS.Updates = append(k.WS.Updates, store.RelationshipUpdate{Team: k.Team, ID: r.ID, ExpectVersion: r.Version,
		Status: relationship.StatusSuperseded, Tier: r.Tier, ValidTo: &validTo, UpdatedAt: k.Now})
	k.WS.Transitions = append(k.WS.Transitions, store.TransitionRow{Team: k.Team, ID: k.NewID("trn"), RelationshipID: r.ID,
		FromStatus: r.Status, ToStatus: relationship.StatusSuperseded, FromTier: r.Tier, ToTier: r.Tier,
		FromValidTo: r.Validity.To, ToValidTo: &validTo, FromVersion: r.Version, ToVersion: r.Version + 1,
		Reason: "conflict_resolved:" + string(caseID), ActorKind: store.ActorSystemConflictReviewer, IngestID: k.IngestID,
		CreatedAt: k.Now})
	k.WS.Refreshes = append(k.WS.Refreshes, store.RefreshRow{Team: k.Team, RelationshipID: r.ID, Reason: "conflict_resolved", CreatedAt: k.Now})
	r.Status, r.Validity.To, r.Version = relationship.StatusSuperseded, &validTo, r.Version+1
}

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
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // run dates use the team's IANA zone even on hosts without a zone database
	"unicode/utf8"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/review"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/failpoint"
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
	// LockedOnly reviews every case the locked way (KeysLock, then WriteSetApply), never planned
	// from the batch's read: the reference the fenced way is tested against.
	LockedOnly bool
	// Hooks are test seams; nil in production.
	Hooks *Hooks
}

// Hooks are the reviewer's test seams.
type Hooks struct {
	// AfterRead runs once per claimed batch, after the batch's keys were read (or would have been),
	// before any of its cases is reviewed.
	AfterRead func(ctx context.Context)
	// Relocked runs when a case planned from the batch's read is reviewed again the locked way.
	Relocked func(id conflict.ID)
	// Together runs after each group of cases written in one transaction (reviewTogether), with
	// the group's size and the transaction's error.
	Together func(cases int, err error)
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
	loc, err := review.TimeZone(tz)
	if err != nil {
		// SetTeamPolicy refuses such a zone; one stored before it did (such as "Local") dates runs in
		// UTC, the same on every machine, never in the zone of the machine that runs the review.
		loc = time.UTC
	}
	l := now.In(loc)
	runDate = time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC)
	next = time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, loc).UTC()
	return runDate, next
}

// teamRun is one worker's review of one team's due cases on one run date.
type teamRun struct {
	cfg  Config
	req  review.Request
	team identity.TeamID
	rep  *review.Report
	// policies holds the team's policy versions read so far by number, the version in force (whose
	// time zone dates the run) first: a case is decided under the version it pinned.
	policies map[int]store.Policy
	preds    []relationship.Predicate
	// now is the run's instant, runDate its date in the team's time zone and next the start of the
	// following day there, when a case kept open is due again.
	now, runDate, next time.Time
	// token is the worker's claim on the cases it reviews.
	token string
	// failures are the pass's first failures, for the run ledger (fail).
	failures []store.NightlyFailure
}

// runTeam is one worker's nightly review of one team, counted in rep.
func runTeam(ctx context.Context, cfg Config, req review.Request, team identity.TeamID, rep *review.Report) error {
	// 1. The team's policy in force and predicates, and the run date in its time zone.
	pol, err := cfg.Store.PolicyGet(ctx, team)
	if err != nil {
		return err
	}
	preds, err := cfg.Store.PredicateList(ctx, team)
	if err != nil {
		return err
	}
	now := cfg.Clock()
	r := &teamRun{cfg: cfg, req: req, team: team, rep: rep, policies: map[int]store.Policy{pol.Version: pol},
		preds: preds, now: now, token: cfg.NewID("clm", now)}
	r.runDate, r.next = runDates(now, pol.TimeZone)
	// 2. Reserve the team's run of the date; only the first worker counts it, every worker reviews.
	reserved, err := cfg.Store.NightlyReserve(ctx, store.NightlyReserveParams{Team: team, RunDate: r.runDate,
		Worker: req.WorkerID, Now: now})
	if err != nil {
		return err
	}
	if reserved {
		rep.Reserved++
	}
	// 3. Escalate the cases out of attempts, review the due ones in claimed batches, escalate again.
	before := *rep
	err = r.escalate(ctx)
	if err == nil {
		err = r.reviewDue(ctx)
	}
	if err == nil {
		err = r.escalate(ctx)
	}
	// 4. Record the pass in the run ledger, its own error among its failures; a pass whose context
	// ended (or that crashed) does not record, and the ledger shows it did not finish.
	if ctx.Err() != nil {
		return err
	}
	return errors.Join(err, r.finish(ctx, before, err))
}

// finish records the pass's outcome, counted in rep since before, in the run date's ledger row (one
// statement), with the pass's error, when it stopped on one, as a failure without a case.
func (r *teamRun) finish(ctx context.Context, before review.Report, stopped error) error {
	// Test seam: a worker that dies before recording its pass leaves it unfinished in the ledger.
	if err := failpoint.Check(ctx, "review.before_finish"); err != nil {
		return err
	}
	if stopped != nil {
		r.fail("", 0, stopped)
	}
	rep := r.rep
	counts := store.NightlyCounts{Claimed: rep.Claimed - before.Claimed, Resolved: rep.Resolved - before.Resolved,
		Dismissed: rep.Dismissed - before.Dismissed, Overdue: rep.Overdue - before.Overdue, KeptOpen: rep.KeptOpen - before.KeptOpen,
		Exhausted: rep.Escalated - before.Escalated, Failed: rep.Failed - before.Failed, Unknown: rep.Unknown - before.Unknown}
	return r.cfg.Store.NightlyFinish(ctx, store.NightlyFinishParams{Team: r.team, RunDate: r.runDate, Now: r.cfg.Clock(),
		Counts: counts, Failures: r.failures})
}

// fail keeps one failure for the run ledger while the pass has kept fewer than the ledger holds: the
// error's text as valid UTF-8 without NUL, cut to store.MaxNightlyErrorBytes.
func (r *teamRun) fail(id conflict.ID, attempt int, err error) {
	if len(r.failures) >= store.MaxNightlyFailures {
		return
	}
	r.failures = append(r.failures, store.NightlyFailure{ConflictID: id, Attempt: attempt, Error: errorText(err)})
}

// errorText is err's text as the ledger keeps it: valid UTF-8 without NUL, at most
// store.MaxNightlyErrorBytes, cut at a character boundary with "…" when longer.
func errorText(err error) string {
	s := strings.ReplaceAll(strings.ToValidUTF8(err.Error(), "\uFFFD"), "\x00", "")
	if len(s) <= store.MaxNightlyErrorBytes {
		return s
	}
	const ellipsis = "…"
	n := store.MaxNightlyErrorBytes - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// escalate marks overdue, once per run date, the cases that used up their attempts.
func (r *teamRun) escalate(ctx context.Context) error {
	n, err := r.cfg.Store.CaseEscalateExhausted(ctx, store.CaseEscalateParams{Team: r.team, Now: r.now, RunDate: r.runDate,
		NextReview: r.next, MaxAttempts: r.cfg.MaxAttempts, Token: r.token})
	r.rep.Escalated += n
	return err
}

// reviewDue claims due cases in batches, up to the request's MaxCases, and reviews each claimed case
// in its own transaction until none is left.
func (r *teamRun) reviewDue(ctx context.Context) error {
	claimedTotal := 0
	for r.req.MaxCases == 0 || claimedTotal < r.req.MaxCases {
		batch := r.cfg.Batch
		if r.req.MaxCases > 0 {
			batch = min(batch, r.req.MaxCases-claimedTotal)
		}
		claimed, err := r.cfg.Store.CaseClaimDue(ctx, store.CaseClaimDueParams{Team: r.team, Now: r.now, RunDate: r.runDate,
			Batch: batch, Lease: r.cfg.Lease, Token: r.token, MaxAttempts: r.cfg.MaxAttempts})
		if err != nil {
			return err
		}
		if len(claimed) == 0 {
			return nil
		}
		claimedTotal += len(claimed)
		r.rep.Claimed += len(claimed)
		// Test seam: a worker that dies right after claiming leaves its claims to expire.
		if err := failpoint.Check(ctx, "review.after_claim"); err != nil {
			return err
		}
		if err := r.readPolicies(ctx, claimed); err != nil {
			return err
		}
		var read *store.KeysLocked
		if !r.cfg.LockedOnly {
			read = r.readKeys(ctx, claimed)
		}
		if r.cfg.Hooks != nil && r.cfg.Hooks.AfterRead != nil {
			r.cfg.Hooks.AfterRead(ctx)
		}
		single, err := r.reviewTogether(ctx, claimed, read)
		if err != nil {
			return err
		}
		for _, c := range single {
			var outcome conflict.Outcome
			pol, ok := r.policies[c.PolicyVersion]
			if !ok {
				err = fmt.Errorf("densemem: nightly review: case %s pinned policy version %d, which the team does not have",
					c.ID, c.PolicyVersion)
			} else {
				outcome, err = reviewClaimed(ctx, r.cfg, pol, r.preds, c, r.token, r.now, r.next, read)
			}
			if err := r.record(ctx, c, outcome, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// togetherMax bounds the cases written in one transaction by reviewTogether: the transaction holds
// their keys' locks until it commits, and a stale fence sends them all back to one by one.
const togetherMax = 32

// plannedReview is a claimed case planned from the batch's read, waiting to be written with others.
type plannedReview struct {
	c       store.ClaimedCase
	fence   store.ReviewFence
	ws      store.WriteSet
	outcome conflict.Outcome
}

// reviewTogether writes the claimed cases it can plan from read (not identity corrections, each on
// a key no other case of the group has) in groups of up to togetherMax, each group in one transaction
// and one round trip behind every case's fence (Tx.ReviewApplyFencedBatch): one commit for many cases
// where each case took its own. Every case's changes still commit together or not at all, as
// DESIGN §7 asks of a case; several cases share the commit. It returns the cases left to review
// one by one (reviewClaimed): those it could not plan, and every case of a group whose transaction
// failed for any reason but an unknown commit (a stale fence, a deadlock): the ones whose read
// still holds are then written behind their own fence, the others under locks.
func (r *teamRun) reviewTogether(ctx context.Context, claimed []store.ClaimedCase, read *store.KeysLocked) ([]store.ClaimedCase, error) {
	var single []store.ClaimedCase
	var planned []plannedReview
	keys := map[conflict.Key]bool{}
	for _, c := range claimed {
		pol, ok := r.policies[c.PolicyVersion]
		if !ok || read == nil || c.Key.Identity() || keys[c.Key] {
			single = append(single, c)
			continue
		}
		// The fence first: the ledger decides on kl's rows in place.
		kl := read.ForKey(c.Key, c.ID)
		fence := store.NewReviewFence(c.Key, c.ID, kl)
		l, outcome, err := decideCase(r.cfg, pol, r.preds, c, r.token, r.now, r.next, kl)
		if err != nil {
			single = append(single, c)
			continue
		}
		keys[c.Key] = true
		planned = append(planned, plannedReview{c: c, fence: fence, ws: l.WS, outcome: outcome})
	}
	for len(planned) > 0 {
		group := planned[:min(len(planned), togetherMax)]
		planned = planned[len(group):]
		if len(group) == 1 {
			single = append(single, group[0].c)
			continue
		}
		failed, err := r.writeTogether(ctx, group)
		if err != nil {
			return nil, err
		}
		single = append(single, failed...)
	}
	return single, nil
}

// writeTogether writes group in one transaction and records each case's outcome; it returns the
// cases to review one by one when the transaction failed (an unknown commit is recorded as such for
// every case of the group, as one case's would be).
func (r *teamRun) writeTogether(ctx context.Context, group []plannedReview) ([]store.ClaimedCase, error) {
	fences, sets := make([]store.ReviewFence, len(group)), make([]store.WriteSet, len(group))
	for i, p := range group {
		fences[i], sets[i] = p.fence, p.ws
	}
	err := r.cfg.Store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.ReviewApplyFencedBatch(ctx, fences, sets)
	})
	if r.cfg.Hooks != nil && r.cfg.Hooks.Together != nil {
		r.cfg.Hooks.Together(len(group), err)
	}
	if err != nil && !errors.Is(err, store.ErrCommitUnknown) {
		out := make([]store.ClaimedCase, len(group))
		for i, p := range group {
			out[i] = p.c
		}
		return out, nil
	}
	for _, p := range group {
		if err := r.record(ctx, p.c, p.outcome, err); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// readPolicies reads, in one round trip, the policy versions the claimed cases pinned that the run
// has not read yet; none when every case pinned one already read (the version in force, usually).
func (r *teamRun) readPolicies(ctx context.Context, claimed []store.ClaimedCase) error {
	var missing []int
	for _, c := range claimed {
		if _, ok := r.policies[c.PolicyVersion]; !ok && !slices.Contains(missing, c.PolicyVersion) {
			missing = append(missing, c.PolicyVersion)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	pols, err := r.cfg.Store.PolicyVersions(ctx, r.team, missing)
	if err != nil {
		return err
	}
	for _, p := range pols {
		r.policies[p.Version] = p
	}
	return nil
}

// readKeys reads, in one round trip and without locks, the keys and cases of the claimed cases a
// review can plan from that read (every kind but identity corrections, whose members lie on other
// keys): each is then reviewed in one round trip, fenced (reviewClaimed). It returns nil when there
// are none or the read failed; every case is then reviewed the locked way.
func (r *teamRun) readKeys(ctx context.Context, claimed []store.ClaimedCase) *store.KeysLocked {
	p := store.KeysLockParams{Team: r.team, LiveOnly: true}
	for _, c := range claimed {
		if !c.Key.Identity() {
			p.Keys, p.Cases = append(p.Keys, c.Key), append(p.Cases, c.ID)
		}
	}
	if len(p.Keys) == 0 {
		return nil
	}
	kl, err := r.cfg.Store.KeysRead(ctx, p)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.WarnContext(ctx, "densemem: nightly review: reading the claimed cases' keys failed; reviewing them with locks",
				"team", r.team, "error", err)
		}
		return nil
	}
	return &kl
}

// record counts one case's review in the report. It returns an error only when the run must stop
// (its context ended); a case that failed or was lost is counted, logged, and left to a later run.
func (r *teamRun) record(ctx context.Context, c store.ClaimedCase, outcome conflict.Outcome, err error) error {
	switch {
	case errors.Is(err, errLost):
		// Another worker or a lifecycle change (a forget that dismissed the case) got there first.
		r.rep.Lost++
		return nil
	case errors.Is(err, store.ErrCommitUnknown):
		// The COMMIT left but its answer did not come back: the case is reviewed completely or not
		// at all, and which is unknown here. Not settled by a read: the COMMIT may still be arriving.
		r.rep.Unknown++
		r.rep.UnknownCaseIDs = append(r.rep.UnknownCaseIDs, c.ID)
		r.fail(c.ID, c.Attempts, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.cfg.Logger.WarnContext(ctx, "densemem: nightly review of a case has an unknown outcome", "team", r.team,
			"conflict_id", c.ID, "attempt", c.Attempts, "error", err)
		return nil
	case err != nil:
		r.rep.Failed++
		r.fail(c.ID, c.Attempts, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The claim is kept until its lease expires: the case stays due and unresolved, and a later
		// run retries it (the lease is the backoff), within the day's attempts.
		r.cfg.Logger.WarnContext(ctx, "densemem: nightly review of a case failed", "team", r.team, "conflict_id", c.ID,
			"attempt", c.Attempts, "error", err)
		return nil
	}
	switch outcome {
	case conflict.OutcomeResolve:
		r.rep.Resolved++
	case conflict.OutcomeOverdue:
		r.rep.Overdue++
	case conflict.OutcomeDismiss:
		r.rep.Dismissed++
	default:
		r.rep.KeptOpen++
	}
	return nil
}

// reviewClaimed reviews one claimed case. When read (readKeys) holds its key, the review is planned
// from it and written in one round trip behind a fence that checks, under the locks reviewCase
// takes, that nothing the plan read has changed (Tx.ReviewApplyFenced, decision 124); when the
// fence fails, or read does not hold the key or the claim, the case is reviewed the locked way.
// Both ways decide with the same code (decideCase) on the same rows, so they write the same.
func reviewClaimed(ctx context.Context, cfg Config, pol store.Policy, preds []relationship.Predicate, c store.ClaimedCase,
	token string, now, next time.Time, read *store.KeysLocked) (conflict.Outcome, error) {
	if read == nil || c.Key.Identity() {
		return reviewCase(ctx, cfg, pol, preds, c, token, now, next)
	}
	kl := read.ForKey(c.Key, c.ID)
	fence := store.NewReviewFence(c.Key, c.ID, kl)
	l, outcome, err := decideCase(cfg, pol, preds, c, token, now, next, kl)
	if err != nil {
		// The read saw the case claimed by another worker, closed, or not at all: the locked
		// review says which, under the locks.
		return reviewCase(ctx, cfg, pol, preds, c, token, now, next)
	}
	err = cfg.Store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.ReviewApplyFenced(ctx, fence, l.WS)
	})
	if errors.Is(err, store.ErrStaleVersion) {
		if cfg.Hooks != nil && cfg.Hooks.Relocked != nil {
			cfg.Hooks.Relocked(c.ID)
		}
		return reviewCase(ctx, cfg, pol, preds, c, token, now, next)
	}
	return outcome, err
}

// reviewCase evaluates one claimed case in one transaction fenced by the claim token: it reloads the
// key's relationships, supports and the case under the global lock order, and the ledger repairs
// membership and applies the resolution policy's decision (resolve, overdue, dismiss or keep open).
// pol is the policy version the case pinned: it counts the supports' authority and is the version
// the decision and every event of the review record (DESIGN §7 "Timing", decision 72).
func reviewCase(ctx context.Context, cfg Config, pol store.Policy, preds []relationship.Predicate, c store.ClaimedCase,
	token string, now, next time.Time) (conflict.Outcome, error) {
	keys := []conflict.Key{c.Key}
	if c.Key.Identity() {
		more, err := memberKeys(ctx, cfg, c)
		if err != nil {
			return "", err
		}
		keys = append(keys, more...)
	}
	var outcome conflict.Outcome
	err := cfg.Store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: c.Key.Team, Keys: keys,
			Cases: []conflict.ID{c.ID}, Members: c.Key.Identity(), LiveOnly: true})
		if err != nil {
			return err
		}
		var l *ledger.Ledger
		l, outcome, err = decideCase(cfg, pol, preds, c, token, now, next, kl)
		if err != nil {
			return err
		}
		return tx.WriteSetApply(ctx, l.WS)
	})
	return outcome, err
}

// memberKeys reads, before the review's transaction and without locks, the keys of an identity case's
// current members (they lie on other keys than the case's): the review locks them with the case's
// key, in the writers' order, so a loser it supersedes is changed under its key's lock and the
// owners' statements held against it are asked their new question in the same transaction (DESIGN
// §6.7). A member that joins meanwhile is still locked by row (KeysLockParams.Members).
func memberKeys(ctx context.Context, cfg Config, c store.ClaimedCase) ([]conflict.Key, error) {
	read, err := cfg.Store.KeysRead(ctx, store.KeysLockParams{Team: c.Key.Team, Keys: []conflict.Key{c.Key},
		Cases: []conflict.ID{c.ID}, LiveOnly: true})
	if err != nil {
		return nil, err
	}
	var ids []relationship.ID
	for _, cs := range read.Cases {
		if cs.ID == c.ID {
			for _, m := range cs.Members {
				ids = append(ids, m.Relationship)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	details, err := cfg.Store.RecallDetails(ctx, store.RecallDetailsParams{Team: c.Key.Team, Relationships: ids})
	if err != nil {
		return nil, err
	}
	var keys []conflict.Key
	for _, v := range details.Views {
		r := v.Relationship
		k := conflict.Key{Team: c.Key.Team, Subject: r.Subject, PredicateKey: r.PredicateKey, Scope: r.Scope}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// decideCase loads kl, the case's key as read, into a ledger and takes the review's decision on it
// (ledger.Review with conflict.Decide, or conflict.DecideIdentity about the case's subject for an
// identity correction), returning the ledger holding the rows to write. errLost when the case is not
// live under this worker's claim.
func decideCase(cfg Config, pol store.Policy, preds []relationship.Predicate, c store.ClaimedCase,
	token string, now, next time.Time, kl store.KeysLocked) (*ledger.Ledger, conflict.Outcome, error) {
	l := &ledger.Ledger{Team: c.Key.Team, Actor: ledger.ReviewerActor, IngestID: token, Now: now, Policy: pol,
		NewID: func(prefix string) string { return cfg.NewID(prefix, now) }}
	l.Load(kl, preds)
	cs := l.Case(c.ID)
	if cs == nil || cs.ClaimToken != token || !cs.Status.Live() {
		return nil, "", errLost
	}
	if cs.PolicyVersion != pol.Version {
		// Unreachable: a case's pinned version never changes.
		return nil, "", fmt.Errorf("densemem: nightly review: case %s pins policy version %d, not %d", c.ID, cs.PolicyVersion, pol.Version)
	}
	ks := l.Key(c.Key)
	confirmed := confirmedFrom(l, kl.Supports)
	decide := conflict.Decide
	if cs.Kind == conflict.KindIdentityCorrection {
		decide = func(in conflict.PolicyInput) conflict.Decision { return conflict.DecideIdentity(cs.Key.Subject, in) }
	}
	outcome := l.Review(ks, cs, token, next, func(positions []conflict.Position) conflict.Decision {
		return decide(conflict.PolicyInput{Positions: positions, Now: now, OpenedAt: cs.OpenedAt,
			ReviewDueAt: cs.ReviewDueAt, ConfirmedFrom: confirmed, PolicyVersion: pol.Version})
	})
	return l, outcome, nil
}

// confirmedFrom maps each relationship the review loaded (the key's, and an identity case's members
// on other keys) to its valid_from when a verification event of one of its supports confirmed it (the
// policy's evidence time).
func confirmedFrom(l *ledger.Ledger, supports []store.SupportRow) map[relationship.ID]time.Time {
	out := map[relationship.ID]time.Time{}
	for _, s := range supports {
		if r := l.Find(s.RelationshipID); r != nil && evidence.ConfirmsValidFrom(s.ConfirmedFrom, r.Validity.From) {
			out[r.ID] = *r.Validity.From
		}
	}
	return out
}

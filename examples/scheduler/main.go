// Command scheduler shows how a host runs Dense-Mem's nightly Conflict review from its own
// scheduler: two teams in different time zones, several instances of the host calling
// RunNightlyReview at the same moment, and what a host does with the reports and the errors.
//
// Dense-Mem has no scheduler of its own. It owns the durable state that makes calling it from any
// scheduler safe: a durable reservation per team and run date (the date in the team policy's time
// zone), claims taken with FOR UPDATE SKIP LOCKED and held under a lease, and a review of each case in
// one transaction fenced by the claim token, so every case is evaluated once per run date and resolved
// exactly once however many instances call at once.
//
// The program provisions team "berlin" (time zone Europe/Berlin, review TTL 3 days) and team
// "los-angeles" (America/Los_Angeles, 2 days), each through SetTeamPolicy by its vocabulary profile,
// and seeds two conflict cases in each: one the policy can decide, one it cannot. It then simulates
// six days of its scheduler with an injected clock: at 02:00 local time of each team, three instances
// ("instance-1".."instance-3", goroutines here, replicas in production) call RunNightlyReview for
// that team at once. Which instance reserves the run date and which claims which case is up to the
// database and differs from run to run, so the program prints each tick's totals, which do not:
// exactly one reservation per new run date, each due case claimed once. The simulation also has the
// scheduler fire twice on one day, one instance down on another, and a database outage on a third,
// and ends with the reservations taken and every case's final state.
//
// # How a real host does it
//
// Every replica of the host runs the same loop, one per team time zone (a host knows the zones: it
// sets them with SetTeamPolicy), with the real clock:
//
//	loc, err := time.LoadLocation("Europe/Berlin")      // fail at start-up if the zone is unknown
//	for {
//		next := nextRun(time.Now(), loc, 2)              // 02:00 local, below
//		select {
//		case <-ctx.Done():
//			return
//		case <-time.After(time.Until(next)):
//		}
//		rep, err := client.RunNightlyReview(ctx, densemem.NightlyReviewRequest{
//			TeamIDs: berlinTeams, WorkerID: hostname})
//		if err != nil {
//			logger.Error("nightly review failed; the next tick retries", "error", err)
//			continue
//		}
//		logger.Info("nightly review", "resolved", rep.Resolved, "overdue", rep.Overdue, "failed", rep.Failed)
//	}
//
// A cron entry per zone works as well (a Kubernetes CronJob with schedule "0 2 * * *" and
// timeZone "Europe/Berlin", or CRON_TZ=Europe/Berlin in a crontab), as does one job that ticks
// every hour for all teams (TeamIDs empty): a reviewed case is due again from the start of its team's
// next local run date, so any tick after local midnight picks it up (and a new case is due as soon as
// it opens). The local hour only chooses a quiet time.
//
// Nothing needs a leader or a lock in the host:
//
//   - Several replicas may fire at once. The first to reach a team's run date reserves it; the others
//     see the reservation and help claim the remaining due cases. A second firing on the same run date
//     (a restarted replica, a cron daemon that fires twice when 02:00 repeats at the end of summer
//     time) finds nothing due: every evaluated case waits for the next run date.
//   - Claims skip rows other workers hold (FOR UPDATE SKIP LOCKED) and carry a lease (Config.Nightly,
//     5 minutes by default). A replica that dies mid-run leaves its claims to expire; any later run
//     reclaims them. Each case's review commits in one transaction fenced by the claim, so a stale
//     worker cannot resolve a case a second time.
//   - TeamIDs limits a call to the teams of one schedule. Left empty, it reviews every team of the
//     database with due cases; this program always names its teams so that it never touches other
//     runs' teams in a shared database.
//
// Errors: RunNightlyReview returns an error when it cannot work at all (database unreachable,
// context cancelled); log it and let the next tick retry, nothing else. A case whose own review fails
// is counted in Report.Failed and logged by the library through Config.Logger; the worker gives its
// claim back, so the case stays due and unresolved and is tried again on the same run date, up to
// Config.Nightly.MaxAttempts attempts; then it is escalated once (Report.Escalated) and waits for the
// next run date. A case whose review COMMIT was sent but whose answer was lost is counted in
// Report.Unknown instead (its ID in Report.UnknownCaseIDs): it is either reviewed or, like a failed
// one, retried by a later run. Nothing is ever resolved by a fallback, and nobody repairs a case with SQL: an
// operator inspects an overdue case and a team member submits evidence.
//
// Hosts built into minimal images should embed the time zone database (the blank import of
// time/tzdata below), so every replica computes the same run dates.
//
// The database comes from DENSEMEM_DATABASE_URL, else the examples' own database densemem_examples on the
// local server (postgres://postgres@127.0.0.1:5432/densemem_examples), created when missing, else a
// private PostgreSQL in the examples' data directory (as the quickstart says); the program migrates
// it to the library's schema.
// Every run creates fresh teams, so it can run again and again against the same database. The story
// goes to stdout; the host's log goes to stderr, where the simulated failures show up as errors.
//
//	go run ./examples/scheduler
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // every replica must know the teams' zones, whatever its image ships

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/exampledb"
)

const (
	// runHour is the local hour at which the scheduler runs each team's review.
	runHour = 2
	// replicas is how many instances of the host call RunNightlyReview at every tick.
	replicas = 3
)

// The simulation: the cases are seeded at seedHour local time on seedDay, and the scheduler runs
// until (excluding) endDay, both midnight UTC dates of the local calendar.
var (
	seedDay  = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	endDay   = time.Date(2026, 6, 8, 0, 0, 0, 0, time.UTC)
	seedHour = 10
	// The dates the cases' evidence says the branches changed.
	releaseSince = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	mainSince    = time.Date(2026, 5, 20, 0, 0, 0, 0, time.UTC)
)

// teamSpec is one team the host provisions.
type teamSpec struct {
	name string
	zone string
	ttl  time.Duration
}

var teamSpecs = []teamSpec{
	{name: "berlin", zone: "Europe/Berlin", ttl: 3 * 24 * time.Hour},
	{name: "los-angeles", zone: "America/Los_Angeles", ttl: 2 * 24 * time.Hour},
}

// incident is something that happens to the host's instances at one tick of the simulation.
type incident struct {
	team string
	day  time.Time // the local date of the tick, as midnight UTC
	// down lists instances whose call fails (the context is cancelled: a replica restarting, or the
	// database unreachable for all of them); why says so in the output.
	down []string
	why  string
	// again makes the scheduler fire a second time 30 minutes later, on the same run date.
	again bool
}

var incidents = []incident{
	{team: "berlin", day: date(2026, 6, 3), again: true},
	{team: "los-angeles", day: date(2026, 6, 3), down: []string{"instance-2"}, why: "instance-2 is restarting"},
	{team: "berlin", day: date(2026, 6, 5), down: []string{"instance-1", "instance-2", "instance-3"},
		why: "the database is unreachable"},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := run(ctx, os.Stdout, logger, exampledb.URL())
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// simClock is the injected clock every instance reads; only the simulation moves it, and only
// between ticks, but the instances read it from their own goroutines.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// run provisions the teams, seeds the cases and simulates the scheduler against the database at
// dsn, writing the story to w and the host's error log to logger.
func run(ctx context.Context, w io.Writer, logger *slog.Logger, dsn string) error {
	st, done, err := exampledb.Connect(ctx, "scheduler", dsn)
	if err != nil {
		return err
	}
	defer done()

	clock := &simClock{}
	h := &host{w: w, ctx: ctx, log: logger, clock: clock, profiles: map[densemem.ProfileID]string{},
		rels: map[densemem.RelationshipID]relInfo{}}
	// Each instance is its own Client, as each replica of a host would have; here they share one
	// pool, in production each replica opens its own. They all read the same injected clock.
	for i := range replicas {
		c, err := densemem.New(st, &densemem.Config{Clock: clock.Now, Logger: logger})
		if err != nil {
			return err
		}
		h.instances = append(h.instances, instance{id: fmt.Sprintf("instance-%d", i+1), client: c})
	}
	h.client = h.instances[0].client

	h.printf("Dense-Mem: the nightly Conflict review from a host's scheduler\n")
	// The clock only moves forward: berlin is provisioned and seeded on the morning of seedDay, then
	// los-angeles, nine hours later.
	for _, spec := range teamSpecs {
		t, err := h.provision(spec)
		if err != nil {
			return err
		}
		if err := h.seed(t); err != nil {
			return err
		}
	}
	if err := h.simulate(); err != nil {
		return err
	}
	h.reservations()
	return h.finalStates()
}

// host is the program's state: the instances, the teams, and the names it prints instead of IDs.
type host struct {
	w      io.Writer
	ctx    context.Context
	log    *slog.Logger
	clock  *simClock
	client *densemem.Client // for provisioning and reads; any instance would do

	instances []instance
	teams     []*team
	profiles  map[densemem.ProfileID]string
	rels      map[densemem.RelationshipID]relInfo
}

type instance struct {
	id     string
	client *densemem.Client
}

// team is one provisioned team with its writers, its cases and the run dates reserved for it.
type team struct {
	spec              teamSpec
	loc               *time.Location
	id                densemem.TeamID
	alice, bob, carol densemem.Principal
	cases             []*seededCase
	reserved          []time.Time
}

// seededCase is one conflict case the program opened, by name.
type seededCase struct {
	name    string // e.g. "berlin/production"
	id      string
	subject string
	member  densemem.RelationshipID // a relationship of the case, to trace it
	loser   densemem.RelationshipID // the relationship the policy may supersede
}

type relInfo struct {
	name   string // «production deploys_from main» owned by alice
	object string // main
	owner  string // alice
}

func (h *host) printf(format string, args ...any) { fmt.Fprintf(h.w, format, args...) }

// provision creates a team with a vocabulary admin and three writers, sets its policy (time zone
// and review TTL) and registers deploys_from.
func (h *host) provision(spec teamSpec) (*team, error) {
	loc, err := time.LoadLocation(spec.zone)
	if err != nil {
		return nil, err
	}
	t := &team{spec: spec, loc: loc}
	h.clock.Set(time.Date(seedDay.Year(), seedDay.Month(), seedDay.Day(), 8, 0, 0, 0, loc))
	if t.id, err = h.client.CreateTeam(h.ctx, densemem.CreateTeamRequest{Name: spec.name}); err != nil {
		return nil, err
	}
	admin, err := h.profile(t, "admin", "read", "vocabulary")
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		name string
		to   *densemem.Principal
	}{{"alice", &t.alice}, {"bob", &t.bob}, {"carol", &t.carol}} {
		if *p.to, err = h.profile(t, p.name, "read", "write"); err != nil {
			return nil, err
		}
	}
	// SetTeamPolicy appends a whole new policy version from the version in force (a concurrent change
	// from the same version would fail with ErrStaleVersion): read it, change what differs, set it.
	pol, err := h.client.TeamPolicy(h.ctx, admin)
	if err != nil {
		return nil, err
	}
	pol.ReviewTTL, pol.TimeZone = spec.ttl, spec.zone
	if pol, err = h.client.SetTeamPolicy(h.ctx, admin, pol); err != nil {
		return nil, err
	}
	if _, err := h.client.RegisterPredicate(h.ctx, admin, densemem.PredicateDefinition{
		Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"},
		SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"},
		Description: "the git branch an environment deploys from",
	}); err != nil {
		return nil, err
	}
	h.printf("\n[%s] team %q: admin sets policy v%d: time zone %s, review TTL %d days; alice, bob, carol write\n",
		h.local(t, h.clock.Now()), spec.name, pol.Version, pol.TimeZone, int(pol.ReviewTTL/(24*time.Hour)))
	h.teams = append(h.teams, t)
	return t, nil
}

func (h *host) profile(t *team, name string, scopes ...densemem.Scope) (densemem.Principal, error) {
	id, err := h.client.CreateProfile(h.ctx, t.id, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
	h.profiles[id] = name
	return densemem.Principal{TeamID: t.id, ProfileID: id}, err
}

// seed opens two cases in the team at seedHour local time. production: alice's undated main
// against dated release evidence; staging: alice's develop against bob's dated main, one source
// group each, which no floor can decide.
//
// In berlin, release has bob's and carol's evidence, 2 groups of 3: too few before the deadline,
// enough after it. In los-angeles, bob's release rests on four independent sources, 4 groups of 5
// (80%): the pre-deadline floor (at least 4 groups and more than 75%) resolves it at the first run.
func (h *host) seed(t *team) error {
	at := time.Date(seedDay.Year(), seedDay.Month(), seedDay.Day(), seedHour, 0, 0, 0, t.loc)
	h.clock.Set(at)
	h.printf("[%s] %s: two conflict cases are opened\n", h.local(t, at), t.spec.name)

	prod := &seededCase{name: t.spec.name + "/production", subject: "production"}
	mainRel, err := h.remember(t.alice, "alice-production", "production", "main", nil,
		evidenceItem{"Production deploys from main.", ""})
	if err != nil {
		return err
	}
	prod.loser = mainRel.RelationshipID
	var release *densemem.RelationshipOutcome
	if t.spec.name == "los-angeles" {
		release, err = h.remember(t.bob, "bob-production", "production", "release", &releaseSince,
			evidenceItem{"Since 2026-05-01 production deploys from release.", "chat"},
			evidenceItem{"Pipeline config, environment production: deploys from branch release.", "pipeline-config"},
			evidenceItem{"Release notes 2026-05-01: production now deploys from release.", "release-notes"},
			evidenceItem{"Deploy log: production deployed from release, 14 times since 2026-05-01.", "deploy-log"})
	} else {
		release, err = h.remember(t.bob, "bob-production", "production", "release", &releaseSince,
			evidenceItem{"Since 2026-05-01 production deploys from release.", ""})
	}
	if err != nil {
		return err
	}
	if release.Conflict == nil {
		return fmt.Errorf("scheduler: bob's production evidence opened no case in %s", t.spec.name)
	}
	prod.id, prod.member = release.Conflict.ConflictID, release.RelationshipID
	if t.spec.name == "berlin" {
		if _, err := h.remember(t.carol, "carol-production", "production", "release", &releaseSince,
			evidenceItem{"Checked the pipeline: since 2026-05-01 production deploys from release.", ""}); err != nil {
			return err
		}
	}

	staging := &seededCase{name: t.spec.name + "/staging", subject: "staging"}
	develop, err := h.remember(t.alice, "alice-staging", "staging", "develop", nil,
		evidenceItem{"Staging deploys from develop.", ""})
	if err != nil {
		return err
	}
	staging.loser = develop.RelationshipID
	smain, err := h.remember(t.bob, "bob-staging", "staging", "main", &mainSince,
		evidenceItem{"Since 2026-05-20 staging deploys from main.", ""})
	if err != nil {
		return err
	}
	if smain.Conflict == nil {
		return fmt.Errorf("scheduler: bob's staging evidence opened no case in %s", t.spec.name)
	}
	staging.id, staging.member = smain.Conflict.ConflictID, smain.RelationshipID
	t.cases = append(t.cases, prod, staging)

	for _, c := range t.cases {
		tc, err := h.traceCase(t, c)
		if err != nil {
			return err
		}
		h.printf("  case %s: %s, version %d, review due %s\n", c.name, tc.Status, tc.Version, h.local(t, tc.ReviewDueAt))
	}
	return nil
}

type evidenceItem struct{ content, sourceGroup string }

// remember remembers that subject deploys_from branch for p, citing every evidence item whole, and
// prints the outcome.
func (h *host) remember(p densemem.Principal, key, subject, branch string, validFrom *time.Time,
	items ...evidenceItem) (*densemem.RelationshipOutcome, error) {
	req := densemem.RememberRequest{IdempotencyKey: key, Proposal: densemem.Proposal{
		Entities: []densemem.ProposedEntity{
			{Ref: "env", Name: subject, EntityKind: "environment"},
			{Ref: "branch", Name: branch, EntityKind: "git_branch", IdentityContext: map[string]string{"repository": "Dense-Mem"}},
		},
	}}
	rel := densemem.ProposedRelationship{ProposalID: "deploy", SubjectRef: "env", Predicate: "deploys from",
		ObjectRef: "branch", ValidFrom: validFrom}
	for i, it := range items {
		req.Evidence = append(req.Evidence, densemem.EvidenceInput{Content: it.content, SourceType: "manual",
			SourceGroup: it.sourceGroup})
		rel.Evidence = append(rel.Evidence, densemem.Citation{EvidenceIndex: i, Start: 0, End: len(it.content)})
	}
	req.Proposal.Relationships = []densemem.ProposedRelationship{rel}
	pl, err := h.client.Remember(h.ctx, p, req)
	if err != nil {
		return nil, err
	}
	out := pl.RelationshipOutcomes[0]
	who := h.profiles[p.ProfileID]
	if out.RelationshipID != "" {
		h.rels[out.RelationshipID] = relInfo{name: fmt.Sprintf("«%s deploys_from %s» owned by %s", subject, branch, who),
			object: branch, owner: who}
	}
	h.printf("  %s: %s deploys_from %s", who, subject, branch)
	if validFrom != nil {
		h.printf(" since %s", day(*validFrom))
	}
	h.printf(" (%d evidence item(s)): %s, tier %s", len(items), out.Category, out.Tier)
	for _, x := range out.CrossReferences {
		h.printf(", %s %s's", x.Kind, h.rels[x.ToRelationshipID].owner)
	}
	h.printf("\n")
	return &out, nil
}

// tick is one firing of the scheduler for one team.
type tick struct {
	team *team
	at   time.Time
}

// simulate runs the scheduler from the day after seeding until endDay: for each team the next tick
// is the next runHour:00 in its zone, and ticks of all teams run in time order.
func (h *host) simulate() error {
	h.printf("\nThe scheduler: %d instances call RunNightlyReview at %02d:00 local time of each team.\n"+
		"Which instance reserves a run date or claims a case varies from run to run; the totals do not.\n", replicas, runHour)
	next := map[*team]time.Time{}
	for _, t := range h.teams {
		next[t] = nextRun(time.Date(seedDay.Year(), seedDay.Month(), seedDay.Day(), 23, 0, 0, 0, t.loc), t.loc, runHour)
	}
	for {
		var k *tick
		for _, t := range h.teams {
			if k == nil || next[t].Before(k.at) {
				k = &tick{team: t, at: next[t]}
			}
		}
		if !localDate(k.at, k.team.loc).Before(endDay) {
			return nil
		}
		inc := h.incident(k)
		if err := h.fire(k, inc, false); err != nil {
			return err
		}
		if inc.again {
			if err := h.fire(&tick{team: k.team, at: k.at.Add(30 * time.Minute)}, incident{}, true); err != nil {
				return err
			}
		}
		next[k.team] = nextRun(k.at, k.team.loc, runHour)
	}
}

func (h *host) incident(k *tick) incident {
	for _, inc := range incidents {
		if inc.team == k.team.spec.name && inc.day.Equal(localDate(k.at, k.team.loc)) {
			return inc
		}
	}
	return incident{}
}

// result is one instance's call.
type result struct {
	rep *densemem.NightlyReviewReport
	err error
}

// fire moves the clock to the tick and has every instance call RunNightlyReview for the team at
// once, then prints the tick's totals. Instances the incident takes down call with a cancelled
// context, as a replica shutting down or a database that cannot be reached would fail.
func (h *host) fire(k *tick, inc incident, again bool) error {
	t := k.team
	h.clock.Set(k.at)
	runDate := localDate(k.at, t.loc)
	// 1. Announce the tick.
	h.announce(k, runDate, inc, again)
	// 2. Every instance calls at once.
	results := h.callAll(t, inc)
	// 3. Add up the reports; an instance that failed unexpectedly, or ran although down, stops the run.
	sum, failed, err := h.tally(k, inc, results)
	if err != nil {
		return err
	}
	// 4. At most one instance reserved the run date.
	if sum.Reserved > 1 {
		return fmt.Errorf("scheduler: %d instances reserved run date %s of %s", sum.Reserved, day(runDate), t.spec.name)
	}
	if sum.Reserved == 1 {
		t.reserved = append(t.reserved, runDate)
	}
	// 5. Print the tick's totals.
	h.printTotals(sum, failed)
	return nil
}

// announce prints the tick's header line: the team, its local time and run date, and why the tick
// is special, if it is.
func (h *host) announce(k *tick, runDate time.Time, inc incident, again bool) {
	t := k.team
	h.printf("%-11s %s, run date %s", t.spec.name, h.local(t, k.at), day(runDate))
	switch {
	case again:
		h.printf(", the scheduler fires again")
	case inc.why != "":
		h.printf(", %s", inc.why)
	}
	h.printf("\n")
}

// callAll has every instance call RunNightlyReview for team t at once and returns their results in
// the order of h.instances. The instances inc takes down call with a cancelled context.
func (h *host) callAll(t *team, inc incident) []result {
	down, stop := context.WithCancel(h.ctx)
	stop()
	results := make([]result, len(h.instances))
	var wg sync.WaitGroup
	for i, in := range h.instances {
		ctx := h.ctx
		if slices.Contains(inc.down, in.id) {
			ctx = down
		}
		wg.Go(func() {
			rep, err := in.client.RunNightlyReview(ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{t.id},
				WorkerID: in.id})
			results[i] = result{rep, err}
		})
	}
	wg.Wait()
	return results
}

// tally logs the instances that failed and adds up the reports of the others. It returns an error
// when an instance failed that the incident did not take down, or one the incident took down ran.
func (h *host) tally(k *tick, inc incident, results []result) (densemem.NightlyReviewReport, []string, error) {
	var sum densemem.NightlyReviewReport
	var failed []string
	for i, r := range results {
		id := h.instances[i].id
		if r.err != nil {
			// A real host logs and moves on: whatever this instance did not do stays due, and the
			// other instances or the next tick do it.
			h.log.Error("nightly review failed; the next tick retries", "instance", id, "team", k.team.spec.name,
				"tick", k.at, "error", r.err)
			failed = append(failed, id)
			if !slices.Contains(inc.down, id) {
				return sum, failed, fmt.Errorf("scheduler: %s failed at %s: %w", id, k.at, r.err)
			}
			continue
		}
		if slices.Contains(inc.down, id) {
			return sum, failed, fmt.Errorf("scheduler: %s ran although it was down", id)
		}
		addReport(&sum, r.rep)
	}
	return sum, failed, nil
}

// addReport adds the counts of rep to sum.
func addReport(sum, rep *densemem.NightlyReviewReport) {
	sum.Reserved += rep.Reserved
	sum.Claimed += rep.Claimed
	sum.Resolved += rep.Resolved
	sum.Overdue += rep.Overdue
	sum.Dismissed += rep.Dismissed
	sum.KeptOpen += rep.KeptOpen
	sum.Failed += rep.Failed
	sum.Escalated += rep.Escalated
}

// printTotals prints how many instances ran, who reserved the run date, and what the claims did.
func (h *host) printTotals(sum densemem.NightlyReviewReport, failed []string) {
	ok := len(h.instances) - len(failed)
	h.printf("  %d of %d instance(s) ran", ok, len(h.instances))
	if len(failed) > 0 {
		h.printf(" (%s failed: logged, retried at the next tick)", strings.Join(failed, ", "))
	}
	switch {
	case ok == 0:
		h.printf("; nothing reserved, nothing claimed: the due cases stay due\n")
		return
	case sum.Reserved == 1:
		h.printf("; one reserved the run date, %d helped\n", ok-1)
	default:
		h.printf("; the run date was reserved already\n")
	}
	h.printf("  claimed %d: resolved %d, overdue %d, dismissed %d, kept open %d, failed %d, escalated %d\n",
		sum.Claimed, sum.Resolved, sum.Overdue, sum.Dismissed, sum.KeptOpen, sum.Failed, sum.Escalated)
}

// reservations prints the run dates reserved per team: one per team and run date, whichever
// instance came first.
func (h *host) reservations() {
	h.printf("\nRun dates reserved (one per team and run date, by whichever instance came first)\n")
	for _, t := range h.teams {
		days := make([]string, len(t.reserved))
		for i, d := range t.reserved {
			days[i] = day(d)
		}
		h.printf("  %-11s %s\n", t.spec.name, strings.Join(days, ", "))
	}
}

// finalStates prints every case as Trace shows it, the resolution's effective time as recall's
// resolved_conflict reference shows it, and the state of the relationship the policy may supersede.
func (h *host) finalStates() error {
	h.printf("\nFinal states\n")
	for _, t := range h.teams {
		h.clock.Set(time.Date(endDay.Year(), endDay.Month(), endDay.Day(), 9, 0, 0, 0, t.loc))
		for _, c := range t.cases {
			tc, err := h.traceCase(t, c)
			if err != nil {
				return err
			}
			h.printf("  case %s: %s, version %d, review due %s", c.name, tc.Status, tc.Version, h.local(t, tc.ReviewDueAt))
			if tc.ResolvedAt != nil {
				h.printf(", resolved %s", h.local(t, *tc.ResolvedAt))
			}
			h.printf("\n")
			if tc.Status == "resolved" {
				for _, p := range tc.Positions {
					if p.PositionID == tc.PreferredPositionID && len(p.Members) > 0 {
						h.printf("    preferred %q", h.rels[p.Members[0].RelationshipID].object)
					}
				}
				ref, err := h.resolvedRef(t, c)
				if err != nil {
					return err
				}
				h.printf(", effective_at %s (%s)\n", optDay(ref.EffectiveAt), ref.EffectiveTimeBasis)
			}
			if tc.Status == "overdue" {
				h.printf("    no position qualifies: no invented winner; reviewed again every run date until evidence decides\n")
			}
			for _, e := range tc.Events {
				actor := e.ActorKind
				if name, ok := h.profiles[e.ActorProfileID]; ok {
					actor = name
				}
				h.printf("    v%d %s: %s by %s\n", e.CaseVersion, e.ResultingStatus, e.Reason, actor)
			}
			tr, err := h.client.Trace(h.ctx, t.alice, densemem.TraceRequest{RelationshipID: c.loser})
			if err != nil {
				return err
			}
			r := tr.Relationship
			h.printf("    %s: %s, valid %s .. %s\n", h.rels[c.loser].name, r.Status, optDay(r.ValidFrom), optDay(r.ValidTo))
		}
	}
	return nil
}

// traceCase returns the case as Trace of one of its relationships shows it.
func (h *host) traceCase(t *team, c *seededCase) (*densemem.TraceConflict, error) {
	tr, err := h.client.Trace(h.ctx, t.alice, densemem.TraceRequest{RelationshipID: c.member})
	if err != nil {
		return nil, err
	}
	for i := range tr.Conflicts {
		if tr.Conflicts[i].ConflictID == c.id {
			return &tr.Conflicts[i], nil
		}
	}
	return nil, fmt.Errorf("scheduler: trace does not show case %s", c.name)
}

// resolvedRef returns the resolved_conflict reference recall attaches to the case's preferred
// results. Trace's case view has no effective time; recall's reference has it.
func (h *host) resolvedRef(t *team, c *seededCase) (*densemem.ResolvedConflictRef, error) {
	res, err := h.client.Recall(h.ctx, t.alice, densemem.RecallRequest{Query: c.subject + " deploys from"})
	if err != nil {
		return nil, err
	}
	for _, r := range res.Results {
		if r.ResolvedConflict != nil && r.ResolvedConflict.ConflictID == c.id {
			return r.ResolvedConflict, nil
		}
	}
	return nil, fmt.Errorf("scheduler: recall shows no resolved_conflict reference for case %s", c.name)
}

// nextRun returns the first hour:00 in loc strictly after now: the next firing of a daily local
// schedule. On the day summer time starts, hour:00 may not exist (02:00 in Europe/Berlin on the last
// Sunday of March): time.Date then returns a time on the far side of the gap, still that day (03:00
// CEST). On the day it ends, hour:00 may happen twice (02:00 on the last Sunday of October): time.Date
// picks one of them (the second, 02:00 CET), so the schedule fires once. A cron daemon may choose
// differently; the review is safe either way, since a second run on a run date finds nothing due and a skipped day's cases stay due.
func nextRun(now time.Time, loc *time.Location, hour int) time.Time {
	l := now.In(loc)
	t := time.Date(l.Year(), l.Month(), l.Day(), hour, 0, 0, 0, loc)
	if !t.After(now) {
		t = time.Date(l.Year(), l.Month(), l.Day()+1, hour, 0, 0, 0, loc)
	}
	return t
}

// localDate returns the date of t in loc as midnight UTC: the run date of a review at t.
func localDate(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return date(l.Year(), l.Month(), l.Day())
}

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// local formats t in the team's zone with its UTC time.
func (h *host) local(t *team, at time.Time) string {
	return fmt.Sprintf("%s (%s UTC)", at.In(t.loc).Format("Mon 2006-01-02 15:04 MST"), at.UTC().Format("01-02 15:04"))
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func optDay(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return day(*t)
}

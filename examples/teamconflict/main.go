// Command teamconflict tells the specification's "Stale team knowledge" story against a real
// PostgreSQL: alice records that production deploys from main; months later the business switches to
// release, and bob submits dated evidence of it. bob's placement writes his own relationship, a
// corrects cross-reference to alice's and an open team conflict case, and leaves alice's relationship
// exactly as it was. carol recalls and sees both positions and the question to answer; she answers
// with her own evidence, which confirms bob's position and moves the case to its next version. A
// recall with known_at before bob's correction reconstructs the old view, one with valid_at before
// the business change shows what was true then, and Trace shows alice's relationship with the
// cross-references and the case events that concern it.
//
// Resolving the case is the nightly review's, and the story goes on through it. The host runs
// RunNightlyReview before the deadline: bob's side has 2 of 3 independent source groups, short of the
// pre-deadline floor (at least 4 groups and more than 75%), so the case stays open. After
// review_due_at (the team policy's 7 days) the lower floor applies (at least 2 groups and more than
// 50%): the next run resolves the case for release, supersedes alice's relationship with valid_to at
// the evidence-supported cutoff (2026-05-01), and records it all as system_conflict_reviewer. Then the
// three views again: the current one (release, with a resolved_conflict reference; main is gone),
// valid_at before the cutoff (main, which was true then and is not current) and known_at before bob's correction (main,
// no conflict), and Trace of alice's relationship with its whole lineage.
//
// The database comes from DENSEMEM_DATABASE_URL, else the examples' own database densemem_examples on the
// local server (postgres://postgres@127.0.0.1:5432/densemem_examples), created when missing, else a
// private PostgreSQL in the examples' data directory (as the quickstart says); the program migrates
// it to the library's schema.
// Every run creates a fresh team, so it can run again and again against the same database. The
// client's clock is injected and moved by the story, so the output is the same on every run.
//
//	go run ./examples/teamconflict
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/exampledb"
)

const (
	// query is what carol asks.
	query = "production deploys from"
)

// The story's times: t0 alice's rule, t1 the business change nobody told Dense-Mem about, t2 bob's
// correction.
var (
	t0 = time.Date(2025, 12, 1, 9, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	t2 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
)

// The host's nightly review runs at 02:00 in the team's time zone (the default, UTC): once three days
// after bob's correction, before the case's review_due_at (t2 + 7 days), and once after it.
var (
	firstNightly  = time.Date(2026, 6, 4, 2, 0, 0, 0, time.UTC)
	secondNightly = time.Date(2026, 6, 9, 2, 0, 0, 0, time.UTC)
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, exampledb.URL())
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run tells the story against the database at dsn and writes it to w.
func run(ctx context.Context, w io.Writer, dsn string) error {
	st, done, err := exampledb.Connect(ctx, "teamconflict", dsn)
	if err != nil {
		return err
	}
	defer done()

	// The story's clock: every recorded time comes from it, and only the story moves it.
	now := t0
	clock := func() time.Time { return now }
	client, err := densemem.New(st, &densemem.Config{Clock: clock, // Verifier: the default SpanVerifier
		Nightly: densemem.NightlyConfig{Store: exampledb.Reviewer(st)}}) // the reviewer role's store, where there is one
	if err != nil {
		return err
	}
	s := &story{w: w, ctx: ctx, client: client, clock: clock,
		profiles: map[densemem.ProfileID]string{}, rels: map[densemem.RelationshipID]string{}}
	for _, step := range []struct {
		at  time.Time
		run func() error
	}{
		{t0, s.setUp},
		{t0.Add(5 * time.Minute), s.record},
		{t2, s.correct},
		{t2.Add(25 * time.Hour), s.recallOpen},
		{t2.Add(25*time.Hour + 10*time.Minute), s.confirm},
		{t2.Add(48 * time.Hour), s.timeTravel},
		{t2.Add(48*time.Hour + 10*time.Minute), s.trace},
		{firstNightly, s.nightlyBeforeDeadline},
		{firstNightly.Add(5 * time.Minute), s.nightlyAgain},
		{secondNightly, s.nightlyAfterDeadline},
		{secondNightly.Add(8 * time.Hour), s.viewsAfterResolution},
		{secondNightly.Add(8*time.Hour + 10*time.Minute), s.traceAfterResolution},
	} {
		now = step.at
		if err := step.run(); err != nil {
			return err
		}
	}
	return nil
}

// story holds what the steps share. IDs are generated with random bits, so the story prints names:
// profiles and rels map IDs to the names shown instead, and the one conflict case is <conflict>.
type story struct {
	w      io.Writer
	ctx    context.Context
	client *densemem.Client
	clock  func() time.Time

	team              densemem.TeamID
	alice, bob, carol densemem.Principal
	profiles          map[densemem.ProfileID]string
	rels              map[densemem.RelationshipID]string
	main, release     densemem.RelationshipID // alice's main, bob's release
	caseID            string
	caseVersionRead   int // the case version carol read
}

func (s *story) printf(format string, args ...any) { fmt.Fprintf(s.w, format, args...) }

// setUp provisions a team with a vocabulary admin and three writers and registers deploys_from.
func (s *story) setUp() error {
	s.printf("Dense-Mem: stale team knowledge (t0 %s, t1 %s, t2 %s)\n\n", day(t0), day(t1), day(t2))
	var err error
	if s.team, err = s.client.CreateTeam(s.ctx, densemem.CreateTeamRequest{Name: "acme"}); err != nil {
		return err
	}
	admin, err := s.profile("admin", "read", "vocabulary")
	if err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		to   *densemem.Principal
	}{{"alice", &s.alice}, {"bob", &s.bob}, {"carol", &s.carol}} {
		if *p.to, err = s.profile(p.name, "read", "write"); err != nil {
			return err
		}
	}
	def, err := s.client.RegisterPredicate(s.ctx, admin, densemem.PredicateDefinition{
		Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"},
		SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"},
		Description: "the git branch an environment deploys from",
	})
	if err != nil {
		return err
	}
	s.printf("Team \"acme\": admin (read, vocabulary); alice, bob, carol (read, write)\n")
	s.printf("admin registered %s v%d: %s, current_cardinality %s\n", def.Key, def.Version, def.RelationshipKind,
		def.CurrentCardinality)
	return nil
}

func (s *story) profile(name string, scopes ...densemem.Scope) (densemem.Principal, error) {
	id, err := s.client.CreateProfile(s.ctx, s.team, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
	s.profiles[id] = name
	return densemem.Principal{TeamID: s.team, ProfileID: id}, err
}

// remember remembers "<content>" for p as production deploys_from branch, optionally dated and
// answering a conflict case, and prints the outcome.
func (s *story) remember(p densemem.Principal, key, content, branch string, validFrom *time.Time,
	response *densemem.ConflictResponse) (*densemem.RelationshipOutcome, error) {
	who := s.profiles[p.ProfileID]
	s.printf("[%s] %s remembers %q", stamp(s.clock()), who, content)
	if validFrom != nil {
		s.printf(" with valid_from %s", day(*validFrom))
	}
	if response != nil {
		s.printf(",\n  answering %s at expected_version %d", s.caseName(response.ConflictID), response.ExpectedVersion)
	}
	s.printf("\n")
	pl, err := s.client.Remember(s.ctx, p, deployment(key, content, branch, validFrom, response))
	if err != nil {
		return nil, err
	}
	out := pl.RelationshipOutcomes[0]
	if out.RelationshipID != "" {
		s.rels[out.RelationshipID] = fmt.Sprintf("«production deploys_from %s» owned by %s", branch, who)
	}
	s.printf("  %s: status %s, tier %s\n", out.Category, out.Status, out.Tier)
	for _, x := range out.CrossReferences {
		s.printf("  cross-reference: %s %s\n", x.Kind, s.name(x.ToRelationshipID))
	}
	return &out, nil
}

// 1. At t0 alice records an accurate business rule.
func (s *story) record() error {
	s.printf("\n1. t0: alice records the rule\n")
	out, err := s.remember(s.alice, "alice-main", "Production deploys from main.", "main", nil, nil)
	if err != nil {
		return err
	}
	s.main = out.RelationshipID
	s.printf("\n(t1 %s: the business switches production to release; nobody tells Dense-Mem)\n", day(t1))
	return nil
}

// 2. At t2 bob submits dated evidence: his own relationship, a corrects cross-reference to alice's,
// an open team case, and alice's relationship untouched.
func (s *story) correct() error {
	s.printf("\n2. t2: bob submits dated evidence of the change\n")
	before, err := s.state(s.main)
	if err != nil {
		return err
	}
	from := t1
	out, err := s.remember(s.bob, "bob-release", "Since 2026-05-01 production deploys from release.", "release", &from, nil)
	if err != nil {
		return err
	}
	s.release = out.RelationshipID
	if out.Conflict == nil {
		return fmt.Errorf("teamconflict: bob's correction opened no conflict case")
	}
	s.caseID = out.Conflict.ConflictID
	tr, err := s.client.Trace(s.ctx, s.bob, densemem.TraceRequest{RelationshipID: s.release})
	if err != nil {
		return err
	}
	for _, c := range tr.Conflicts {
		s.printf("  team conflict case %s: %s, version %d, review due %s, %d positions\n",
			s.caseName(c.ConflictID), c.Status, c.Version, stamp(c.ReviewDueAt), len(c.Positions))
	}
	after, err := s.state(s.main)
	if err != nil {
		return err
	}
	s.printf("%s, untouched by bob's placement:\n  before: %s\n  after:  %s\n", s.name(s.main), before, after)
	return nil
}

// state is a relationship's status, tier, version and validity, as Trace shows them.
func (s *story) state(id densemem.RelationshipID) (string, error) {
	tr, err := s.client.Trace(s.ctx, s.alice, densemem.TraceRequest{RelationshipID: id})
	if err != nil {
		return "", err
	}
	r := tr.Relationship
	return fmt.Sprintf("status %s, tier %s, version %d, valid %s .. %s", r.Status, r.Tier, r.Version,
		optDay(r.ValidFrom), optDay(r.ValidTo)), nil
}

// 3. While the case is open, carol sees both material positions and the question.
func (s *story) recallOpen() error {
	s.printf("\n3. carol recalls while the case is open\n")
	res, err := s.recall("", densemem.RecallRequest{Query: query})
	if err != nil {
		return err
	}
	for _, c := range res.Conflicts {
		s.printf("  case %s: %s, version %d, review due %s\n", s.caseName(c.ConflictID), c.Status, c.Version, stamp(c.ReviewDueAt))
		for _, p := range c.Positions {
			s.printf("    position %q: owners %s, %d counted source group(s)\n", p.Object.Name, s.owners(p.OwnerProfileIDs),
				p.CountedSourceGroups)
			for _, e := range p.Evidence {
				s.printf("      %q by %s\n", e.Excerpt, s.profiles[e.AuthorProfileID])
			}
		}
		s.printf("  question: %s\n", strings.ReplaceAll(c.Question, c.ConflictID, "<conflict>"))
		if c.ConflictID == s.caseID {
			s.caseVersionRead = c.Version
		}
	}
	return nil
}

// 4. carol answers through normal remember with her own evidence: her relationship confirms bob's
// and corrects alice's; the case gains a member and a version. An answer at the old version fails.
func (s *story) confirm() error {
	s.printf("\n4. carol answers with her own evidence\n")
	from := t1
	resp := &densemem.ConflictResponse{ConflictID: s.caseID, ExpectedVersion: s.caseVersionRead}
	out, err := s.remember(s.carol, "carol-release",
		"Checked the pipeline settings: since 2026-05-01 production deploys from release.", "release", &from, resp)
	if err != nil {
		return err
	}
	if c := out.Conflict; c != nil {
		s.printf("  case %s: %s, version %d\n", s.caseName(c.ConflictID), c.Status, c.Version)
	}
	s.printf("[%s] alice answers \"Production deploys from main.\" still expecting version %d\n",
		stamp(s.clock()), s.caseVersionRead)
	stale := &densemem.ConflictResponse{ConflictID: s.caseID, ExpectedVersion: s.caseVersionRead}
	_, err = s.client.Remember(s.ctx, s.alice, deployment("alice-answer", "Production deploys from main.", "main", nil, stale))
	switch {
	case errors.Is(err, densemem.ErrStaleConflictVersion):
		s.printf("  refused, errors.Is(err, densemem.ErrStaleConflictVersion): nothing written; recall and retry\n")
	case err == nil:
		return fmt.Errorf("teamconflict: a stale conflict response was accepted; want ErrStaleConflictVersion")
	default:
		return fmt.Errorf("teamconflict: stale conflict response: want ErrStaleConflictVersion, got %w", err)
	}
	return nil
}

// 5. The current view, the view before bob's correction arrived, and the world before the change.
func (s *story) timeTravel() error {
	s.printf("\n5. Current view, recorded time and world time\n")
	res, err := s.recall("now", densemem.RecallRequest{Query: query})
	if err != nil {
		return err
	}
	for _, c := range res.Conflicts {
		var ps []string
		for _, p := range c.Positions {
			ps = append(ps, fmt.Sprintf("%q %d group(s) (%s)", p.Object.Name, p.CountedSourceGroups, s.owners(p.OwnerProfileIDs)))
		}
		s.printf("  case %s version %d: %s\n", s.caseName(c.ConflictID), c.Version, strings.Join(ps, ", "))
	}
	knownAt := t2.Add(-24 * time.Hour)
	if _, err := s.recall("known_at "+stamp(knownAt)+", before bob's correction", densemem.RecallRequest{Query: query, KnownAt: &knownAt}); err != nil {
		return err
	}
	validAt := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	_, err = s.recall("valid_at "+day(validAt)+", before the business change", densemem.RecallRequest{Query: query, ValidAt: &validAt})
	return err
}

// recall runs carol's recall and prints its results with owners and conflict markers; view names
// the time travel, if any.
func (s *story) recall(view string, req densemem.RecallRequest) (*densemem.RecallResponse, error) {
	res, err := s.client.Recall(s.ctx, s.carol, req)
	if err != nil {
		return nil, err
	}
	if view == "" {
		s.printf("[%s] carol recalls %q (branches %s)\n", stamp(s.clock()), req.Query, strings.Join(res.Branches, ", "))
	} else {
		s.printf("[%s] carol recalls %q, %s\n", stamp(s.clock()), req.Query, view)
	}
	for _, r := range res.Results {
		v := r.Relationship
		s.printf("  - «%s %s %s» owned by %s: %s, %s, valid %s .. %s", v.Subject.Name, v.Predicate, v.Object.Name,
			s.profiles[v.OwnerProfileID], v.Status, v.Tier, optDay(v.ValidFrom), optDay(v.ValidTo))
		if r.TrueAtValidAt != nil && *r.TrueAtValidAt {
			// A valid_at result was true then; only Current says whether it is current now.
			s.printf(", true at valid_at")
			if r.Current {
				s.printf(", current")
			} else {
				s.printf(", not current")
			}
		}
		if r.ConflictID != "" {
			s.printf(", in case %s", s.caseName(r.ConflictID))
		}
		if rc := r.ResolvedConflict; rc != nil {
			s.printf(",\n      resolved_conflict %s v%d: preferred, effective_at %s (%s)", s.caseName(rc.ConflictID), rc.Version,
				optDay(rc.EffectiveAt), rc.EffectiveTimeBasis)
		}
		s.printf("\n")
	}
	s.printf("  %d result(s), %d conflict case(s)\n", len(res.Results), len(res.Conflicts))
	return res, nil
}

// 6. alice's relationship, traced: unchanged, with incoming cross-references and the case events.
func (s *story) trace() error {
	s.printf("\n6. Trace of alice's relationship\n")
	if err := s.printTrace(s.main); err != nil {
		return err
	}
	s.printf("The case stays open until the nightly review decides it.\n")
	return nil
}

// printTrace traces a relationship as alice and prints its state, transitions, cross-references and
// the conflict cases it belongs to with their events.
func (s *story) printTrace(id densemem.RelationshipID) error {
	tr, err := s.client.Trace(s.ctx, s.alice, densemem.TraceRequest{RelationshipID: id, IncludeTransitions: true})
	if err != nil {
		return err
	}
	r := tr.Relationship
	s.printf("[%s] alice traces %s\n", stamp(s.clock()), s.name(id))
	s.printf("  status %s, tier %s, version %d, valid %s .. %s, %d transition(s)\n", r.Status, r.Tier, r.Version,
		optDay(r.ValidFrom), optDay(r.ValidTo), len(tr.Transitions))
	for _, t := range tr.Transitions {
		from := string(t.FromStatus)
		if from == "" {
			from = "(new)"
		}
		actor := t.ActorKind
		if name, ok := s.profiles[t.ActorProfileID]; ok {
			actor = name
		}
		s.printf("    - v%d %s: %s -> %s, tier %s, valid_to %s, %q by %s\n", t.ToVersion, stamp(t.CreatedAt), from, t.ToStatus,
			t.ToTier, optDay(t.ToValidTo), s.redact(t.Reason), actor)
	}
	for _, x := range tr.CrossReferences {
		other := x.ToRelationshipID
		if x.Direction == "incoming" {
			other = x.FromRelationshipID
		}
		s.printf("  %s cross-reference: %s %s, by %s at %s\n", x.Direction, x.Kind, s.name(other),
			s.profiles[x.AuthorProfileID], stamp(x.CreatedAt))
	}
	for _, c := range tr.Conflicts {
		s.printf("  case %s: %s, version %d, opened %s, review due %s", s.caseName(c.ConflictID), c.Status, c.Version,
			stamp(c.OpenedAt), stamp(c.ReviewDueAt))
		if c.ResolvedAt != nil {
			s.printf(", resolved %s", stamp(*c.ResolvedAt))
		}
		s.printf("\n")
		for _, e := range c.Events {
			from := e.PriorStatus
			if from == "" {
				from = "(new)"
			}
			actor := e.ActorKind
			if name, ok := s.profiles[e.ActorProfileID]; ok {
				actor = name
			}
			s.printf("    - v%d %s: %s -> %s, %q by %s", e.CaseVersion, stamp(e.CreatedAt), from, e.ResultingStatus, e.Reason, actor)
			if e.TimeBasis != "" {
				s.printf(", time basis %s", e.TimeBasis)
			}
			s.printf("\n")
		}
	}
	return nil
}

// 7. The host's scheduler runs the nightly review before review_due_at. Only the pre-deadline floor
// applies: a position needs at least 4 independent source groups and more than 75% of the counted
// support. bob and carol are 2 groups of 3, so the case stays open; had they been 4 of 5, this run
// would already have resolved it.
func (s *story) nightlyBeforeDeadline() error {
	s.printf("\n7. The nightly review before the deadline\n")
	open, err := s.openCase()
	if err != nil {
		return err
	}
	rep, err := s.nightly("the host's scheduler")
	if err != nil {
		return err
	}
	s.printf("  before review_due_at %s a position qualifies only with at least 4 independent source group(s)\n"+
		"  and more than 75%% of the counted support:\n", stamp(open.ReviewDueAt))
	s.shares(open, func(groups int, share float64) bool { return groups >= 4 && share > 0.75 })
	switch {
	case rep.Resolved == 1:
		s.printf("  the pre-deadline floor is met: the case is resolved early\n")
	case rep.KeptOpen == 1:
		after, err := s.openCase()
		if err != nil {
			return err
		}
		s.printf("  no position qualifies, so the case stays %s at version %d (keeping it open appends no event);\n"+
			"  it is due again at the start of the next run date, and its deadline does not move\n", after.Status, after.Version)
	default:
		return fmt.Errorf("teamconflict: the first nightly run neither kept the case open nor resolved it: %+v", *rep)
	}
	return nil
}

// 7b. The same run date again (a second replica, or a scheduler that fired twice): the date is
// already reserved and the case is not due before the next run date, so nothing happens.
func (s *story) nightlyAgain() error {
	rep, err := s.nightly("a second replica")
	if err != nil {
		return err
	}
	if rep.Reserved == 0 && rep.Claimed == 0 {
		s.printf("  the run date was reserved already and the case is not due before the next run date: nothing to do\n")
	}
	return nil
}

// 8. After review_due_at the lower floor applies: at least 2 independent source groups and more than
// 50%, or being the only position with allowed authoritative evidence (this team lists no
// authoritative profiles). bob and carol's release qualifies; the run resolves the case, supersedes
// alice's relationship at the cutoff, and records both as system_conflict_reviewer.
func (s *story) nightlyAfterDeadline() error {
	s.printf("\n8. The nightly review after review_due_at\n")
	open, err := s.openCase()
	if err != nil {
		return err
	}
	rep, err := s.nightly("the host's scheduler")
	if err != nil {
		return err
	}
	s.printf("  at or after review_due_at %s a position qualifies with at least 2 independent source group(s)\n"+
		"  and more than 50%% of the counted support:\n", stamp(open.ReviewDueAt))
	s.shares(open, func(groups int, share float64) bool { return groups >= 2 && share > 0.5 })
	if rep.Resolved != 1 {
		return fmt.Errorf("teamconflict: the nightly run after the deadline did not resolve the case: %+v", *rep)
	}
	tr, err := s.client.Trace(s.ctx, s.carol, densemem.TraceRequest{RelationshipID: s.release})
	if err != nil {
		return err
	}
	for _, c := range tr.Conflicts {
		if c.ConflictID != s.caseID {
			continue
		}
		s.printf("  case %s: %s, version %d, resolved %s\n", s.caseName(c.ConflictID), c.Status, c.Version, optStamp(c.ResolvedAt))
		for _, p := range c.Positions {
			if p.PositionID != c.PreferredPositionID {
				continue
			}
			var owners []densemem.ProfileID
			for _, m := range p.Members {
				owners = append(owners, m.OwnerProfileID)
			}
			s.printf("  preferred position: %q (%s)\n", p.Object.Name, s.owners(owners))
		}
	}
	// Trace's case view has no effective_at: the compact resolved_conflict reference of recall has it.
	ref, err := s.resolvedRef()
	if err != nil {
		return err
	}
	s.printf("  effective_at %s, basis %s", optDay(ref.EffectiveAt), ref.EffectiveTimeBasis)
	switch ref.EffectiveTimeBasis {
	case "evidence_time":
		s.printf(": the verifier confirmed that valid_from in the winners' cited evidence\n")
	case "recorded_fallback":
		s.printf(": no confirmed evidence time, so the first contradictory placement\n")
	default:
		s.printf("\n")
	}
	loser, err := s.state(s.main)
	if err != nil {
		return err
	}
	s.printf("  %s: %s\n", s.name(s.main), loser)
	return nil
}

// 9. The three views after resolution: now (release, with the resolved case; main is gone from
// current results), valid_at before the cutoff (main was true then) and known_at before bob's
// correction (main, and no conflict: nothing recorded later leaks).
func (s *story) viewsAfterResolution() error {
	s.printf("\n9. The three views after resolution\n")
	res, err := s.recall("now", densemem.RecallRequest{Query: query})
	if err != nil {
		return err
	}
	present := false
	for _, r := range res.Results {
		present = present || r.Relationship.RelationshipID == s.main
	}
	if !present {
		s.printf("  %s is not among the current results; Trace still reaches it\n", s.name(s.main))
	}
	validAt := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.recall("valid_at "+day(validAt)+", before the cutoff", densemem.RecallRequest{Query: query, ValidAt: &validAt}); err != nil {
		return err
	}
	knownAt := t2.Add(-24 * time.Hour)
	_, err = s.recall("known_at "+stamp(knownAt)+", before bob's correction", densemem.RecallRequest{Query: query, KnownAt: &knownAt})
	return err
}

// 10. alice's relationship after resolution: superseded at the cutoff by the system reviewer, with
// its evidence, cross-references and the case's whole history still there.
func (s *story) traceAfterResolution() error {
	s.printf("\n10. Trace of alice's relationship after resolution\n")
	return s.printTrace(s.main)
}

// nightly runs the nightly review for the story's team, as the host's scheduler would, and prints
// the report. TeamIDs names the team: without it a run reviews every team of the database with due
// cases, and the story must not touch other runs' teams.
func (s *story) nightly(who string) (*densemem.NightlyReviewReport, error) {
	rep, err := s.client.RunNightlyReview(s.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{s.team},
		WorkerID: "nightly"})
	if err != nil {
		return nil, err
	}
	s.printf("[%s] %s runs the nightly review: run date %s (the team's time zone is UTC)\n", stamp(s.clock()), who,
		day(s.clock()))
	s.printf("  report: reserved %d, claimed %d, resolved %d, overdue %d, dismissed %d, kept open %d, failed %d, escalated %d\n",
		rep.Reserved, rep.Claimed, rep.Resolved, rep.Overdue, rep.Dismissed, rep.KeptOpen, rep.Failed, rep.Escalated)
	return rep, nil
}

// openCase returns the story's case as carol's current recall shows it while it is open or overdue.
func (s *story) openCase() (*densemem.RecallConflict, error) {
	res, err := s.client.Recall(s.ctx, s.carol, densemem.RecallRequest{Query: query})
	if err != nil {
		return nil, err
	}
	for i := range res.Conflicts {
		if res.Conflicts[i].ConflictID == s.caseID {
			return &res.Conflicts[i], nil
		}
	}
	return nil, fmt.Errorf("teamconflict: current recall does not show the case")
}

// resolvedRef returns the resolved_conflict reference carol's current recall attaches to the
// preferred position's results.
func (s *story) resolvedRef() (*densemem.ResolvedConflictRef, error) {
	res, err := s.client.Recall(s.ctx, s.carol, densemem.RecallRequest{Query: query})
	if err != nil {
		return nil, err
	}
	for _, r := range res.Results {
		if r.ResolvedConflict != nil && r.ResolvedConflict.ConflictID == s.caseID {
			return r.ResolvedConflict, nil
		}
	}
	return nil, fmt.Errorf("teamconflict: current recall has no resolved_conflict reference")
}

// shares prints every position's counted source groups and share of the case, and whether it meets
// the floor qualifies describes.
func (s *story) shares(c *densemem.RecallConflict, qualifies func(groups int, share float64) bool) {
	total := 0
	for _, p := range c.Positions {
		total += p.CountedSourceGroups
	}
	for _, p := range c.Positions {
		share := 0.0
		if total > 0 {
			share = float64(p.CountedSourceGroups) / float64(total)
		}
		verdict := "does not qualify"
		if qualifies(p.CountedSourceGroups, share) {
			verdict = "qualifies"
		}
		s.printf("    %q (%s): %d of %d group(s), %.0f%%: %s\n", p.Object.Name, s.owners(p.OwnerProfileIDs),
			p.CountedSourceGroups, total, 100*share, verdict)
	}
}

// redact replaces the conflict case's ID in text (a transition reason names it) with its placeholder.
func (s *story) redact(text string) string {
	if s.caseID == "" {
		return text
	}
	return strings.ReplaceAll(text, s.caseID, "<conflict>")
}

// deployment is the request that remembers content as production deploys_from branch, citing all of it.
func deployment(key, content, branch string, validFrom *time.Time, response *densemem.ConflictResponse) densemem.RememberRequest {
	return densemem.RememberRequest{
		IdempotencyKey: key,
		Evidence:       []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{
				{Ref: "env", Name: "production", EntityKind: "environment"},
				{Ref: "branch", Name: branch, EntityKind: "git_branch", IdentityContext: map[string]string{"repository": "Dense-Mem"}},
			},
			Relationships: []densemem.ProposedRelationship{{
				ProposalID: "deploy", SubjectRef: "env", Predicate: "deploys from", ObjectRef: "branch", ValidFrom: validFrom,
				Evidence:         []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}},
				ConflictResponse: response,
			}},
		},
	}
}

// name returns a relationship's readable name with its owner.
func (s *story) name(id densemem.RelationshipID) string {
	if n, ok := s.rels[id]; ok {
		return n
	}
	return "an unknown relationship"
}

// caseName returns the placeholder the story prints for a conflict case ID.
func (s *story) caseName(id string) string {
	if id == s.caseID {
		return "<conflict>"
	}
	return "<another conflict>"
}

func (s *story) owners(ids []densemem.ProfileID) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = s.profiles[id]
	}
	return strings.Join(names, ", ")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func optDay(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return day(*t)
}

func optStamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/console"
	"github.com/densemem/densemem/densememtest"
)

// clock is the tests' injected clock; only the test moves it.
type clock struct{ at atomic.Pointer[time.Time] }

func newClock(start time.Time) *clock {
	c := &clock{}
	c.at.Store(&start)
	return c
}

// Now is the Config.Clock and Options.Clock of the seeded console.
func (c *clock) Now() time.Time { return *c.at.Load() }

// Advance moves the clock on by d.
func (c *clock) Advance(d time.Duration) {
	next := c.Now().Add(d)
	c.at.Store(&next)
}

// Tokens of the seeded console: the team's host, alice of the team, and the host of another team.
const (
	hostToken  = "acme-host-secret"
	aliceToken = "acme-alice-secret"
	otherToken = "other-host-secret"
)

// seeded is a team with a resolved case (production: main against release, release preferred), an
// overdue case (staging: main against develop), a statement of alice held for review (staging
// deploys from feature) and a split (alice's Mark of Billing split off the shared Mark); and
// another team with a case of its own, which no token of the first may reach.
type seeded struct {
	t                     *testing.T
	ctx                   context.Context
	clock                 *clock
	client                *densemem.Client
	team, other           densemem.TeamID
	alice, bob, carol     densemem.Principal
	aliceMain, bobRelease densemem.RelationshipID
	resolved, overdue     string
	held                  densemem.RelationshipID
	splitFrom, splitInto  densemem.RelationshipID
	otherCase             string
	otherRel              densemem.RelationshipID
	otherProfile          densemem.ProfileID
	handler               http.Handler
	server                *httptest.Server
}

func seed(t *testing.T) *seeded {
	t.Helper()
	s := &seeded{t: t, ctx: t.Context(), clock: newClock(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))}
	db := densememtest.New(t, &densemem.Config{Clock: s.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	s.client = db.Client
	s.team = s.newTeam("acme")
	s.alice, s.bob, s.carol = s.profile(s.team, "alice"), s.profile(s.team, "bob"), s.profile(s.team, "carol")
	s.cases()
	s.heldAndSplit()
	s.other = s.newTeam("other")
	o1, o2 := s.profile(s.other, "olga"), s.profile(s.other, "oscar")
	s.otherRel, s.otherProfile = s.deploy(o1, "qa", "trunk", nil).RelationshipID, o1.ProfileID
	s.otherCase = s.deploy(o2, "qa", "legacy", nil).Conflict.ConflictID
	tokens, err := console.NewTokenStore([]console.Token{
		{TokenSHA256: console.HashToken(hostToken), TeamID: s.team, Host: true},
		{TokenSHA256: console.HashToken(aliceToken), TeamID: s.team, ProfileID: s.alice.ProfileID},
		{TokenSHA256: console.HashToken(otherToken), TeamID: s.other, Host: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.handler, err = console.Handler(s.client, &console.Options{Tokens: tokens, Clock: s.clock.Now, PageSize: 10, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.server = httptest.NewServer(s.handler)
	t.Cleanup(s.server.Close)
	return s
}

func (s *seeded) newTeam(name string) densemem.TeamID {
	s.t.Helper()
	team, err := s.client.CreateTeam(s.ctx, densemem.CreateTeamRequest{Name: name})
	if err != nil {
		s.t.Fatal(err)
	}
	admin := s.profile(team, "admin", "read", "vocabulary")
	for _, def := range []densemem.PredicateDefinition{
		{Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"},
			SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"}, Description: "the branch an environment deploys from"},
		{Key: "works_on", RelationshipKind: "state", CurrentCardinality: "many", Aliases: []string{"works on"},
			SubjectKinds: []string{"person"}, ObjectKinds: []string{"project"}, Description: "a project a person works on"},
	} {
		if _, err := s.client.RegisterPredicate(s.ctx, admin, def); err != nil {
			s.t.Fatal(err)
		}
	}
	return team
}

func (s *seeded) profile(team densemem.TeamID, name string, scopes ...densemem.Scope) densemem.Principal {
	s.t.Helper()
	if scopes == nil {
		scopes = []densemem.Scope{"read", "write"}
	}
	id, err := s.client.CreateProfile(s.ctx, team, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
	if err != nil {
		s.t.Fatal(err)
	}
	return densemem.Principal{TeamID: team, ProfileID: id}
}

// keys numbers the idempotency keys of the seeded calls.
var keys atomic.Int64

func nextKey() string { return fmt.Sprintf("console-key-%d", keys.Add(1)) }

// deploy remembers "<env> deploys from <branch>" for p (dated when since is set, answering a case
// when response is) and returns its one outcome.
func (s *seeded) deploy(p densemem.Principal, env, branch string, since *time.Time, response ...*densemem.ConflictResponse) densemem.RelationshipOutcome {
	s.t.Helper()
	content := fmt.Sprintf("The %s environment deploys from %s.", env, branch)
	if since != nil {
		content = fmt.Sprintf("Since %s the %s environment deploys from %s.", since.Format(time.DateOnly), env, branch)
	}
	if len(response) > 0 {
		content += " The release checklist says so too."
	}
	rel := densemem.ProposedRelationship{ProposalID: "deploy", SubjectRef: "env", Predicate: "deploys from", ObjectRef: "branch",
		ValidFrom: since, Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}
	if len(response) > 0 {
		rel.ConflictResponse = response[0]
	}
	return s.remember(p, densemem.RememberRequest{IdempotencyKey: nextKey(),
		Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{Entities: []densemem.ProposedEntity{{Ref: "env", Name: env, EntityKind: "environment"},
			{Ref: "branch", Name: branch, EntityKind: "git_branch"}}, Relationships: []densemem.ProposedRelationship{rel}}})
}

func (s *seeded) remember(p densemem.Principal, req densemem.RememberRequest) densemem.RelationshipOutcome {
	s.t.Helper()
	pl, err := s.client.Remember(s.ctx, p, req)
	if err != nil {
		s.t.Fatal(err)
	}
	if len(pl.RelationshipOutcomes) != 1 {
		s.t.Fatalf("%d outcomes, want 1", len(pl.RelationshipOutcomes))
	}
	return pl.RelationshipOutcomes[0]
}

// cases opens the two cases and runs the nightly review after their deadline: production resolves
// for release (2 of 3 groups), staging (1 against 1) becomes overdue.
func (s *seeded) cases() {
	s.t.Helper()
	mainFrom, releaseFrom := date("2025-06-01"), date("2026-01-01")
	s.aliceMain = s.deploy(s.alice, "production", "main", &mainFrom).RelationshipID
	s.clock.Advance(time.Hour)
	bob := s.deploy(s.bob, "production", "release", &releaseFrom)
	s.bobRelease = bob.RelationshipID
	if bob.Conflict == nil {
		s.t.Fatalf("bob's release opened no case: %+v", bob)
	}
	s.resolved = bob.Conflict.ConflictID
	s.clock.Advance(time.Hour)
	s.deploy(s.carol, "production", "release", &releaseFrom,
		&densemem.ConflictResponse{ConflictID: bob.Conflict.ConflictID, ExpectedVersion: bob.Conflict.Version})
	s.deploy(s.alice, "staging", "main", nil)
	s.overdue = s.deploy(s.bob, "staging", "develop", nil).Conflict.ConflictID
	s.clock.Advance(8 * 24 * time.Hour)
	rep, err := s.client.RunNightlyReview(s.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{s.team}, WorkerID: "console-test"})
	if err != nil || rep.Resolved != 1 || rep.Overdue != 1 {
		s.t.Fatalf("nightly review: %+v, %v; want one case resolved and one overdue", rep, err)
	}
	s.clock.Advance(time.Hour)
}

// heldAndSplit holds alice's "staging deploys from feature" against her main, and splits alice's
// Mark of Billing off the Mark she and bob share.
func (s *seeded) heldAndSplit() {
	s.t.Helper()
	held := s.deploy(s.alice, "staging", "feature", nil)
	if held.Status != "needs_review" {
		s.t.Fatalf("alice's feature is %s, want held for review", held.Status)
	}
	s.held = held.RelationshipID
	works := func(p densemem.Principal, project string) densemem.RelationshipOutcome {
		content := fmt.Sprintf("Mark works on %s.", project)
		return s.remember(p, densemem.RememberRequest{IdempotencyKey: nextKey(),
			Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
			Proposal: densemem.Proposal{Entities: []densemem.ProposedEntity{{Ref: "s", Name: "Mark", EntityKind: "person"},
				{Ref: "o", Name: project, EntityKind: "project"}}, Relationships: []densemem.ProposedRelationship{{ProposalID: "w",
				SubjectRef: "s", Predicate: "works on", ObjectRef: "o", Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}}}})
	}
	works(s.alice, "Dense-Mem")
	billing := works(s.alice, "Billing")
	works(s.bob, "Dense-Mem")
	tr, err := s.client.Trace(s.ctx, s.alice, densemem.TraceRequest{RelationshipID: billing.RelationshipID})
	if err != nil {
		s.t.Fatal(err)
	}
	res, err := s.client.Split(s.ctx, s.alice, densemem.SplitRequest{EntityID: tr.Relationship.Subject.EntityID,
		ObservationIDs: []string{billing.ObservationID}, IdentityContext: map[string]string{"team": "billing"},
		Evidence: []densemem.EvidenceInput{{Content: "The Mark on Billing is Mark Jones, not Mark Huang.", SourceType: "manual"}},
		Reason:   "two people named Mark", IdempotencyKey: nextKey()})
	if err != nil {
		s.t.Fatalf("split: %v", err)
	}
	s.splitFrom, s.splitInto = billing.RelationshipID, res.Relationships[0].MovedTo
}

func date(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// testWriter sends the console's log to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/store/postgres"
)

// The runnable examples share one fresh database of the test server (cloned from the migrated
// template like every test's), made on first use and dropped after the package's tests; each example
// provisions a team of its own in it.
var exampleDB struct {
	once        sync.Once
	admin, name string
	url         string
	err         error
}

func TestMain(m *testing.M) {
	testdb.RaiseParallel()
	code := m.Run()
	if exampleDB.name != "" {
		if err := testdb.Drop(context.Background(), exampleDB.admin, exampleDB.name); err != nil {
			log.Printf("drop the examples' database: %v", err)
		}
	}
	os.Exit(code)
}

// exampleDSN returns the examples' database: a host would pass its own DSN.
func exampleDSN() string {
	exampleDB.once.Do(func() {
		exampleDB.admin, exampleDB.name, exampleDB.err = testdb.Clone(context.Background(), func(string, ...any) {})
		if exampleDB.err == nil {
			exampleDB.url, exampleDB.err = testdb.URL(exampleDB.admin, exampleDB.name)
		}
	})
	if exampleDB.err != nil {
		log.Fatal(exampleDB.err)
	}
	return exampleDB.url
}

// exampleWorld is a client with an injected clock and a team with a writer and a reviewer of its
// own, as a host would provision them; the examples below start from it.
type exampleWorld struct {
	ctx    context.Context
	st     *postgres.Store
	client *densemem.Client
	now    time.Time
	team   densemem.TeamID
	alice  densemem.Principal
	bob    densemem.Principal
}

func newExampleWorld() *exampleWorld {
	ctx := context.Background()
	st, err := postgres.Open(ctx, exampleDSN(), nil)
	if err != nil {
		log.Fatal(err)
	}
	w := &exampleWorld{ctx: ctx, st: st, now: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	if w.client, err = densemem.New(st, &densemem.Config{Clock: func() time.Time { return w.now }}); err != nil {
		log.Fatal(err)
	}
	if w.team, err = w.client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "platform"}); err != nil {
		log.Fatal(err)
	}
	host := densemem.HostPrincipal(w.team)
	if _, err := w.client.RegisterPredicate(ctx, host, densemem.PredicateDefinition{Key: "deploys_from",
		RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"}}); err != nil {
		log.Fatal(err)
	}
	for _, p := range []*densemem.Principal{&w.alice, &w.bob} {
		id, err := w.client.CreateProfile(ctx, w.team, densemem.CreateProfileRequest{Name: "writer",
			Scopes: []densemem.Scope{"read", "write"}})
		if err != nil {
			log.Fatal(err)
		}
		*p = densemem.Principal{TeamID: w.team, ProfileID: id}
	}
	return w
}

// deploys is the request "env deploys from branch", cited from text, optionally since a date and
// from a named source.
func deploys(key, env, branch, text, group string, since *time.Time) densemem.RememberRequest {
	return densemem.RememberRequest{
		IdempotencyKey: key,
		Evidence:       []densemem.EvidenceInput{{Content: text, SourceType: "manual", SourceGroup: group}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{
				{Ref: "env", Name: env, EntityKind: "environment"},
				{Ref: "branch", Name: branch, EntityKind: "git_branch"},
			},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "env", Predicate: "deploys from",
				ObjectRef: "branch", ValidFrom: since, Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(text)}}}},
		},
	}
}

func (w *exampleWorld) remember(p densemem.Principal, req densemem.RememberRequest) densemem.RelationshipOutcome {
	pl, err := w.client.Remember(w.ctx, p, req)
	if err != nil {
		log.Fatal(err)
	}
	return pl.RelationshipOutcomes[0]
}

// New opens a store on a migrated database and makes a Client; the host provisions a team and its
// vocabulary as itself (HostPrincipal), and its writers as profiles.
func ExampleNew() {
	ctx := context.Background()
	st, err := postgres.Open(ctx, exampleDSN(), nil) // ErrNotMigrated until migrations.Up has run
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	client, err := densemem.New(st, nil)
	if err != nil {
		log.Fatal(err)
	}
	team, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "platform"})
	if err != nil {
		log.Fatal(err)
	}
	pol, err := client.TeamPolicy(ctx, densemem.HostPrincipal(team))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("policy v%d: review within %s, auto-write at confidence %.1f, run dates in %s\n",
		pol.Version, pol.ReviewTTL, pol.AutoWriteThreshold, pol.TimeZone)
	// Output:
	// policy v1: review within 168h0m0s, auto-write at confidence 0.7, run dates in UTC
}

// Remember stores verbatim evidence and places the relationship it supports; a dated correction by
// the same writer supersedes the old value.
func ExampleClient_Remember() {
	w := newExampleWorld()
	defer w.st.Close()
	first := w.remember(w.alice, deploys("k1", "production", "main",
		"The production environment deploys from the main branch.", "", nil))
	fmt.Println(first.Category, first.Status, first.Tier)

	w.now = w.now.Add(time.Hour)
	since := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	second := w.remember(w.alice, deploys("k2", "production", "release",
		"Since 2026-05-01 the production environment deploys from the release branch.", "", &since))
	fmt.Println(second.Category, second.Status, "supersedes the first:", second.Related[0] == first.RelationshipID)
	// Output:
	// relationship_accepted active validated_claim
	// relationship_superseded_prior active supersedes the first: true
}

// Recall finds what the team knows, with the evidence behind each result; ValidAt asks what was true
// in the world at an instant.
func ExampleClient_Recall() {
	w := newExampleWorld()
	defer w.st.Close()
	w.remember(w.alice, deploys("k1", "staging", "main", "The staging environment deploys from the main branch.", "", nil))
	since := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	w.now = w.now.Add(time.Hour)
	w.remember(w.alice, deploys("k2", "staging", "develop",
		"Since 2026-05-01 the staging environment deploys from the develop branch.", "", &since))

	rc, err := w.client.Recall(w.ctx, w.bob, densemem.RecallRequest{Query: "staging"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rc.Results {
		rel := r.Relationship
		fmt.Printf("now: %s %s %s (current %v) because %q\n", rel.Subject.Name, rel.Predicate, rel.Object.Name,
			r.Current, r.Evidence[0].Excerpt)
	}
	april := time.Date(2026, 4, 15, 0, 0, 0, 0, time.UTC)
	rc, err = w.client.Recall(w.ctx, w.bob, densemem.RecallRequest{Query: "staging", ValidAt: &april})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rc.Results {
		fmt.Printf("on 2026-04-15: %s %s %s (true then %v, current %v)\n", r.Relationship.Subject.Name,
			r.Relationship.Predicate, r.Relationship.Object.Name, *r.TrueAtValidAt, r.Current)
	}
	// Output:
	// now: staging deploys_from develop (current true) because "Since 2026-05-01 the staging environment deploys from the develop branch."
	// on 2026-04-15: staging deploys_from main (true then true, current false)
}

// Trace explains one relationship down to its evidence bytes, verification and transitions.
func ExampleClient_Trace() {
	w := newExampleWorld()
	defer w.st.Close()
	out := w.remember(w.alice, deploys("k1", "production", "main",
		"The production environment deploys from the main branch.", "", nil))
	tr, err := w.client.Trace(w.ctx, w.bob, densemem.TraceRequest{RelationshipID: out.RelationshipID,
		IncludeEvidenceContent: true, IncludeVerification: true, IncludeTransitions: true})
	if err != nil {
		log.Fatal(err)
	}
	rel := tr.Relationship
	fmt.Printf("%s %s %s: %s, %s, %d source group(s)\n", rel.Subject.Name, rel.Predicate, rel.Object.Name,
		rel.Status, rel.Tier, rel.SourceCount)
	fmt.Printf("evidence: %q\n", tr.Evidence[0].Excerpt)
	fmt.Printf("verified: %s with confidence %.0f\n", tr.Verifications[0].Verdict, tr.Verifications[0].Confidence)
	for _, t := range tr.Transitions {
		fmt.Printf("transition to %s/%s: %s\n", t.ToStatus, t.ToTier, t.Reason)
	}
	// Output:
	// production deploys_from main: active, validated_claim, 1 source group(s)
	// evidence: "The production environment deploys from the main branch."
	// verified: entailed with confidence 1
	// transition to active/validated_claim: accepted
}

// Forget retracts the caller's own relationship; another writer may not.
func ExampleClient_Forget() {
	w := newExampleWorld()
	defer w.st.Close()
	out := w.remember(w.alice, deploys("k1", "production", "main",
		"The production environment deploys from the main branch.", "", nil))
	_, err := w.client.Forget(w.ctx, w.bob, densemem.ForgetRequest{RelationshipID: out.RelationshipID,
		Reason: "not mine to forget", IdempotencyKey: "f1"})
	fmt.Println("bob refused, not the owner:", errors.Is(err, densemem.ErrNotOwner))
	res, err := w.client.Forget(w.ctx, w.alice, densemem.ForgetRequest{RelationshipID: out.RelationshipID,
		Reason: "branch retired", IdempotencyKey: "f2"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("alice:", res.Status)
	// Output:
	// bob refused, not the owner: true
	// alice: retracted
}

// RunNightlyReview resolves a team conflict once the deadline has passed and one position qualifies:
// here Bob's correction, backed by two independent sources against Alice's one.
func ExampleClient_RunNightlyReview() {
	w := newExampleWorld()
	defer w.st.Close()
	w.remember(w.alice, deploys("a1", "production", "main", "The production environment deploys from the main branch.", "wiki", nil))
	since := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	w.now = w.now.Add(time.Hour)
	b1 := w.remember(w.bob, deploys("b1", "production", "release",
		"Since 2026-05-01 the production environment deploys from the release branch.", "runbook", &since))
	fmt.Println("case opened:", b1.Conflict.Status)
	w.now = w.now.Add(time.Hour)
	w.remember(w.bob, deploys("b2", "production", "release",
		"Since 2026-05-01 the production environment deploys from the release branch (release notes).", "release-notes", &since))

	w.now = w.now.Add(8 * 24 * time.Hour) // past the 7-day review deadline
	rep, err := w.client.RunNightlyReview(w.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{w.team},
		WorkerID: "nightly"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("claimed %d, resolved %d, overdue %d\n", rep.Claimed, rep.Resolved, rep.Overdue)
	rc, err := w.client.Recall(w.ctx, w.alice, densemem.RecallRequest{Query: "production"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rc.Results {
		fmt.Printf("%s %s %s, resolved conflict: %v\n", r.Relationship.Subject.Name, r.Relationship.Predicate,
			r.Relationship.Object.Name, r.ResolvedConflict != nil)
	}
	// Output:
	// case opened: open
	// claimed 1, resolved 1, overdue 0
	// production deploys_from release, resolved conflict: true
}

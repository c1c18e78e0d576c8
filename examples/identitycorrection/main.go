// Command identitycorrection tells the specification's "Cross-Profile Corrections" story against a
// real PostgreSQL: alice records that Mark works on Dense-Mem and on Billing, with no identity
// context, so both statements land on one entity. bob knows there are two Marks. His mentions carry
// the identity context that tells them apart, so instead of silently reusing alice's entity Dense-Mem
// asks him which entity he means; he confirms two new entities through Resolve, with the evidence
// that distinguishes them. Each of his relationships writes a corrects cross-reference to alice's
// same statement and the team's one identity_correction case about alice's Mark opens; alice's rows
// do not change. carol's recall shows every statement and the case's three identities. The nightly
// reviewer decides the case under the team's deterministic policy, weighing alice's combined Mark
// against bob's two Marks together: two independent source groups on each side qualify neither, so
// it keeps the case open and marks it overdue at its deadline, inventing no winner (with more
// independent evidence on one side it would supersede the other side's statements, never an entity
// resolution). alice then accepts the correction herself: she states what she knows about each Mark
// (her mentions now resolve to bob's entities and confirm his statements) and forgets her combined
// statements; the case is dismissed.
//
// The database comes from DENSEMEM_DATABASE_URL, else the examples' own database densemem_examples on
// the local server, created when missing and migrated, else a private PostgreSQL in the examples'
// data directory (as the quickstart says). Every run creates a fresh team and the
// client's clock is injected, so the output is the same on every run.
//
//	go run ./examples/identitycorrection
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/exampledb"
)

// program names the example in its errors.
const program = "identitycorrection"

// The story's times: t0 alice's statements, t1 bob's distinguishing evidence; the nightly review runs
// at 02:00 UTC three days after t1 and again after the case's deadline (t1 + 7 days).
var (
	t0            = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	t1            = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
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
	st, done, err := exampledb.Connect(ctx, program, dsn)
	if err != nil {
		return err
	}
	defer done()
	now := t0
	clock := func() time.Time { return now }
	client, err := densemem.New(st, &densemem.Config{Clock: clock, // Verifier: the default SpanVerifier
		Nightly: densemem.NightlyConfig{Store: exampledb.Reviewer(st)}}) // the reviewer role's store, where there is one
	if err != nil {
		return err
	}
	s := &story{w: w, ctx: ctx, client: client, clock: clock, names: map[string]string{}}
	for _, step := range []struct {
		at  time.Time
		run func() error
	}{
		{t0, s.setUp},
		{t0.Add(5 * time.Minute), s.aliceRecords},
		{t1, s.bobAsked},
		{t1.Add(10 * time.Minute), s.bobConfirms},
		{t1.Add(24 * time.Hour), s.carolRecalls},
		{firstNightly, s.nightlyBeforeDeadline},
		{secondNightly, s.nightlyAfterDeadline},
		{secondNightly.Add(8 * time.Hour), s.aliceAccepts},
		{secondNightly.Add(9 * time.Hour), s.carolRecallsAgain},
	} {
		now = step.at
		if err := step.run(); err != nil {
			return fmt.Errorf("%s: %w", program, err)
		}
	}
	return nil
}

// story holds what the steps share. IDs are generated with random bits, so the story prints names:
// names maps every ID it shows (profiles, entities, relationships, the case) to the name printed.
type story struct {
	w      io.Writer
	ctx    context.Context
	client *densemem.Client
	clock  func() time.Time
	names  map[string]string

	alice, bob, carol densemem.Principal
	mark              densemem.EntityID         // alice's Mark
	aliceRels         []densemem.RelationshipID // Dense-Mem, Billing
	caseID            string
}

func (s *story) printf(format string, args ...any) { fmt.Fprintf(s.w, format, args...) }

// name returns the printed name of id, or id itself when the story never named it.
func (s *story) name(id string) string {
	if n, ok := s.names[id]; ok {
		return n
	}
	return id
}

// redact replaces every named ID in text with its name.
func (s *story) redact(text string) string {
	for id, n := range s.names {
		text = strings.ReplaceAll(text, id, n)
	}
	return text
}

// setUp provisions the team, its writers and the works_on predicate.
func (s *story) setUp() error {
	s.printf("Dense-Mem: cross-profile identity correction (t0 %s, t1 %s)\n\n", day(t0), day(t1))
	team, err := s.client.CreateTeam(s.ctx, densemem.CreateTeamRequest{Name: "acme"})
	if err != nil {
		return err
	}
	profile := func(name string, scopes ...densemem.Scope) (densemem.Principal, error) {
		id, err := s.client.CreateProfile(s.ctx, team, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
		s.names[string(id)] = name
		return densemem.Principal{TeamID: team, ProfileID: id}, err
	}
	admin, err := profile("admin", "read", "vocabulary")
	if err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		to   *densemem.Principal
	}{{"alice", &s.alice}, {"bob", &s.bob}, {"carol", &s.carol}} {
		if *p.to, err = profile(p.name, "read", "write"); err != nil {
			return err
		}
	}
	if _, err := s.client.RegisterPredicate(s.ctx, admin, densemem.PredicateDefinition{Key: "works_on",
		RelationshipKind: "state", CurrentCardinality: "many", Aliases: []string{"works on"},
		SubjectKinds: []string{"person"}, ObjectKinds: []string{"project"}, Description: "a person works on a project"}); err != nil {
		return err
	}
	s.printf("Team \"acme\": admin registered works_on (person -> project, many); alice, bob, carol (read, write)\n")
	return nil
}

// mark is a mention of a person called Mark: with identity context, or alice's without.
type mark struct {
	ref     string
	context map[string]string
}

// worksOn is one Remember: "<content>" states that the Mark of m works on project.
func worksOn(key, content string, m mark, project string) densemem.RememberRequest {
	return densemem.RememberRequest{IdempotencyKey: key,
		Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{{Ref: m.ref, Name: "Mark", EntityKind: "person", IdentityContext: m.context},
				{Ref: "project", Name: project, EntityKind: "project"}},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "works_on", SubjectRef: m.ref, Predicate: "works on",
				ObjectRef: "project", Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}},
		}}
}

// remember remembers req for p, names what it created and prints its outcome.
func (s *story) remember(p densemem.Principal, req densemem.RememberRequest) (*densemem.Placement, error) {
	who := s.name(string(p.ProfileID))
	s.printf("[%s] %s remembers %q\n", stamp(s.clock()), who, req.Evidence[0].Content)
	pl, err := s.client.Remember(s.ctx, p, req)
	if err != nil {
		return nil, err
	}
	for _, e := range pl.Entities {
		switch {
		case e.Ref == "project":
		case e.EntityID == "":
			s.printf("  mention %q: %s, no entity until %s decides\n", e.Ref, e.Decision, who)
		default:
			s.printf("  mention %q: %s %s\n", e.Ref, e.Decision, s.name(string(e.EntityID)))
		}
	}
	for _, out := range pl.RelationshipOutcomes {
		s.printOutcome(who, out)
	}
	return pl, nil
}

// printOutcome names and prints a relationship outcome of who.
func (s *story) printOutcome(who string, out densemem.RelationshipOutcome) {
	if out.RelationshipID != "" {
		tr, err := s.client.Trace(s.ctx, s.carol, densemem.TraceRequest{RelationshipID: out.RelationshipID})
		if err == nil {
			r := tr.Relationship
			s.names[string(out.RelationshipID)] = fmt.Sprintf("«%s %s %s» of %s", s.name(string(r.Subject.EntityID)),
				r.Predicate, r.Object.Name, who)
		}
	}
	s.printf("  %s: %s", out.Category, out.Reason)
	if out.Status != "" {
		s.printf(" (status %s, tier %s)", out.Status, out.Tier)
	}
	s.printf("\n")
	for _, x := range out.CrossReferences {
		s.printf("  cross-reference: %s %s\n", x.Kind, s.name(string(x.ToRelationshipID)))
	}
	if c := out.Conflict; c != nil {
		s.printf("  case %s: %s, version %d\n", s.name(c.ConflictID), c.Status, c.Version)
	}
}

// 1. alice states what she knows about Mark, with no identity context: one entity.
func (s *story) aliceRecords() error {
	s.printf("\n1. t0: alice records where Mark works\n")
	for _, project := range []string{"Dense-Mem", "Billing"} {
		pl, err := s.client.Remember(s.ctx, s.alice, worksOn("alice-"+project, "Mark works on "+project+".", mark{ref: "mark"}, project))
		if err != nil {
			return err
		}
		s.names[string(pl.Entities[1].EntityID)] = project
		if s.mark == "" {
			s.mark = pl.Entities[0].EntityID
			s.names[string(s.mark)] = "Mark (alice's, no identity context)"
		}
		s.printf("[%s] alice remembers %q\n  mention \"mark\": %s %s\n", stamp(s.clock()), "Mark works on "+project+".",
			pl.Entities[0].Decision, s.name(string(pl.Entities[0].EntityID)))
		s.printOutcome("alice", pl.RelationshipOutcomes[0])
		s.aliceRels = append(s.aliceRels, pl.RelationshipOutcomes[0].RelationshipID)
	}
	return nil
}

// bobMarks are bob's two mentions, each with the context that tells the two people apart.
var bobMarks = []struct {
	m       mark
	project string
	content string
}{
	{mark{"mark_dense", map[string]string{"team": "dense-mem"}}, "Dense-Mem", "Mark from the dense-mem team works on Dense-Mem."},
	{mark{"mark_billing", map[string]string{"team": "billing"}}, "Billing", "Mark from the billing team works on Billing."},
}

// bobItems are bob's identity items: the ingest and outcome of each of his statements.
var bobItems []struct {
	ingest string
	out    densemem.RelationshipOutcome
	ref    string
}

// 2. bob's narrower mentions of alice's Mark are questions, not a silent reuse of her entity.
func (s *story) bobAsked() error {
	s.printf("\n2. t1: bob knows there are two Marks\n")
	bobItems = nil
	for _, b := range bobMarks {
		pl, err := s.remember(s.bob, worksOn("bob-"+b.project, b.content, b.m, b.project))
		if err != nil {
			return err
		}
		out := pl.RelationshipOutcomes[0]
		if out.Review == nil {
			return fmt.Errorf("bob's %s: no review item, want an identity question", b.project)
		}
		for _, m := range out.Review.Mentions {
			var cands []string
			for _, c := range m.CandidateIDs {
				cands = append(cands, s.name(string(c)))
			}
			s.printf("  item %s: %q; mention %q (identity_context %v, broader candidate: %v): candidates %s\n",
				out.Review.Kind, out.Review.Question, m.Ref, m.IdentityContext, m.Broader, strings.Join(cands, ", "))
		}
		var actions []string
		for _, c := range out.Review.Choices {
			actions = append(actions, c.Action)
		}
		s.printf("  allowed actions: %s\n", strings.Join(actions, ", "))
		bobItems = append(bobItems, struct {
			ingest string
			out    densemem.RelationshipOutcome
			ref    string
		}{pl.IngestID, out, b.m.ref})
	}
	return nil
}

// 3. bob confirms two new entities with the evidence that tells them apart: each of his
// relationships corrects alice's same statement, and one identity case opens; alice's rows stay.
func (s *story) bobConfirms() error {
	s.printf("\n3. bob confirms two new entities\n")
	before, err := s.aliceState()
	if err != nil {
		return err
	}
	for i, it := range bobItems {
		s.printf("[%s] bob resolves the item of %q: confirm_new_entity, distinct from %s\n", stamp(s.clock()), it.ref, s.name(string(s.mark)))
		res, err := s.client.Resolve(s.ctx, s.bob, densemem.ResolveRequest{IngestID: it.ingest,
			PlacementItemID: it.out.PlacementItemID, Action: densemem.ActionConfirmNewEntity, IdempotencyKey: "bob-confirm-" + it.ref,
			Decision: &densemem.ResolveDecision{MentionRef: it.ref, DistinctFromEntityIDs: []densemem.EntityID{s.mark},
				Reason: "two different people called Mark"},
			Evidence: []densemem.EvidenceInput{{SourceType: "manual",
				Content: "Mark of the dense-mem team and Mark of the billing team are two different people."}}})
		if err != nil {
			return err
		}
		tr, err := s.client.Trace(s.ctx, s.bob, densemem.TraceRequest{RelationshipID: res.Outcome.RelationshipID})
		if err != nil {
			return err
		}
		s.names[string(tr.Relationship.Subject.EntityID)] = fmt.Sprintf("Mark [team %s] (bob's)", bobMarks[i].m.context["team"])
		if c := res.Outcome.Conflict; c != nil && s.caseID == "" {
			s.caseID = c.ConflictID
			s.names[c.ConflictID] = "<identity case>"
		}
		s.printOutcome("bob", *res.Outcome)
	}
	after, err := s.aliceState()
	if err != nil {
		return err
	}
	s.printf("alice's relationships and the resolutions of her mentions, untouched by bob's placements:\n"+
		"  before: %s\n  after:  %s\n", before, after)
	return nil
}

// aliceState is the status, tier and version of alice's relationships and the entity resolutions of
// her mentions.
func (s *story) aliceState() (string, error) {
	var parts []string
	for _, id := range s.aliceRels {
		tr, err := s.client.Trace(s.ctx, s.alice, densemem.TraceRequest{RelationshipID: id})
		if err != nil {
			return "", err
		}
		r := tr.Relationship
		var resolutions []string
		for _, res := range tr.IdentityResolutions {
			if res.ProfileID == s.alice.ProfileID {
				resolutions = append(resolutions, fmt.Sprintf("%s %s", res.Decision, s.name(string(res.EntityID))))
			}
		}
		slices.Sort(resolutions)
		parts = append(parts, fmt.Sprintf("%s %s/%s v%d [%s]", r.Object.Name, r.Status, r.Tier, r.Version,
			strings.Join(resolutions, ", ")))
	}
	return strings.Join(parts, "; "), nil
}

// 4. carol sees every statement and the case's three identities.
func (s *story) carolRecalls() error {
	s.printf("\n4. carol recalls while the case is open\n")
	return s.recall()
}

func (s *story) recall() error {
	res, err := s.client.Recall(s.ctx, s.carol, densemem.RecallRequest{Query: "Mark works on"})
	if err != nil {
		return err
	}
	var lines []string
	for _, r := range res.Results {
		line := fmt.Sprintf("    %s: %s", s.name(string(r.Relationship.RelationshipID)), r.Relationship.Status)
		if r.ConflictID != "" {
			line += ", in " + s.name(r.ConflictID)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines) // scores tie; print in a stable order
	s.printf("[%s] carol recalls \"Mark works on\": %d results\n%s\n", stamp(s.clock()), len(res.Results), strings.Join(lines, "\n"))
	for _, c := range res.Conflicts {
		s.printf("  %s: %s, %s, version %d, review due %s\n", s.name(c.ConflictID), c.Kind, c.Status, c.Version, stamp(c.ReviewDueAt))
		for _, p := range c.Positions {
			var owners []string
			for _, o := range p.OwnerProfileIDs {
				owners = append(owners, s.name(string(o)))
			}
			s.printf("    identity %s: owners %s, %d statement(s), %d counted source group(s)\n", s.name(string(p.Object.EntityID)),
				strings.Join(owners, ", "), len(p.RelationshipIDs), p.CountedSourceGroups)
		}
		s.printf("  question: %s\n", s.redact(c.Question))
	}
	return nil
}

// 5 and 6. Two groups against two: no side qualifies, so the case is open before the deadline and
// overdue after it.
func (s *story) nightlyBeforeDeadline() error {
	s.printf("\n5. the nightly review before the deadline\n")
	return s.nightly()
}

func (s *story) nightlyAfterDeadline() error {
	s.printf("\n6. the nightly review after the deadline\n")
	return s.nightly()
}

func (s *story) nightly() error {
	rep, err := s.client.RunNightlyReview(s.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{s.alice.TeamID},
		WorkerID: "host-cron"})
	if err != nil {
		return err
	}
	s.printf("[%s] RunNightlyReview: %d claimed, %d resolved, %d kept open, %d overdue, %d dismissed\n", stamp(s.clock()),
		rep.Claimed, rep.Resolved, rep.KeptOpen, rep.Overdue, rep.Dismissed)
	return s.printCase()
}

// printCase prints the identity case's status and version.
func (s *story) printCase() error {
	page, err := s.client.ListConflicts(s.ctx, s.carol, densemem.ListConflictsRequest{
		Status: []string{"open", "overdue", "resolved", "dismissed"}})
	if err != nil {
		return err
	}
	for _, c := range page.Conflicts {
		if c.ConflictID == s.caseID {
			s.printf("  %s: %s, version %d\n", s.name(c.ConflictID), c.Status, c.Version)
		}
	}
	return nil
}

// 7. alice accepts the correction: her statements about each Mark resolve to bob's entities and
// confirm his; she forgets her combined ones, and the case is dismissed.
func (s *story) aliceAccepts() error {
	s.printf("\n7. alice accepts the correction with her own statements\n")
	for _, b := range bobMarks {
		content := "I checked: " + b.content
		if _, err := s.remember(s.alice, worksOn("alice-again-"+b.project, content, b.m, b.project)); err != nil {
			return err
		}
	}
	for _, id := range s.aliceRels {
		res, err := s.client.Forget(s.ctx, s.alice, densemem.ForgetRequest{RelationshipID: id,
			Reason: "Mark was two people", IdempotencyKey: "alice-forget-" + string(id)})
		if err != nil {
			return err
		}
		s.printf("[%s] alice forgets %s: %s, version %d\n", stamp(s.clock()), s.name(string(id)), res.Status, res.Version)
	}
	return s.printCase()
}

// 8. carol's recall after the correction: the distinct Marks, no open case.
func (s *story) carolRecallsAgain() error {
	s.printf("\n8. carol recalls after the correction\n")
	return s.recall()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

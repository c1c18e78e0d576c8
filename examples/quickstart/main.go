// Command quickstart tells a short story with Dense-Mem against a real PostgreSQL: a team registers
// a predicate, a writer remembers where production deploys from, a dated correction supersedes the
// old value, an undated conflicting claim is held for review and its owner decides it with Resolve,
// another writer is refused when it tries to forget a relationship it does not own, Trace explains
// every relationship down to its evidence, and Forget retracts a relationship without deleting its
// history.
//
// The database comes from DENSEMEM_DATABASE_URL, else the examples' own database densemem_examples on the
// local server (postgres://postgres@127.0.0.1:5432/densemem_examples), created when missing, else, when
// nothing answers there, a private PostgreSQL the program starts in a data directory of the examples
// ($DENSEMEM_DATA, else ~/.local/share/densemem-examples) and stops when it ends; the program
// migrates the database to the library's schema.
// Every run creates a fresh team, so it can run again and again against the same database. The
// client's clock is injected and moved by the story, so the output is the same on every run.
//
//	go run ./examples/quickstart
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

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/exampledb"
	"github.com/densemem/densemem/store/postgres"
)

const ()

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
	st, done, err := exampledb.Connect(ctx, "quickstart", dsn)
	if err != nil {
		return err
	}
	defer done()

	// The story's clock: every recorded time comes from it, and only the story moves it.
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	client, err := densemem.New(st, &densemem.Config{Clock: clock}) // Verifier: the default SpanVerifier
	if err != nil {
		return err
	}
	s := &story{w: w, ctx: ctx, client: client, st: st, clock: clock,
		profiles: map[densemem.ProfileID]string{}, rels: map[densemem.RelationshipID]string{}}
	if err := s.setUp(); err != nil {
		return err
	}
	for _, step := range []func() error{s.remember, s.supersede, s.hold, s.refuse, s.trace, s.forget} {
		now = now.Add(time.Minute)
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// story holds what the steps share. IDs are generated with random bits, so the story prints names:
// profiles and rels map IDs to the names shown instead.
type story struct {
	w      io.Writer
	ctx    context.Context
	client *densemem.Client
	st     *postgres.Store
	clock  func() time.Time

	team       densemem.TeamID
	alice, bob densemem.Principal
	profiles   map[densemem.ProfileID]string
	rels       map[densemem.RelationshipID]string
	main       densemem.RelationshipID // production deploys_from main
	release    densemem.RelationshipID // production deploys_from release
	lastIngest string                  // the ingest of the last Remember
}

func (s *story) printf(format string, args ...any) { fmt.Fprintf(s.w, format, args...) }

// setUp provisions a team with a vocabulary admin and two writers and registers deploys_from.
func (s *story) setUp() error {
	s.printf("Dense-Mem quickstart (clock starts at %s)\n\n", stamp(s.clock()))
	var err error
	if s.team, err = s.client.CreateTeam(s.ctx, densemem.CreateTeamRequest{Name: "acme"}); err != nil {
		return err
	}
	admin, err := s.profile("admin", "read", "vocabulary")
	if err != nil {
		return err
	}
	if s.alice, err = s.profile("alice", "read", "write"); err != nil {
		return err
	}
	if s.bob, err = s.profile("bob", "read", "write"); err != nil {
		return err
	}
	def, err := s.client.RegisterPredicate(s.ctx, admin, densemem.PredicateDefinition{
		Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"},
		SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"},
		Description: "the git branch an environment deploys from",
	})
	if err != nil {
		return err
	}
	s.printf("Team \"acme\": admin (read, vocabulary), alice (read, write), bob (read, write)\n")
	s.printf("admin registered %s v%d: %s, current_cardinality %s, %s -> %s\n",
		def.Key, def.Version, def.RelationshipKind, def.CurrentCardinality, def.SubjectKinds[0], def.ObjectKinds[0])
	return nil
}

func (s *story) profile(name string, scopes ...densemem.Scope) (densemem.Principal, error) {
	id, err := s.client.CreateProfile(s.ctx, s.team, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
	s.profiles[id] = name
	return densemem.Principal{TeamID: s.team, ProfileID: id}, err
}

// deployment remembers "<content>" for p as production deploys_from branch, citing all of it.
func (s *story) deployment(p densemem.Principal, key, content, branch string, validFrom *time.Time) (densemem.RelationshipOutcome, error) {
	pl, err := s.client.Remember(s.ctx, p, densemem.RememberRequest{
		IdempotencyKey: key,
		Evidence:       []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{
				{Ref: "env", Name: "production", EntityKind: "environment"},
				{Ref: "branch", Name: branch, EntityKind: "git_branch", IdentityContext: map[string]string{"repository": "Dense-Mem"}},
			},
			Relationships: []densemem.ProposedRelationship{{
				ProposalID: "deploy", SubjectRef: "env", Predicate: "deploys from", ObjectRef: "branch", ValidFrom: validFrom,
				Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}},
			}},
		},
	})
	if err != nil {
		return densemem.RelationshipOutcome{}, err
	}
	out := pl.RelationshipOutcomes[0]
	s.lastIngest = pl.IngestID
	if out.RelationshipID != "" {
		s.rels[out.RelationshipID] = "production deploys_from " + branch
	}
	s.printf("\n[%s] %s remembers %q", stamp(s.clock()), s.profiles[p.ProfileID], content)
	if validFrom != nil {
		s.printf(" with valid_from %s", day(*validFrom))
	}
	s.printf("\n  %s: status %s, tier %s\n  reason: %s\n", out.Category, out.Status, out.Tier, out.Reason)
	return out, nil
}

// 1. A first, undated relationship becomes current.
func (s *story) remember() error {
	s.printf("\n1. A first relationship")
	out, err := s.deployment(s.alice, "deploy-main", "Production deploys from main.", "main", nil)
	s.main = out.RelationshipID
	return err
}

// 2. Dated evidence whose valid_from the verifier confirms supersedes alice's prior relationship.
func (s *story) supersede() error {
	s.printf("\n2. Dated evidence supersedes the prior relationship")
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	out, err := s.deployment(s.alice, "deploy-release", "Since 2026-05-01 production deploys from release.", "release", &from)
	if err != nil {
		return err
	}
	s.release = out.RelationshipID
	for _, id := range out.Related {
		tr, err := s.client.Trace(s.ctx, s.alice, densemem.TraceRequest{RelationshipID: id})
		if err != nil {
			return err
		}
		r := tr.Relationship
		s.printf("  prior %s is now %s, valid_to %s\n", s.name(id), r.Status, optDay(r.ValidTo))
	}
	return nil
}

// 3. An undated conflicting claim does not establish replacement: it is held for a decision, which
// its owner then takes with Resolve.
func (s *story) hold() error {
	s.printf("\n3. An undated conflicting claim is held for review")
	out, err := s.deployment(s.alice, "deploy-hotfix", "Production deploys from hotfix.", "hotfix", nil)
	if err != nil {
		return err
	}
	names := make([]string, len(out.Related))
	for i, id := range out.Related {
		names[i] = s.name(id)
	}
	s.printf("  conflicts with: %s\n", strings.Join(names, ", "))
	if rp := out.Review; rp != nil {
		s.printf("  review (%s): %s\n", rp.Kind, s.names(rp.Question))
		for _, c := range rp.Choices {
			s.printf("    - %s: %s%s\n", c.Action, c.Description, s.impact(c.Impact))
		}
	}
	// The user says release is still current: alice answers the exact question with Resolve.
	res, err := s.client.Resolve(s.ctx, s.alice, densemem.ResolveRequest{IngestID: s.lastIngest,
		PlacementItemID: out.PlacementItemID, Action: densemem.ActionKeepPriorRejectNew,
		Decision: &densemem.ResolveDecision{Reason: "the user says release is still current"}, IdempotencyKey: "decide-hotfix"})
	if err != nil {
		return err
	}
	s.printf("[%s] alice decides %s%s\n", stamp(s.clock()), res.Action, s.impact(res.Changes))
	return nil
}

// impact describes the relationship changes of a decision: " «name» from -> to, ...".
func (s *story) impact(changes []densemem.RelationshipChange) string {
	var parts []string
	for _, ch := range changes {
		parts = append(parts, fmt.Sprintf("%s %s -> %s", s.name(ch.RelationshipID), ch.Before.Status, ch.After.Status))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// 4. Same-team visibility does not authorise changing another profile's knowledge.
func (s *story) refuse() error {
	s.printf("\n4. Only the owner may forget a relationship\n")
	_, err := s.client.Forget(s.ctx, s.bob, densemem.ForgetRequest{RelationshipID: s.release,
		Reason: "bob thinks it is wrong", IdempotencyKey: "bob-forget-release"})
	switch {
	case errors.Is(err, densemem.ErrNotOwner):
		s.printf("[%s] bob tries to forget alice's %s: refused, errors.Is(err, densemem.ErrNotOwner)\n",
			stamp(s.clock()), s.name(s.release))
	case err == nil:
		return fmt.Errorf("quickstart: bob forgot alice's relationship; want ErrNotOwner")
	default:
		return fmt.Errorf("quickstart: bob's forget: want ErrNotOwner, got %w", err)
	}
	return nil
}

// 5. Trace explains the current relationship and the superseded prior.
func (s *story) trace() error {
	s.printf("\n5. Trace explains a relationship down to its evidence\n")
	s.printf("[%s] alice traces the current relationship\n", stamp(s.clock()))
	if err := s.printTrace(s.release, true); err != nil {
		return err
	}
	s.printf("alice traces the superseded prior\n")
	return s.printTrace(s.main, false)
}

// 6. Forget retracts the relationship: it leaves semantic_edges, its history stays.
func (s *story) forget() error {
	s.printf("\n6. Forget retracts without deleting history\n")
	before, err := s.edges()
	if err != nil {
		return err
	}
	req := densemem.ForgetRequest{RelationshipID: s.release, Reason: "release branch retired", IdempotencyKey: "forget-release"}
	res, err := s.client.Forget(s.ctx, s.alice, req)
	if err != nil {
		return err
	}
	after, err := s.edges()
	if err != nil {
		return err
	}
	s.printf("[%s] alice forgets %s: status %s, version %d, already_retracted %t, replayed %t\n",
		stamp(s.clock()), s.name(res.RelationshipID), res.Status, res.Version, res.AlreadyRetracted, res.Replayed)
	s.printf("  semantic_edges of the team: %d before, %d after\n", before, after)
	again, err := s.client.Forget(s.ctx, s.alice, req)
	if err != nil {
		return err
	}
	s.printf("  the same request again (same idempotency key): status %s, version %d, replayed %t\n",
		again.Status, again.Version, again.Replayed)
	s.printf("alice traces the forgotten relationship\n")
	return s.printTrace(s.release, false)
}

// edges counts the team's rows of the semantic_edges view: its current, active relationships. The
// query runs in a transaction the store binds to the team (ReadTx), as its own calls are, so it
// sees the team's rows under row-level security when the store connects as the runtime role.
func (s *story) edges() (int, error) {
	var n int
	err := s.st.ReadTx(s.ctx, s.team, func(tx pgx.Tx) error {
		return tx.QueryRow(s.ctx, "SELECT count(*) FROM densemem.semantic_edges WHERE team_id = $1", s.team).Scan(&n)
	})
	return n, err
}

// printTrace prints a relationship's trace; full adds evidence, verification events and neighbours.
func (s *story) printTrace(id densemem.RelationshipID, full bool) error {
	tr, err := s.client.Trace(s.ctx, s.alice, densemem.TraceRequest{RelationshipID: id, IncludeEvidenceContent: true,
		IncludeVerification: true, IncludeTransitions: true, MaxDepth: 1, MaxEdges: 12})
	if err != nil {
		return err
	}
	r := tr.Relationship
	s.printf("  %s %s %s (%s -> %s), polarity %s, owner %s\n", r.Subject.Name, r.Predicate, r.Object.Name,
		r.Subject.Kind, r.Object.Kind, r.Polarity, s.profiles[r.OwnerProfileID])
	s.printf("  status %s, tier %s, version %d, valid %s .. %s\n", r.Status, r.Tier, r.Version,
		optDay(r.ValidFrom), optDay(r.ValidTo))
	if full {
		s.printf("  predicate v%d: %s, current_cardinality %s; source count %d\n",
			r.PredicateVersion, r.RelationshipKind, r.CurrentCardinality, r.SourceCount)
		s.printf("  evidence:\n")
		for _, e := range tr.Evidence {
			s.printf("    - %q [%d:%d] %s, %s, by %s\n", e.Excerpt, e.Start, e.End, e.SourceType, e.Authority,
				s.profiles[e.AuthorProfileID])
		}
		s.printf("  verification:\n")
		for _, v := range tr.Verifications {
			s.printf("    - %s: %s (confidence %.2f), support granted %t", v.Verifier, v.Verdict, v.Confidence, v.SupportGranted)
			if v.ConfirmedValidFrom != nil {
				s.printf(", confirmed valid_from %s", day(*v.ConfirmedValidFrom))
			}
			s.printf("\n      %s\n", v.Rationale)
		}
	}
	s.printf("  transitions:\n")
	for _, t := range tr.Transitions {
		from := string(t.FromStatus)
		if from == "" {
			from = "(new)"
		}
		s.printf("    - v%d %s: %s -> %s, tier %s, valid_to %s, %q by %s", t.ToVersion, stamp(t.CreatedAt),
			from, t.ToStatus, t.ToTier, optDay(t.ToValidTo), t.Reason, s.actor(t))
		if t.RelatedRelationshipID != "" {
			s.printf(", related %s", s.name(t.RelatedRelationshipID))
		}
		s.printf("\n")
	}
	if full {
		s.printf("  neighbours within 1 hop: %d\n", len(tr.Neighbours))
		for _, n := range tr.Neighbours {
			s.printf("    - %s %s %s (%s)\n", n.Subject.Name, n.Predicate, n.Object.Name, n.Status)
		}
	}
	return nil
}

func (s *story) actor(t densemem.TraceTransition) string {
	if name, ok := s.profiles[t.ActorProfileID]; ok {
		return name
	}
	return t.ActorKind
}

// name returns a relationship's readable name.
func (s *story) name(id densemem.RelationshipID) string {
	if n, ok := s.rels[id]; ok {
		return "«" + n + "»"
	}
	return "an unknown relationship"
}

// names replaces every relationship ID the story knows in text with its readable name.
func (s *story) names(text string) string {
	for id := range s.rels {
		text = strings.ReplaceAll(text, string(id), s.name(id))
	}
	return text
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func optDay(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return day(*t)
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/densememtest"
	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clock is the tests' injected clock; only the test moves it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// fixture is one test's database and team: an admin (read, vocabulary) who registered deploys_from,
// and three writers A, B and C.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	clock   *clock
	db      *densememtest.DB
	client  *densemem.Client
	team    densemem.TeamID
	A, B, C densemem.Principal
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: t.Context(), clock: &clock{now: time.Date(2025, 12, 1, 9, 0, 0, 0, time.UTC)}}
	f.db = densememtest.New(t, &densemem.Config{Clock: f.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	f.client = f.db.Client
	var err error
	if f.team, err = f.client.CreateTeam(f.ctx, densemem.CreateTeamRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	admin := f.profile(f.team, "admin", "read", "vocabulary")
	f.A, f.B, f.C = f.profile(f.team, "alice", "read", "write"), f.profile(f.team, "bob", "read", "write"),
		f.profile(f.team, "carol", "read", "write")
	f.register(admin)
	return f
}

func (f *fixture) profile(team densemem.TeamID, name string, scopes ...densemem.Scope) densemem.Principal {
	f.t.Helper()
	id, err := f.client.CreateProfile(f.ctx, team, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
	if err != nil {
		f.t.Fatal(err)
	}
	return densemem.Principal{TeamID: team, ProfileID: id}
}

func (f *fixture) register(admin densemem.Principal) {
	f.t.Helper()
	_, err := f.client.RegisterPredicate(f.ctx, admin, densemem.PredicateDefinition{
		Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"},
		SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"},
		Description: "the git branch an environment deploys from"})
	if err != nil {
		f.t.Fatal(err)
	}
}

// session connects the SDK's own client, over in-memory transports, to a server bound to p.
func (f *fixture) session(p densemem.Principal) *mcp.ClientSession {
	f.t.Helper()
	server, err := mcpserver.New(f.client, mcpserver.Options{Principal: mcpserver.Fixed(p)})
	if err != nil {
		f.t.Fatal(err)
	}
	return connect(f.t, server)
}

func connect(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "0"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

// result is a successful tool call: its structured content decoded as T, and its text.
type result[T any] struct {
	out  T
	text string
}

// call calls tool with args and fails the test unless it succeeds with structured content.
func call[T any](t *testing.T, cs *mcp.ClientSession, tool string, args any) result[T] {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	text := textOf(res)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, text)
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structured content", tool)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out result[T]
	if err := json.Unmarshal(b, &out.out); err != nil {
		t.Fatalf("%s: structured content: %v", tool, err)
	}
	out.text = text
	return out
}

// callErr calls tool with args and returns the text of the tool error it must answer with.
func callErr(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if !res.IsError {
		t.Fatalf("%s: succeeded, want a tool error: %s", tool, textOf(res))
	}
	return textOf(res)
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

var keys struct {
	sync.Mutex
	n int
}

func nextKey() string {
	keys.Lock()
	defer keys.Unlock()
	keys.n++
	return fmt.Sprintf("mcp-key-%d", keys.n)
}

// deployment is remember's arguments for "<content>" stating production deploys_from branch, citing
// all of it, optionally dated and answering a conflict case.
func deployment(content, branch string, validFrom *time.Time, response *densemem.ConflictResponse) densemem.RememberRequest {
	return densemem.RememberRequest{
		IdempotencyKey: nextKey(),
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

// onlyOutcome returns a placement's one relationship outcome.
func onlyOutcome(t *testing.T, pl densemem.Placement) densemem.RelationshipOutcome {
	t.Helper()
	if len(pl.RelationshipOutcomes) != 1 {
		t.Fatalf("%d relationship outcomes, want 1", len(pl.RelationshipOutcomes))
	}
	return pl.RelationshipOutcomes[0]
}

func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session bound to profile A cannot act as B by any tool argument: every tool refuses arguments
// naming a team or a profile before it runs, B's relationships and review items are refused by ID
// (not owner), another team's are not found, and nothing of B's changes.
func TestSessionCannotActAsAnotherProfile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.session(f.A), f.session(f.B)

	// B's current relationship and B's open review item (a same-owner hold).
	bMain := onlyOutcome(t, call[densemem.Placement](t, b, mcpserver.ToolRemember,
		deployment("Staging deploys from main.", "main", nil, nil)).out)
	f.clock.Advance(time.Hour)
	bProd := onlyOutcome(t, call[densemem.Placement](t, b, mcpserver.ToolRemember,
		deployment("Production deploys from develop.", "develop", nil, nil)).out)
	f.clock.Advance(time.Hour)
	bHeldPl := call[densemem.Placement](t, b, mcpserver.ToolRemember, deployment("Production deploys from hotfix.", "hotfix", nil, nil))
	bHeld := onlyOutcome(t, bHeldPl.out)
	if bHeld.Review == nil {
		t.Fatalf("B's second statement: %s, want held for review", bHeld.Category)
	}
	before := f.stateOfB(bMain.RelationshipID, bProd.RelationshipID, bHeld.RelationshipID)

	impersonation := map[string]any{"team_id": string(f.B.TeamID), "profile_id": string(f.B.ProfileID)}
	asB := func(args map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range args {
			out[k] = v
		}
		for k, v := range impersonation {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		tool string
		args map[string]any
	}{
		{mcpserver.ToolRemember, asB(toMap(t, deployment("Staging deploys from release.", "release", nil, nil)))},
		{mcpserver.ToolRecall, asB(map[string]any{"query": "deploys"})},
		{mcpserver.ToolTrace, asB(map[string]any{"relationship_id": string(bMain.RelationshipID)})},
		{mcpserver.ToolResolve, asB(map[string]any{"ingest_id": bHeldPl.out.IngestID, "placement_item_id": bHeld.PlacementItemID,
			"action": "keep_prior_reject_new", "idempotency_key": nextKey()})},
		{mcpserver.ToolForget, asB(map[string]any{"relationship_id": string(bMain.RelationshipID), "idempotency_key": nextKey()})},
		{mcpserver.ToolListConflicts, asB(map[string]any{})},
		{mcpserver.ToolListReviewItems, asB(map[string]any{"all_profiles": true})},
		{mcpserver.ToolListReviewItems, map[string]any{"profile_id": string(f.B.ProfileID)}},
		{mcpserver.ToolRecall, map[string]any{"query": "deploys", "principal": map[string]any{"team_id": "x", "profile_id": "y"}}},
	}
	for _, c := range cases {
		msg := callErr(t, a, c.tool, c.args)
		if !strings.Contains(msg, "additional properties") {
			t.Errorf("%s with %v: %q, want the unknown team/profile arguments refused", c.tool, c.args, msg)
		}
	}

	// B's things by ID: refused as not A's, naming whose they are.
	msg := callErr(t, a, mcpserver.ToolForget, map[string]any{"relationship_id": string(bMain.RelationshipID), "idempotency_key": nextKey()})
	mustContain(t, "forget of B's relationship", msg, "not the owner", string(f.B.ProfileID), "remember new evidence")
	msg = callErr(t, a, mcpserver.ToolResolve, map[string]any{"ingest_id": bHeldPl.out.IngestID,
		"placement_item_id": bHeld.PlacementItemID, "action": "supersede_prior", "idempotency_key": nextKey()})
	mustContain(t, "resolve of B's item", msg, "not the owner", string(f.B.ProfileID))
	if items := call[densemem.ListReviewItemsResponse](t, a, mcpserver.ToolListReviewItems, map[string]any{}); len(items.out.ReviewItems) != 0 {
		t.Errorf("A lists %d review items, want none of B's", len(items.out.ReviewItems))
	}

	// Another team's relationship is not found from A's session.
	foreign := f.otherTeamRelationship()
	msg = callErr(t, a, mcpserver.ToolTrace, map[string]any{"relationship_id": string(foreign)})
	mustContain(t, "trace of another team's relationship", msg, "not found")
	msg = callErr(t, a, mcpserver.ToolForget, map[string]any{"relationship_id": string(foreign), "idempotency_key": nextKey()})
	mustContain(t, "forget of another team's relationship", msg, "not found")

	if after := f.stateOfB(bMain.RelationshipID, bProd.RelationshipID, bHeld.RelationshipID); after != before {
		t.Errorf("B's state changed:\nbefore %s\nafter  %s", before, after)
	}
}

// otherTeamRelationship remembers a relationship in another team and returns its ID.
func (f *fixture) otherTeamRelationship() densemem.RelationshipID {
	f.t.Helper()
	other, err := f.client.CreateTeam(f.ctx, densemem.CreateTeamRequest{Name: "other"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.register(f.profile(other, "admin", "read", "vocabulary"))
	outsider := f.profile(other, "mallory", "read", "write")
	return onlyOutcome(f.t, call[densemem.Placement](f.t, f.session(outsider), mcpserver.ToolRemember,
		deployment("Production deploys from trunk.", "trunk", nil, nil)).out).RelationshipID
}

// stateOfB is B's relationships' status and version and B's open review items, as text.
func (f *fixture) stateOfB(ids ...densemem.RelationshipID) string {
	f.t.Helper()
	var b strings.Builder
	for _, id := range ids {
		tr, err := f.client.Trace(f.ctx, f.B, densemem.TraceRequest{RelationshipID: id})
		if err != nil {
			f.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%s:v%d ", id, tr.Relationship.Status, tr.Relationship.Version)
	}
	items, err := f.client.ListReviewItems(f.ctx, f.B, densemem.ListReviewItemsRequest{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, it := range items.ReviewItems {
		fmt.Fprintf(&b, "%s:%s ", it.ReviewID, it.Status)
	}
	return b.String()
}

// A host principal, or a binding that fails, runs no tool.
func TestUnboundSessionRunsNoTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for name, bind := range map[string]func(context.Context, *mcp.CallToolRequest) (densemem.Principal, error){
		"host principal": mcpserver.Fixed(densemem.HostPrincipal(f.team)),
		"no profile":     mcpserver.Fixed(densemem.Principal{TeamID: f.team}),
		"binding error": func(context.Context, *mcp.CallToolRequest) (densemem.Principal, error) {
			return densemem.Principal{}, errors.New("no user")
		},
	} {
		server, err := mcpserver.New(f.client, mcpserver.Options{Principal: bind})
		if err != nil {
			t.Fatal(err)
		}
		msg := callErr(t, connect(t, server), mcpserver.ToolRecall, map[string]any{"query": "deploys"})
		mustContain(t, name, msg, "unbound session", "no tool can run")
	}
	if _, err := mcpserver.New(f.client, mcpserver.Options{}); !errors.Is(err, mcpserver.ErrNoPrincipal) {
		t.Errorf("New without Principal: %v, want ErrNoPrincipal", err)
	}
	if err := mcpserver.Serve(f.ctx, f.client, densemem.HostPrincipal(f.team), nil); err == nil {
		t.Errorf("Serve with a host principal: nil error")
	}
}

// A validation error lists the fields and problems, and nothing is written.
func TestValidationErrorListsFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.session(f.A)
	req := deployment("Production deploys from main.", "main", nil, nil)
	req.Proposal.Relationships[0].Evidence[0].End = 999
	msg := callErr(t, a, mcpserver.ToolRemember, req)
	mustContain(t, "citation error", msg, "Invalid arguments; nothing was written",
		"- proposal.relationships[0].evidence[0]: end 999 is outside the item's 29 characters")
	req = deployment("Production deploys from main.", "main", nil, nil)
	req.IdempotencyKey, req.Evidence[0].SourceGroup = "", "bad\x00group"
	msg = callErr(t, a, mcpserver.ToolRemember, req)
	mustContain(t, "validation error", msg, "Invalid arguments; nothing was written", "- idempotency_key:",
		"- evidence[0].source_group:")
	rec := call[densemem.RecallResponse](t, a, mcpserver.ToolRecall, densemem.RecallRequest{Query: "production"})
	if len(rec.out.Results) != 0 {
		t.Errorf("an invalid remember wrote %d relationships", len(rec.out.Results))
	}
}

// toMap is v as tool arguments.
func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

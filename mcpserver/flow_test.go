package mcpserver_test

import (
	"slices"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/mcpserver"
)

// The specification's same-owner conflict flow, through the SDK's own client: remember →
// relationship_needs_review → trace_memory(related relationship_id) → the user's decision →
// resolve_memory_placement → the prior superseded and the new statement current.
func TestSameOwnerFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cs := f.session(f.A)

	prior := onlyOutcome(t, call[densemem.Placement](t, cs, mcpserver.ToolRemember,
		deployment("Production deploys from main.", "main", nil, nil)).out)
	if prior.Category != densemem.CategoryAccepted || prior.Status != "active" {
		t.Fatalf("prior: %s/%s (%s), want accepted and active", prior.Category, prior.Status, prior.Reason)
	}

	// "Production now deploys from release": held for review against the owner's prior.
	f.clock.Advance(time.Hour)
	rem := call[densemem.Placement](t, cs, mcpserver.ToolRemember,
		deployment("Production now deploys from release.", "release", nil, nil))
	held := onlyOutcome(t, rem.out)
	if held.Category != densemem.CategoryNeedsReview || held.Review == nil || !slices.Contains(held.Related, prior.RelationshipID) {
		t.Fatalf("held: %s (review %v, related %v), want relationship_needs_review against %s", held.Category, held.Review,
			held.Related, prior.RelationshipID)
	}
	t.Logf("remember:\n%s", rem.text)
	mustContain(t, "remember's text", rem.text, "relationship_needs_review", held.Review.Question, "supersede_prior",
		"keep_prior_reject_new", "impact: "+string(prior.RelationshipID)+" active/validated_claim v1 -> superseded/validated_claim v2",
		"trace_memory", "resolve_memory_placement", held.PlacementItemID)

	// trace_memory on the related relationship: current state, history and the explicit choices.
	f.clock.Advance(time.Minute)
	tr := call[densemem.TraceResult](t, cs, mcpserver.ToolTrace, densemem.TraceRequest{RelationshipID: prior.RelationshipID,
		IncludeEvidenceContent: true, IncludeVerification: true, IncludeTransitions: true, MaxDepth: 1, MaxEdges: 12})
	if tr.out.Relationship.Status != "active" || len(tr.out.ReviewItems) != 1 {
		t.Fatalf("trace: %s with %d review items, want active with the held statement's item", tr.out.Relationship.Status,
			len(tr.out.ReviewItems))
	}
	item := tr.out.ReviewItems[0]
	if item.PlacementItemID != held.PlacementItemID || item.IngestID != rem.out.IngestID || item.Prompt == nil {
		t.Fatalf("trace's review item %+v, want the held statement's", item)
	}
	mustContain(t, "trace's text", tr.text, "«production deploys_from main»", "Production deploys from main.",
		item.Prompt.Question, "supersede_prior", "current_cardinality one")

	// The user says release replaced main: the host resolves with the exact item.
	f.clock.Advance(time.Minute)
	res := call[densemem.ResolveResult](t, cs, mcpserver.ToolResolve, densemem.ResolveRequest{IngestID: item.IngestID,
		PlacementItemID: item.PlacementItemID, Action: densemem.ActionSupersedePrior, IdempotencyKey: nextKey(),
		Decision: &densemem.ResolveDecision{Reason: "the user confirmed production now deploys from release"}})
	got := map[densemem.RelationshipID]string{}
	for _, c := range res.out.Changes {
		got[c.RelationshipID] = string(c.Before.Status) + "->" + string(c.After.Status)
	}
	want := map[densemem.RelationshipID]string{prior.RelationshipID: "active->superseded", held.RelationshipID: "needs_review->active"}
	if !maps2equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	mustContain(t, "resolve's text", res.text, "supersede_prior", string(prior.RelationshipID)+" active/validated_claim v1 -> superseded")

	// The state the specification describes: release is current, main is not, both traceable.
	rec := call[densemem.RecallResponse](t, cs, mcpserver.ToolRecall, densemem.RecallRequest{Query: "production deploys from"})
	current := map[string]bool{}
	for _, r := range rec.out.Results {
		current[r.Relationship.Object.Name] = r.Current
	}
	if !current["release"] || current["main"] {
		t.Errorf("recall: current %v, want release current and main not", current)
	}
	after := call[densemem.TraceResult](t, cs, mcpserver.ToolTrace, densemem.TraceRequest{RelationshipID: prior.RelationshipID,
		IncludeTransitions: true})
	if after.out.Relationship.Status != "superseded" || len(after.out.Transitions) != 2 {
		t.Errorf("prior after the decision: %s with %d transitions, want superseded with 2", after.out.Relationship.Status,
			len(after.out.Transitions))
	}
	items := call[densemem.ListReviewItemsResponse](t, cs, mcpserver.ToolListReviewItems, map[string]any{})
	if len(items.out.ReviewItems) != 0 {
		t.Errorf("%d open review items after the decision, want none", len(items.out.ReviewItems))
	}
	// The same decision again is stale: the tool error says to trace and ask again.
	msg := callErr(t, cs, mcpserver.ToolResolve, densemem.ResolveRequest{IngestID: item.IngestID,
		PlacementItemID: item.PlacementItemID, Action: densemem.ActionKeepPriorRejectNew, IdempotencyKey: nextKey()})
	mustContain(t, "stale decision error", msg, "stale decision", "trace_memory")
}

func maps2equal(a, b map[densemem.RelationshipID]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The specification's stale team knowledge story, through the SDK's own client: A records main, B
// corrects it with dated evidence, C's recall_memory shows the conflict question and both positions,
// C answers with evidence, the nightly review resolves the case after its deadline, and C's
// recall_memory shows the resolution.
func TestStaleTeamStory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b, c := f.session(f.A), f.session(f.B), f.session(f.C)
	t1 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	t2 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

	main := onlyOutcome(t, call[densemem.Placement](t, a, mcpserver.ToolRemember,
		deployment("Production deploys from main.", "main", nil, nil)).out)
	f.clock.Set(t2)
	rem := call[densemem.Placement](t, b, mcpserver.ToolRemember,
		deployment("Since 2026-05-01 production deploys from release.", "release", &t1, nil))
	release := onlyOutcome(t, rem.out)
	if release.Conflict == nil || release.Status != "active" {
		t.Fatalf("B's correction: %s/%s, conflict %v, want active with a team case", release.Category, release.Status, release.Conflict)
	}
	mustContain(t, "B's remember text", rem.text, "team conflict case "+release.Conflict.ConflictID, "nightly reviewer")

	// C recalls while the case is open: both positions, their owners and the question.
	f.clock.Advance(25 * time.Hour)
	open := call[densemem.RecallResponse](t, c, mcpserver.ToolRecall, densemem.RecallRequest{Query: "production deploys from"})
	if len(open.out.Conflicts) != 1 || open.out.Conflicts[0].Question == "" || len(open.out.Conflicts[0].Positions) != 2 {
		t.Fatalf("C's recall: %+v, want one open case with two positions and a question", open.out.Conflicts)
	}
	cs := open.out.Conflicts[0]
	t.Logf("recall_memory:\n%s", open.text)
	mustContain(t, "C's recall text", open.text, "Question: "+cs.Question, `"main": owners `+string(f.A.ProfileID),
		`"release": owners `+string(f.B.ProfileID), "1 counted source group(s)", `"expected_version": `)

	// C answers with her own evidence; an answer at the version she read before that is stale.
	f.clock.Advance(10 * time.Minute)
	resp := &densemem.ConflictResponse{ConflictID: cs.ConflictID, ExpectedVersion: cs.Version}
	call[densemem.Placement](t, c, mcpserver.ToolRemember, deployment(
		"Checked the pipeline settings: since 2026-05-01 production deploys from release.", "release", &t1, resp))
	msg := callErr(t, a, mcpserver.ToolRemember, deployment("Production deploys from main.", "main", nil, resp))
	mustContain(t, "stale conflict version error", msg, "stale conflict case version", "recall_memory", "expected_version")

	// The host's nightly review, after the case's deadline: release wins, main is superseded.
	f.clock.Set(cs.ReviewDueAt.Add(24 * time.Hour).Truncate(24 * time.Hour).Add(2 * time.Hour))
	rep, err := f.client.RunNightlyReview(f.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{f.team}, WorkerID: "nightly"})
	if err != nil || rep.Resolved != 1 {
		t.Fatalf("nightly review: %+v, %v, want the case resolved", rep, err)
	}

	f.clock.Advance(8 * time.Hour)
	done := call[densemem.RecallResponse](t, c, mcpserver.ToolRecall, densemem.RecallRequest{Query: "production deploys from"})
	var preferred *densemem.RecallResult
	for i, r := range done.out.Results {
		if r.Relationship.RelationshipID == main.RelationshipID && r.Current {
			t.Errorf("A's main is still current after the resolution")
		}
		if r.ResolvedConflict != nil && r.ResolvedConflict.ConflictID == cs.ConflictID && r.Relationship.Object.Name == "release" {
			preferred = &done.out.Results[i]
		}
	}
	if preferred == nil || len(done.out.Conflicts) != 0 {
		t.Fatalf("C's recall after the nightly run: %+v, want release preferred by the resolved case and no live case", done.out)
	}
	mustContain(t, "C's recall text after resolution", done.text, "preferred by resolved conflict case "+cs.ConflictID,
		"effective_at 2026-05-01T00:00:00Z")
	tr := call[densemem.TraceResult](t, c, mcpserver.ToolTrace, densemem.TraceRequest{RelationshipID: main.RelationshipID,
		IncludeTransitions: true})
	if tr.out.Relationship.Status != "superseded" {
		t.Errorf("A's main is %s after the resolution, want superseded", tr.out.Relationship.Status)
	}
	t.Logf("trace_memory:\n%s", tr.text)
	mustContain(t, "trace text after resolution", tr.text, "system_conflict_reviewer", "(preferred)")
	lc := call[densemem.ListConflictsResponse](t, c, mcpserver.ToolListConflicts,
		densemem.ListConflictsRequest{Status: []string{"resolved"}})
	if len(lc.out.Conflicts) != 1 || lc.out.Conflicts[0].Status != "resolved" {
		t.Errorf("list_conflicts resolved: %+v, want the one case", lc.out.Conflicts)
	}
}

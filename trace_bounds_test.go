package densemem_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem"
)

// Trace bounds: every list of a Trace response is at most the request's limit, a list cut short is
// named in Truncated, and following its NextAfter returns every row exactly once in order.

// traceListIDs returns the IDs of one list of a Trace response, in response order.
func traceListIDs(tr *densemem.TraceResult, list string) []string {
	var out []string
	switch list {
	case densemem.TraceListEvidence:
		for _, x := range tr.Evidence {
			out = append(out, x.SupportID)
		}
	case densemem.TraceListObservations:
		for _, x := range tr.Observations {
			out = append(out, x.ObservationID)
		}
	case densemem.TraceListVerifications:
		for _, x := range tr.Verifications {
			out = append(out, x.VerificationID)
		}
	case densemem.TraceListTransitions:
		for _, x := range tr.Transitions {
			out = append(out, x.TransitionID)
		}
	case densemem.TraceListIdentityResolutions:
		for _, x := range tr.IdentityResolutions {
			out = append(out, x.ResolutionID)
		}
	case densemem.TraceListReviewItems:
		for _, x := range tr.ReviewItems {
			out = append(out, x.ReviewID)
		}
	case densemem.TraceListCrossReferences:
		for _, x := range tr.CrossReferences {
			out = append(out, x.CrossReferenceID)
		}
	case densemem.TraceListConflicts:
		for _, x := range tr.Conflicts {
			out = append(out, x.ConflictID)
		}
	default: // conflicts.<id>.events
		for _, c := range tr.Conflicts {
			if densemem.TraceConflictEventsList(c.ConflictID) == list {
				for _, x := range c.Events {
					out = append(out, x.EventID)
				}
			}
		}
	}
	return out
}

// truncationOf returns the Truncated entry of list, or nil.
func truncationOf(tr *densemem.TraceResult, list string) *densemem.TraceTruncation {
	for i := range tr.Truncated {
		if tr.Truncated[i].List == list {
			return &tr.Truncated[i]
		}
	}
	return nil
}

// tracePage traces req with After set to base plus list's cursor.
func (e *env) tracePage(p densemem.Principal, req densemem.TraceRequest, base map[string]string, list, cursor string) *densemem.TraceResult {
	e.t.Helper()
	req.After = map[string]string{}
	for k, v := range base {
		req.After[k] = v
	}
	if cursor != "" {
		req.After[list] = cursor
	}
	tr, err := e.client.Trace(e.ctx, p, req)
	if err != nil {
		e.t.Fatalf("trace %s after %q: %v", list, cursor, err)
	}
	return tr
}

// traceListPages follows list's NextAfter from its first page until the list is no longer truncated,
// checking every page against the limit and the truncation report, and returns the IDs in order.
func (e *env) traceListPages(p densemem.Principal, req densemem.TraceRequest, base map[string]string, list string) []string {
	e.t.Helper()
	var all []string
	cursor := ""
	for page := 0; ; page++ {
		if page > 1000 {
			e.t.Fatalf("%s: more than 1000 pages", list)
		}
		tr := e.tracePage(p, req, base, list, cursor)
		ids := traceListIDs(tr, list)
		if len(ids) > req.Limit {
			e.t.Errorf("%s page %d holds %d items, more than the limit %d", list, page, len(ids), req.Limit)
		}
		all = append(all, ids...)
		cut := truncationOf(tr, list)
		if cut == nil {
			return all
		}
		if cut.Returned != len(ids) || cut.NextAfter == "" {
			e.t.Errorf("%s page %d: truncation %+v for %d items", list, page, *cut, len(ids))
		}
		cursor = cut.NextAfter
	}
}

// busyTracedRelationship builds a relationship of A ("production deploys_from main") with at least three items in
// every Trace list and three conflict cases, and returns it. The clock stands still for stretches,
// so many rows share a recorded time and the IDs order them.
func (e *env) busyTracedRelationship() densemem.RelationshipID {
	e.t.Helper()
	d := e.mustProfile("D", "read", "write")
	want := func(o densemem.RelationshipOutcome, cat densemem.Category) densemem.RelationshipOutcome {
		e.t.Helper()
		if o.Category != cat {
			e.t.Fatalf("%s: %s (%s), want %s", o.ProposalID, o.Category, o.Reason, cat)
		}
		return o
	}
	forget := func(p densemem.Principal, id densemem.RelationshipID) {
		e.t.Helper()
		if _, err := e.client.Forget(e.ctx, p, densemem.ForgetRequest{RelationshipID: id, IdempotencyKey: nextKey()}); err != nil {
			e.t.Fatal(err)
		}
	}
	// Three identical claims: three supports, observations and verifications.
	m := want(e.remember(e.A, deploy("production", "main")), densemem.CategoryAccepted).RelationshipID
	for range 2 {
		want(e.remember(e.A, deploy("production", "main")), densemem.CategorySupported)
	}
	// Three undated incompatible claims of A, each held with a review item naming m.
	for _, branch := range []string{"hotfix-1", "hotfix-2", "hotfix-3"} {
		want(e.remember(e.A, deploy("production", branch)), densemem.CategoryNeedsReview)
	}
	e.clock.Advance(time.Minute)
	// A second source group makes m a fact: its second transition.
	g2 := withContent(deploy("production", "main"), "The runbook: the production environment deploys from the main branch.")
	g2.sourceGroup = "runbook"
	want(e.remember(e.A, g2), densemem.CategorySupported)
	// Case 1: B, C and D disagree with A in turn, then withdraw: six events, three cross-references.
	e.clock.Advance(time.Minute)
	b1 := e.remember(e.B, deploy("production", "dev")).RelationshipID
	c1 := e.remember(e.C, deploy("production", "staging")).RelationshipID
	d1 := e.remember(d, deploy("production", "qa")).RelationshipID
	forget(e.B, b1)
	forget(e.C, c1)
	forget(d, d1)
	// Case 2: opened and dismissed.
	e.clock.Advance(time.Minute)
	b2 := e.remember(e.B, deploy("production", "dev-2")).RelationshipID
	forget(e.B, b2)
	// Case 3: two disagreements, then A forgets m (its third transition); the case stays open.
	e.clock.Advance(time.Minute)
	e.remember(e.C, deploy("production", "staging-2"))
	e.remember(e.B, deploy("production", "dev-3"))
	forget(e.A, m)
	return m
}

// traceListsFromTables returns, straight from the tables and in one snapshot, the IDs of each Trace
// list of relationship id in the list's documented order.
func (e *env) traceListsFromTables(id densemem.RelationshipID) map[string][]string {
	e.t.Helper()
	obs := `(SELECT observation_id FROM support_links WHERE relationship_id = $1
	         UNION SELECT observation_id FROM relationships WHERE relationship_id = $1)`
	var want map[string][]string
	e.snapshot(func(l ledgerView) {
		want = map[string][]string{
			densemem.TraceListEvidence: l.Strings(`SELECT support_id FROM support_links WHERE relationship_id = $1
			ORDER BY created_at, observation_id, verification_id, support_id`, id),
			densemem.TraceListObservations: l.Strings(`SELECT observation_id FROM observations WHERE observation_id IN `+obs+`
			ORDER BY created_at, observation_id`, id),
			densemem.TraceListVerifications: l.Strings(`SELECT v.verification_id FROM verification_events v
			JOIN observations o ON o.team_id = v.team_id AND o.observation_id = v.observation_id
			WHERE o.observation_id IN `+obs+` ORDER BY o.created_at, o.observation_id, v.verification_id`, id),
			densemem.TraceListTransitions: l.Strings(`SELECT transition_id FROM relationship_transitions WHERE relationship_id = $1
			ORDER BY to_version`, id),
			densemem.TraceListIdentityResolutions: l.Strings(`SELECT e.resolution_id FROM entity_resolution_events e, relationships r
			WHERE r.relationship_id = $1 AND (e.entity_id IN (r.subject_entity_id, r.object_entity_id) OR e.observation_id = r.observation_id)
			ORDER BY e.created_at, e.resolution_id`, id),
			densemem.TraceListReviewItems: l.Strings(`SELECT review_id FROM review_items WHERE relationship_id = $1 OR $1 = ANY(related_ids)
			ORDER BY created_at, review_id`, id),
			densemem.TraceListCrossReferences: l.Strings(`SELECT xref_id FROM relationship_cross_references
			WHERE from_relationship_id = $1 OR to_relationship_id = $1 ORDER BY created_at, xref_id`, id),
			densemem.TraceListConflicts: l.Strings(`SELECT conflict_id FROM conflict_cases
			WHERE conflict_id IN (SELECT conflict_id FROM conflict_position_members WHERE relationship_id = $1)
			ORDER BY opened_at, conflict_id`, id),
		}
		for _, c := range want[densemem.TraceListConflicts] {
			want[densemem.TraceConflictEventsList(c)] = l.Strings(`SELECT event_id FROM conflict_events WHERE conflict_id = $1
			ORDER BY case_version`, c)
		}
	})
	return want
}

// TestTraceBoundsEveryList pages every list of a relationship with more items than the limit in each:
// each page is at most the limit, Truncated names exactly the lists that go on, and following
// NextAfter returns every row once, in order, as the tables hold them.
func TestTraceBoundsEveryList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.busyTracedRelationship()
	want := e.traceListsFromTables(m)
	const limit = 2
	lists := []string{densemem.TraceListEvidence, densemem.TraceListObservations, densemem.TraceListVerifications,
		densemem.TraceListTransitions, densemem.TraceListIdentityResolutions, densemem.TraceListReviewItems,
		densemem.TraceListCrossReferences, densemem.TraceListConflicts}
	for _, list := range lists {
		if n := len(want[list]); n <= limit {
			t.Fatalf("the story gives %s %d items, want more than %d", list, n, limit)
		}
	}
	cases := want[densemem.TraceListConflicts]
	if n := len(cases); n != 3 || len(want[densemem.TraceConflictEventsList(cases[0])]) <= limit ||
		len(want[densemem.TraceConflictEventsList(cases[2])]) <= limit {
		t.Fatalf("the story gives %d cases, want 3, the first and last with more than %d events", n, limit)
	}

	req := densemem.TraceRequest{RelationshipID: m, IncludeVerification: true, IncludeTransitions: true, Limit: limit}
	viewer := e.C // any reader of the team

	// The first page: every list at the limit, each named in Truncated with the items it returned,
	// in the order of the result's fields, case events after the conflicts entry.
	first := e.tracePage(viewer, req, nil, "", "")
	var named []string
	for _, cut := range first.Truncated {
		named = append(named, cut.List)
		if got := traceListIDs(first, cut.List); cut.Returned != len(got) {
			t.Errorf("%s: returned %d, holds %d", cut.List, cut.Returned, len(got))
		}
	}
	wantNamed := append(slices.Clone(lists), densemem.TraceConflictEventsList(cases[0]))
	if diff := cmp.Diff(wantNamed, named); diff != "" {
		t.Errorf("truncated lists (-want +got):\n%s", diff)
	}
	for _, list := range lists {
		if got := traceListIDs(first, list); len(got) != limit || !slices.Equal(got, want[list][:limit]) {
			t.Errorf("%s first page = %v, want %v", list, got, want[list][:limit])
		}
	}

	// Every list, paged on its own, returns the whole list once in order.
	for _, list := range lists {
		if diff := cmp.Diff(want[list], e.traceListPages(viewer, req, nil, list)); diff != "" {
			t.Errorf("%s paged (-want +got):\n%s", list, diff)
		}
	}
	// A case's events page within the conflicts page that shows the case: the first case on the
	// first page, the third on the second, with the conflicts cursor kept.
	if diff := cmp.Diff(want[densemem.TraceConflictEventsList(cases[0])],
		e.traceListPages(viewer, req, nil, densemem.TraceConflictEventsList(cases[0]))); diff != "" {
		t.Errorf("first case's events paged (-want +got):\n%s", diff)
	}
	second := map[string]string{densemem.TraceListConflicts: truncationOf(first, densemem.TraceListConflicts).NextAfter}
	if diff := cmp.Diff(want[densemem.TraceConflictEventsList(cases[2])],
		e.traceListPages(viewer, req, second, densemem.TraceConflictEventsList(cases[2]))); diff != "" {
		t.Errorf("third case's events paged (-want +got):\n%s", diff)
	}
	// An events cursor for a case that is not on the page is ignored.
	third := truncationOf(e.tracePage(viewer, req, second, "", ""), densemem.TraceConflictEventsList(cases[2]))
	tr := e.tracePage(viewer, req, map[string]string{densemem.TraceConflictEventsList(cases[2]): third.NextAfter}, "", "")
	if got := traceListIDs(tr, densemem.TraceListConflicts); !slices.Equal(got, cases[:limit]) {
		t.Errorf("conflicts with a foreign events cursor = %v, want %v", got, cases[:limit])
	}

	// With the maximum limit nothing is truncated and every list is whole.
	req.Limit = densemem.DefaultMaxTraceItems
	full := e.tracePage(viewer, req, nil, "", "")
	if len(full.Truncated) != 0 {
		t.Errorf("truncated at the maximum limit: %+v", full.Truncated)
	}
	for list, ids := range want {
		if diff := cmp.Diff(ids, traceListIDs(full, list)); diff != "" {
			t.Errorf("%s at the maximum limit (-want +got):\n%s", list, diff)
		}
	}
	// The source count covers every support, not the page.
	if full.Relationship.SourceCount != 2 || first.Relationship.SourceCount != 2 {
		t.Errorf("source count %d (page of %d) and %d (whole), want 2", first.Relationship.SourceCount, limit,
			full.Relationship.SourceCount)
	}
}

// TestTraceDefaultAndMaximumLimit checks that a request without a limit gets 50 items per list, that
// a request may ask for up to Limits.MaxTraceItems (500 by default) and not more, and that a smaller
// configured maximum also lowers the default.
func TestTraceDefaultAndMaximumLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const supports = densemem.DefaultTraceItems + 10
	var m densemem.RelationshipID
	for range supports {
		m = e.remember(e.A, deploy("production", "main")).RelationshipID
	}
	tr, err := e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m})
	if err != nil {
		t.Fatal(err)
	}
	if densemem.DefaultTraceItems != 50 || densemem.DefaultMaxTraceItems != 500 {
		t.Errorf("defaults = %d per list, at most %d; want 50 and 500", densemem.DefaultTraceItems, densemem.DefaultMaxTraceItems)
	}
	if len(tr.Evidence) != 50 || len(tr.Observations) != 50 {
		t.Errorf("default page: %d evidence, %d observations; want 50 each", len(tr.Evidence), len(tr.Observations))
	}
	for _, list := range []string{densemem.TraceListEvidence, densemem.TraceListObservations, densemem.TraceListIdentityResolutions} {
		if cut := truncationOf(tr, list); cut == nil || cut.Returned != 50 {
			t.Errorf("%s truncation = %+v, want returned 50", list, cut)
		}
	}
	tr, err = e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Evidence) != supports || truncationOf(tr, densemem.TraceListEvidence) != nil {
		t.Errorf("limit 500: %d evidence, truncated %v; want all %d", len(tr.Evidence), tr.Truncated, supports)
	}
	for _, limit := range []int{-1, 501} {
		_, err := e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m, Limit: limit})
		var ve *densemem.ValidationError
		if !errors.As(err, &ve) || !ve.Has("limit") {
			t.Errorf("limit %d: err = %v, want a problem at limit", limit, err)
		}
	}

	// A client configured with a maximum of 10: the default and the bound follow it.
	small, err := densemem.New(e.store, &densemem.Config{Clock: e.clock.Now, Limits: densemem.Limits{MaxTraceItems: 10}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err = small.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Evidence) != 10 {
		t.Errorf("default under a maximum of 10: %d evidence", len(tr.Evidence))
	}
	var ve *densemem.ValidationError
	if _, err := small.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m, Limit: 11}); !errors.As(err, &ve) || !ve.Has("limit") {
		t.Errorf("limit 11 under a maximum of 10: err = %v", err)
	}
}

// TestTraceContentBudget checks that the evidence content and excerpts of one response stay within
// Limits.MaxTraceContentBytes: entries carry them while the budget lasts, later entries say
// content_omitted, and the evidence NextAfter resumes at the first omitted entry so every entry is
// read with its content. A budget below two evidence items is a configuration error.
func TestTraceContentBudget(t *testing.T) {
	t.Parallel()
	const itemBytes, budget = 1000, 4500
	if _, err := densemem.New(newEnv(t).store, &densemem.Config{Limits: densemem.Limits{MaxContentBytes: itemBytes,
		MaxTraceContentBytes: 2*itemBytes - 1}}); err == nil {
		t.Errorf("New accepted a trace content budget below twice the evidence content limit")
	}
	e := newEnv(t, func(c *densemem.Config) {
		c.Limits.MaxContentBytes, c.Limits.MaxTraceContentBytes = itemBytes, budget
	})
	content := "The production environment deploys from the main branch." + strings.Repeat(" Filler.", 100)
	if len(content) > itemBytes {
		t.Fatalf("content is %d bytes", len(content))
	}
	var m densemem.RelationshipID
	for range 5 {
		m = e.remember(e.A, withContent(deploy("production", "main"), content)).RelationshipID
	}
	perEntry := 2 * len(content) // whole content, and the cited span is all of it
	fit := budget / perEntry     // 2

	req := densemem.TraceRequest{RelationshipID: m, IncludeEvidenceContent: true}
	seen := map[string]bool{}
	var cursor string
	for page := 0; page < 10; page++ {
		if cursor != "" {
			req.After = map[string]string{densemem.TraceListEvidence: cursor}
		}
		tr, err := e.client.Trace(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		used, omitted := 0, false
		for i, ev := range tr.Evidence {
			used += len(ev.Content) + len(ev.Excerpt)
			switch {
			case i < fit && (ev.ContentOmitted || ev.Content != content || ev.Excerpt != content):
				t.Errorf("page %d entry %d: content omitted=%v (%d bytes), want carried", page, i, ev.ContentOmitted, len(ev.Content))
			case i >= fit && (!ev.ContentOmitted || ev.Content != "" || ev.Excerpt != ""):
				t.Errorf("page %d entry %d: content omitted=%v (%d bytes), want omitted", page, i, ev.ContentOmitted, len(ev.Content))
			}
			omitted = omitted || ev.ContentOmitted
			if !ev.ContentOmitted {
				if seen[ev.SupportID] {
					t.Errorf("support %s carried its content twice", ev.SupportID)
				}
				seen[ev.SupportID] = true
			}
		}
		if used > budget {
			t.Errorf("page %d carries %d content bytes, more than the budget of %d", page, used, budget)
		}
		cut := truncationOf(tr, densemem.TraceListEvidence)
		if omitted != (cut != nil) {
			t.Errorf("page %d: omitted content %v, truncated %+v", page, omitted, cut)
		}
		if cut == nil {
			break
		}
		cursor = cut.NextAfter
	}
	if len(seen) != 5 {
		t.Errorf("%d of 5 supports were read with their content", len(seen))
	}
	// Without content nothing is omitted.
	tr, err := e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range tr.Evidence {
		if ev.ContentOmitted || ev.Content != "" {
			t.Errorf("without include_evidence_content: %+v", ev)
		}
	}
}

// TestTraceRejectsBadPaging sends malformed limits and cursors in one request: one ValidationError
// names each at its JSON path, and nothing is read.
func TestTraceRejectsBadPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.remember(e.A, deploy("production", "main")).RelationshipID
	// Real cursors of two lists, to misuse.
	for range 2 {
		e.remember(e.A, deploy("production", "main"))
	}
	tr, err := e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	obsCursor := truncationOf(tr, densemem.TraceListObservations).NextAfter
	evCursor := truncationOf(tr, densemem.TraceListEvidence).NextAfter

	_, err = e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m, Limit: -3, After: map[string]string{
		"supports":                            "x",       // not a list name
		densemem.TraceListEvidence:            obsCursor, // another list's cursor
		densemem.TraceListObservations:        "!!!",     // not base64url
		densemem.TraceListReviewItems:         "e30",     // {}: no list
		densemem.TraceListVerifications:       evCursor,  // list not included
		densemem.TraceListTransitions:         "",        // list not included
		"conflicts..events":                   "x",       // no conflict ID
		"conflicts.cfl_1.events":              evCursor,  // another list's cursor
		"\xff":                                "x",       // not UTF-8
		densemem.TraceListCrossReferences:     strings.Repeat("A", 4096),
		densemem.TraceListConflicts:           b64(`{"l":"conflicts","t":1}`),                                         // no ID
		densemem.TraceListIdentityResolutions: b64(`{"l":"identity_resolutions","t":400000000000000000,"ids":["x"]}`), // year 14645
	}})
	var ve *densemem.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	for _, path := range []string{"limit", "after.supports", "after.evidence", "after.observations", "after.review_items",
		"after.verifications", "after.transitions", "after.conflicts..events", "after.conflicts.cfl_1.events", "after",
		"after.cross_references", "after.conflicts", "after.identity_resolutions"} {
		if !ve.Has(path) {
			t.Errorf("no problem at %s", path)
		}
	}
	if t.Failed() {
		t.Logf("problems: %v", ve)
	}
	// The cursors themselves are good.
	if _, err := e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m, Limit: 1,
		After: map[string]string{densemem.TraceListEvidence: evCursor, densemem.TraceListObservations: obsCursor}}); err != nil {
		t.Errorf("valid cursors: %v", err)
	}
	// Too many entries is one problem, not one per entry.
	many := map[string]string{}
	for i := range 600 {
		many[fmt.Sprintf("conflicts.c%d.events", i)] = "x"
	}
	_, err = e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: m, After: many})
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || !ve.Has("after") {
		t.Errorf("600 cursors: err = %v, want one problem at after", err)
	}
}

// TestTraceRoundTrips checks that Trace reads everything in one round trip after authorisation for
// up to one hop of neighbours, and one more per further hop (plus COMMIT when the walk ends early).
func TestTraceRoundTrips(t *testing.T) {
	t.Parallel()
	be := newBenchEnv(t, 0)
	m := be.remember(be.A, deploy("production", "main")).RelationshipID
	be.remember(be.A, deploy("staging", "main")) // one hop through main
	be.remember(be.B, deploy("staging", "qa"))   // two hops (B's: A's own would be held)
	be.remember(be.A, deploy("preview", "qa-2")) // unrelated
	// Depth 4 stops after the third hop finds nothing: COMMIT goes alone.
	for _, tc := range []struct{ depth, trips, neighbours int }{{0, 2, 0}, {1, 2, 1}, {2, 3, 2}, {4, 5, 2}} {
		req := densemem.TraceRequest{RelationshipID: m, MaxDepth: tc.depth, MaxEdges: 10, IncludeVerification: true,
			IncludeTransitions: true, IncludeEvidenceContent: true}
		if _, err := be.client.Trace(be.ctx, be.A, req); err != nil { // warm the statement cache
			t.Fatal(err)
		}
		be.reset()
		tr, err := be.client.Trace(be.ctx, be.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := be.trips.Load(); got != int64(tc.trips) || len(tr.Neighbours) != tc.neighbours {
			t.Errorf("depth %d: %d round trips, %d neighbours; want %d and %d", tc.depth, got, len(tr.Neighbours),
				tc.trips, tc.neighbours)
		}
	}
}

// b64 encodes s as a Trace cursor is encoded.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

package densemem_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/store"
)

// validityInterval is a validity interval as RecallResult.ValidDuring carries it.
func validityInterval(from, to *time.Time) densemem.ValidityInterval {
	return densemem.ValidityInterval{From: from, To: to}
}

// resultTimeReading is what a recall result says about time: its status at the view's known instant,
// its validity, and the two readings a host must not confuse.
type resultTimeReading struct {
	Status        densemem.Status
	ValidDuring   densemem.ValidityInterval
	Current       bool
	TrueAtValidAt *bool
}

// timeReadingOf returns what r says about time.
func timeReadingOf(r densemem.RecallResult) resultTimeReading {
	return resultTimeReading{Status: r.Relationship.Status, ValidDuring: r.ValidDuring, Current: r.Current, TrueAtValidAt: r.TrueAtValidAt}
}

// TestRecallSaysWhatWasTrueAndWhatIsCurrent: a relationship superseded by a dated correction is
// returned by a valid_at recall before the change as true then and not current, with its validity
// ending at the change; the correction is current; a current recall returns only the correction; a
// known_at recall before the correction shows the old one as current as recorded then.
func TestRecallSaysWhatWasTrueAndWhatIsCurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	change := date("2026-05-01")
	beforeChange, afterChange := date("2026-04-15"), date("2026-05-15")

	old := e.remember(e.A, deploy("production", "main"))
	if old.Category != densemem.CategoryAccepted {
		t.Fatalf("old: %s (%s)", old.Category, old.Reason)
	}
	e.clock.Advance(24 * time.Hour)
	corrected := e.clock.Now()
	fix := e.remember(e.A, deploy("production", "release").since(change))
	if fix.Category != densemem.CategorySupersededPrior || !slices.Contains(fix.Related, old.RelationshipID) {
		t.Fatalf("correction: %s related %v (%s), want relationship_superseded_prior of the old one", fix.Category, fix.Related, fix.Reason)
	}
	// A correction dated after now: the prior is superseded but stays true until July; the correction
	// is active, in the current view (decision 23), and not true yet. Neither is current.
	e.clock.Advance(time.Hour)
	july := date("2026-07-01")
	preview := e.remember(e.A, deploy("preview", "main"))
	later := e.remember(e.A, deploy("preview", "develop").since(july))
	if later.Category != densemem.CategorySupersededPrior || !slices.Contains(later.Related, preview.RelationshipID) {
		t.Fatalf("later: %s related %v (%s), want relationship_superseded_prior", later.Category, later.Related, later.Reason)
	}

	check := func(name string, r *densemem.RecallResponse, want map[densemem.RelationshipID]resultTimeReading) {
		t.Helper()
		got := map[densemem.RelationshipID]resultTimeReading{}
		for _, res := range r.Results {
			if res.Relationship.Predicate == "deploys_from" && res.Relationship.Subject.Name == "production" {
				got[res.Relationship.RelationshipID] = timeReadingOf(res)
			}
			if !cmp.Equal(res.ValidDuring, validityInterval(res.Relationship.ValidFrom, res.Relationship.ValidTo)) {
				t.Errorf("%s: %s valid_during %+v differs from the relationship's validity [%v, %v)", name,
					res.Relationship.RelationshipID, res.ValidDuring, res.Relationship.ValidFrom, res.Relationship.ValidTo)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}

	// World time before the change: the old relationship, true then, superseded and not current now.
	check("valid_at before the change", e.recall(e.C, "production", &beforeChange, nil), map[densemem.RelationshipID]resultTimeReading{
		old.RelationshipID: {Status: "superseded", ValidDuring: validityInterval(nil, &change), Current: false, TrueAtValidAt: ptr(true)},
	})
	// World time after the change: the correction, true then and current.
	check("valid_at after the change", e.recall(e.C, "production", &afterChange, nil), map[densemem.RelationshipID]resultTimeReading{
		fix.RelationshipID: {Status: "active", ValidDuring: validityInterval(&change, nil), Current: true, TrueAtValidAt: ptr(true)},
	})
	// valid_at at the change itself: validity is [from, to), so the correction and not the old one.
	check("valid_at at the change", e.recall(e.C, "production", &change, nil), map[densemem.RelationshipID]resultTimeReading{
		fix.RelationshipID: {Status: "active", ValidDuring: validityInterval(&change, nil), Current: true, TrueAtValidAt: ptr(true)},
	})
	// Now: only the correction, current; no valid_at, so nothing said about one.
	check("current", e.recall(e.C, "production", nil, nil), map[densemem.RelationshipID]resultTimeReading{
		fix.RelationshipID: {Status: "active", ValidDuring: validityInterval(&change, nil), Current: true},
	})
	// Recorded time before the correction: the old relationship was the current belief then.
	knownBefore := corrected.Add(-time.Microsecond)
	check("known_at before the correction", e.recall(e.C, "production", nil, &knownBefore), map[densemem.RelationshipID]resultTimeReading{
		old.RelationshipID: {Status: "active", ValidDuring: validityInterval(nil, nil), Current: true},
	})
	check("known_at before the correction, valid_at before the change", e.recall(e.C, "production", &beforeChange, &knownBefore),
		map[densemem.RelationshipID]resultTimeReading{
			old.RelationshipID: {Status: "active", ValidDuring: validityInterval(nil, nil), Current: true, TrueAtValidAt: ptr(true)},
		})
	// Recorded time after the correction, world time before the change: true then, not current then.
	knownAfter := corrected
	check("known_at at the correction, valid_at before the change", e.recall(e.C, "production", &beforeChange, &knownAfter),
		map[densemem.RelationshipID]resultTimeReading{
			old.RelationshipID: {Status: "superseded", ValidDuring: validityInterval(nil, &change), Current: false, TrueAtValidAt: ptr(true)},
		})

	// The current view returns the correction starting in July, not current; a valid_at recall of
	// today returns the superseded prior, true today and still not current.
	previewSays := func(name string, r *densemem.RecallResponse) map[densemem.RelationshipID]resultTimeReading {
		t.Helper()
		got := map[densemem.RelationshipID]resultTimeReading{}
		for _, res := range r.Results {
			if res.Relationship.Subject.Name == "preview" {
				got[res.Relationship.RelationshipID] = timeReadingOf(res)
			}
		}
		return got
	}
	if d := cmp.Diff(map[densemem.RelationshipID]resultTimeReading{
		later.RelationshipID: {Status: "active", ValidDuring: validityInterval(&july, nil), Current: false},
	}, previewSays("current", e.recall(e.C, "preview", nil, nil))); d != "" {
		t.Errorf("preview, current recall (-want +got):\n%s", d)
	}
	today := e.clock.Now()
	if d := cmp.Diff(map[densemem.RelationshipID]resultTimeReading{
		preview.RelationshipID: {Status: "superseded", ValidDuring: validityInterval(nil, &july), Current: false, TrueAtValidAt: ptr(true)},
	}, previewSays("valid_at today", e.recall(e.C, "preview", &today, nil))); d != "" {
		t.Errorf("preview, valid_at today (-want +got):\n%s", d)
	}

	// On the wire: valid_during with both bounds (null when open), current always, true_at_valid_at
	// only with valid_at.
	for _, tc := range []struct {
		name    string
		validAt *time.Time
		want    string
	}{
		{"valid_at", &beforeChange, `{"from":null,"to":"2026-05-01T00:00:00Z"} false true`},
		{"current", nil, `{"from":"2026-05-01T00:00:00Z","to":null} true absent`},
	} {
		r := e.recall(e.C, "production", tc.validAt, nil)
		if len(r.Results) != 1 {
			t.Fatalf("%s: %d results, want 1", tc.name, len(r.Results))
		}
		raw, err := json.Marshal(r.Results[0])
		if err != nil {
			t.Fatal(err)
		}
		var wire map[string]json.RawMessage
		if err := json.Unmarshal(raw, &wire); err != nil {
			t.Fatal(err)
		}
		trueAt, ok := wire["true_at_valid_at"]
		if !ok {
			trueAt = json.RawMessage("absent")
		}
		if got := string(wire["valid_during"]) + " " + string(wire["current"]) + " " + string(trueAt); got != tc.want {
			t.Errorf("%s on the wire: %s, want %s\n%s", tc.name, got, tc.want, raw)
		}
	}
}

// TestTracePositionsNameTheirObjectsAndCountGroups: Trace's case positions carry their objects'
// names and the counted source groups Recall shows for the same case, read in Trace's one round trip;
// a group behind both positions counts for neither, and a case whose supports pass the read bound
// says its counts are unknown.
func TestTracePositionsNameTheirObjectsAndCountGroups(t *testing.T) {
	t.Parallel()
	be := newBenchEnv(t, 0)
	e := be.env
	s := e.openStaleDeployCase(false, true) // A: main; B and C: release, from two sources
	// The ops wiki backs both sides: a group behind two positions counts for neither.
	wikiMain := deploy("production", "main")
	wikiMain.content, wikiMain.sourceGroup = "Ops wiki: the production environment deploys from the main branch.", "ops-wiki"
	if out := e.remember(e.A, wikiMain); out.RelationshipID != s.A1 {
		t.Fatalf("wiki support for main: %s %s (%s), want support of %s", out.Category, out.RelationshipID, out.Reason, s.A1)
	}
	wikiRelease := releaseSinceCutoff("Ops wiki:")
	wikiRelease.sourceGroup = "ops-wiki"
	if out := e.remember(e.B, wikiRelease); out.RelationshipID != s.B1 {
		t.Fatalf("wiki support for release: %s %s (%s), want support of %s", out.Category, out.RelationshipID, out.Reason, s.B1)
	}
	// A literal-valued case: owner_email, two owners, undated.
	email := only(t, e.rememberReq(e.A, denseMemEmail("ops@example.com")))
	other := only(t, e.rememberReq(e.B, func() densemem.RememberRequest {
		req := ownerEmail("Dense-Mem", "dev@example.com")
		req.IdempotencyKey = nextKey()
		return req
	}()))
	if other.Conflict == nil {
		t.Fatalf("owner_email disagreement opened no case: %+v", other)
	}

	recallPositions := func(query, conflictID string) []densemem.RecallPosition {
		t.Helper()
		r := e.recall(e.C, query, nil, nil)
		for _, c := range r.Conflicts {
			if c.ConflictID == conflictID {
				return c.Positions
			}
		}
		t.Fatalf("recall %q lists no case %s: %+v", query, conflictID, r.Conflicts)
		return nil
	}
	tracePositions := func(id densemem.RelationshipID, conflictID string) []densemem.TraceCasePosition {
		t.Helper()
		be.reset()
		tr, err := e.client.Trace(e.ctx, e.C, densemem.TraceRequest{RelationshipID: id})
		if err != nil {
			t.Fatal(err)
		}
		if n := be.trips.Load(); n != 2 { // the authorisation read, then TraceLoad's one batch
			t.Errorf("trace of %s: %d round trips, want 2", id, n)
		}
		for _, c := range tr.Conflicts {
			if c.ConflictID == conflictID {
				return c.Positions
			}
		}
		t.Fatalf("trace of %s lists no case %s", id, conflictID)
		return nil
	}
	type shown struct {
		Object densemem.ObjectView
		Groups int
	}
	byPosition := func(rps []densemem.RecallPosition) map[string]shown {
		out := map[string]shown{}
		for _, p := range rps {
			out[p.PositionID] = shown{p.Object, p.CountedSourceGroups}
		}
		return out
	}
	traced := func(tps []densemem.TraceCasePosition) map[string]shown {
		out := map[string]shown{}
		for _, p := range tps {
			if p.CountedSourceGroupsUnknown {
				t.Errorf("position %s: counted_source_groups_unknown", p.PositionID)
			}
			out[p.PositionID] = shown{p.Object, p.CountedSourceGroups}
		}
		return out
	}

	deployCase := byPosition(recallPositions("production", s.ConflictID))
	groups := map[string]int{}
	for _, p := range deployCase {
		groups[p.Object.Name] = p.Groups
		if p.Object.EntityID == "" || p.Object.Kind != "git_branch" {
			t.Errorf("recall position object %+v, want a git_branch entity", p.Object)
		}
	}
	// main: A's own source (the wiki is shared); release: B's and C's sources (not the wiki).
	if d := cmp.Diff(map[string]int{"main": 1, "release": 2}, groups); d != "" {
		t.Errorf("recall's counted groups (-want +got):\n%s", d)
	}
	for _, id := range []densemem.RelationshipID{s.A1, s.B1, s.C1} {
		if d := cmp.Diff(deployCase, traced(tracePositions(id, s.ConflictID))); d != "" {
			t.Errorf("trace of %s: positions (-recall +trace):\n%s", id, d)
		}
	}

	emailCase := byPosition(recallPositions("Dense-Mem", other.Conflict.ConflictID))
	var names []string
	for _, p := range emailCase {
		names = append(names, p.Object.Name)
		if p.Object.ValueID == "" || p.Object.EntityID != "" || p.Object.ValueType != densemem.ValueString || p.Object.Kind != "" || p.Groups != 1 {
			t.Errorf("recall position %+v, want a string literal with 1 group", p)
		}
	}
	slices.Sort(names)
	if d := cmp.Diff([]string{"dev@example.com", "ops@example.com"}, names); d != "" {
		t.Errorf("literal positions (-want +got):\n%s", d)
	}
	if d := cmp.Diff(emailCase, traced(tracePositions(email.RelationshipID, other.Conflict.ConflictID))); d != "" {
		t.Errorf("trace of the email case: positions (-recall +trace):\n%s", d)
	}

	// The read bound: the deploy case's members have 5 support links (A: 2, B: 2, C: 1).
	for _, tc := range []struct {
		bound     int
		truncated bool
	}{{5, false}, {4, true}} {
		d, err := e.store.TraceLoad(store.WithActor(e.ctx, store.ActorHost), store.TraceLoadParams{Team: e.team, RelationshipID: s.A1, Limit: 10, CaseSupports: tc.bound})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Cases) != 1 || d.Cases[0].SupportsTruncated != tc.truncated {
			t.Errorf("case supports bound %d: cases %d, truncated %v, want 1 case, truncated %v", tc.bound, len(d.Cases),
				len(d.Cases) == 1 && d.Cases[0].SupportsTruncated, tc.truncated)
		}
		n := 0
		for _, sups := range d.Cases[0].MemberSupports {
			n += len(sups)
		}
		if !tc.truncated && n != 5 {
			t.Errorf("case supports bound %d: %d distinct supports, want 5", tc.bound, n)
		}
	}
}

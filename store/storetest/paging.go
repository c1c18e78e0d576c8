package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Trace paging (decisions 35–37): each TraceLoad list holds at most Limit rows and names the key the
// next page starts after.
var traceContracts = []contract{
	{"TraceLoadPages", testTracePages},
}

// List paging (decisions 55–56): each List read returns at most Limit items in its order and says
// whether more follow.
var listContracts = []contract{
	{"ListsPageByKey", testListPages},
}

// testTracePages traces a relationship with three transitions and three supports two rows at a time.
func testTracePages(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_t"))
	r := w.rel(relSpec{content: "Ada works on Falcon."})
	w.support(r, "Ada was seen at Falcon's stand-up.", at(time.Minute))
	w.support(r, "Falcon's roster lists Ada.", at(2*time.Minute))
	r = w.change(r, relationship.StatusActive, relationship.TierFact, nil, at(3*time.Minute))
	w.change(r, relationship.StatusActive, relationship.TierValidatedClaim, nil, at(4*time.Minute))

	p := traceParams(w.team, r.ID, 2)
	first, err := e.s.TraceLoad(ctx, p)
	e.must(err, "TraceLoad, first page")
	if got := transitionVersions(first.Transitions); !slices.Equal(got, []int{1, 2}) || first.Next.Transitions != 2 {
		t.Errorf("first page of transitions = versions %v, next after %d; want [1 2], next after 2", got, first.Next.Transitions)
	}
	if len(first.Supports) != 2 || first.Next.Supports == nil || len(first.SupportKeys) != 3 {
		t.Errorf("first page of supports = %d, next %+v, %d support keys; want 2, a next key, 3 keys", len(first.Supports),
			first.Next.Supports, len(first.SupportKeys))
	} else if k := first.Supports[1].Key; !first.Next.Supports.At.Equal(k.At) || !slices.Equal(first.Next.Supports.IDs, k.IDs) {
		t.Errorf("first page's next supports key = %+v, want its last support's key %+v", first.Next.Supports, k)
	}
	if first.Relationship.Relationship.Version != 3 || first.Relationship.SubjectName != "Ada" || first.Relationship.ObjectName != "Falcon" {
		t.Errorf("traced relationship = %+v, want Ada works on Falcon at version 3", first.Relationship)
	}

	p.After = store.TraceAfter{Transitions: first.Next.Transitions, Supports: first.Next.Supports}
	second, err := e.s.TraceLoad(ctx, p)
	e.must(err, "TraceLoad, second page")
	if got := transitionVersions(second.Transitions); !slices.Equal(got, []int{3}) || second.Next.Transitions != 0 {
		t.Errorf("second page of transitions = versions %v, next after %d; want [3], none", got, second.Next.Transitions)
	}
	if len(second.Supports) != 1 || second.Next.Supports != nil {
		t.Errorf("second page of supports = %d, next %+v; want 1, none", len(second.Supports), second.Next.Supports)
	}
	var ids []string
	for _, s := range append(first.Supports, second.Supports...) {
		ids = append(ids, s.ID)
	}
	if u := slices.Compact(slices.Sorted(slices.Values(ids))); len(u) != 3 {
		t.Errorf("supports over both pages = %v, want three different ones", ids)
	}

	p = traceParams(w.team, r.ID, 50)
	p.IncludeTransitions, p.IncludeVerifications = false, false
	bare, err := e.s.TraceLoad(ctx, p)
	e.must(err, "TraceLoad without transitions")
	if len(bare.Transitions)+len(bare.Verifications) != 0 || len(bare.Supports) != 3 || len(bare.Observations) != 3 {
		t.Errorf("trace without transitions and verifications: %d transitions, %d verifications, %d supports, %d observations; "+
			"want 0, 0, 3, 3", len(bare.Transitions), len(bare.Verifications), len(bare.Supports), len(bare.Observations))
	}
}

func transitionVersions(ts []store.TransitionRow) []int {
	out := make([]int, 0, len(ts))
	for _, tr := range ts {
		out = append(out, tr.ToVersion)
	}
	return out
}

// testListPages pages each List read of one team.
func testListPages(e *env) {
	w := e.world(e.team("tm_p"))
	w.profile("pf_c")
	w.checkProfilePages()
	w.checkPredicatePages()
	cases := w.listRows()
	w.checkCasePages(cases)
	w.checkCaseDeadlinePages(cases)
	w.checkReviewItemPages()
}

// checkProfilePages pages the team's three profiles two at a time.
func (w *world) checkProfilePages() {
	t, ctx, s := w.t, w.e.ctx, w.e.s
	t.Helper()
	pp, err := s.ProfileList(ctx, store.ProfileListParams{Team: w.team, Limit: 2})
	w.e.must(err, "ProfileList")
	if got := profileIDs(pp.Items); !slices.Equal(got, []identity.ProfileID{"pf_a", "pf_b"}) || !pp.More {
		t.Errorf("first page of profiles = %v (more %v), want [pf_a pf_b] and more", got, pp.More)
	}
	pp, err = s.ProfileList(ctx, store.ProfileListParams{Team: w.team, After: "pf_b", Limit: 2})
	w.e.must(err, "ProfileList")
	if got := profileIDs(pp.Items); !slices.Equal(got, []identity.ProfileID{"pf_c"}) || pp.More {
		t.Errorf("second page of profiles = %v (more %v), want [pf_c] and no more", got, pp.More)
	}
}

// checkPredicatePages appends a new predicate, advises, and a second version of works_on, then pages
// the predicates one at a time: each at its latest version, in key order.
func (w *world) checkPredicatePages() {
	t, ctx, s := w.t, w.e.ctx, w.e.s
	t.Helper()
	for _, key := range []string{"advises", predWorksOn} {
		_, err := s.PredicateAppend(ctx, store.PredicateAppendParams{Team: w.team, CreatedBy: "host", CreatedAt: at(time.Minute),
			Predicate: relationship.Predicate{Key: key, Kind: relationship.KindState, Cardinality: relationship.CardinalityMany}})
		w.e.must(err, "PredicateAppend")
	}
	var keys []string
	var versions []int
	after := ""
	for range 3 {
		page, err := s.PredicateListPage(ctx, store.PredicateListPageParams{Team: w.team, After: after, Limit: 1})
		w.e.must(err, "PredicateListPage")
		for _, p := range page.Items {
			keys, versions, after = append(keys, p.Key), append(versions, p.Version), p.Key
		}
		if !page.More {
			break
		}
	}
	if !slices.Equal(keys, []string{"advises", predWorksOn}) || !slices.Equal(versions, []int{1, 2}) {
		t.Errorf("predicates paged one at a time = %v at versions %v, want [advises works_on] at [1 2]", keys, versions)
	}
}

// listRows writes three cases, opened a minute apart and all due, and three open review items, of
// pf_b, pf_a and pf_b, then dismisses the second case. It returns the cases as first written.
func (w *world) listRows() []store.CaseRow {
	w.t.Helper()
	var ws store.WriteSet
	var cases []store.CaseRow
	for i := range 3 {
		cases = append(cases, w.caseRows(&ws, w.key(w.ada, fmt.Sprintf("s%d", i)), nil, at(time.Duration(i)*time.Minute), t0))
	}
	for i := range 3 {
		ws.ReviewItems = append(ws.ReviewItems, store.ReviewItemRow{Team: w.team, ID: fmt.Sprintf("rev_%d", i),
			IngestID: "ing_list", PlacementItemID: fmt.Sprintf("item_%d", i), Kind: "relationship_held",
			Profile: []identity.ProfileID{w.b, w.a, w.b}[i], ObservationID: "obs", Choices: json.RawMessage(`[]`),
			CreatedAt: at(time.Duration(i) * time.Minute)})
	}
	w.apply(ws)
	w.dismiss(cases[1], at(time.Hour))
	return cases
}

// checkCasePages pages the dismissed and open cases of listRows two at a time: the dismissed one
// first, then the open ones.
func (w *world) checkCasePages(cases []store.CaseRow) {
	t, ctx, s := w.t, w.e.ctx, w.e.s
	t.Helper()
	statuses := []conflict.Status{conflict.StatusDismissed, conflict.StatusOpen}
	cp, err := s.CaseList(ctx, store.CaseListParams{Team: w.team, Statuses: statuses, Limit: 2})
	w.e.must(err, "CaseList")
	if got := listedIDs(cp.Items); !slices.Equal(got, []conflict.ID{cases[1].ID, cases[0].ID}) || !cp.More {
		t.Errorf("first page of cases = %v (more %v), want the dismissed %s, then open %s, and more", got, cp.More,
			cases[1].ID, cases[0].ID)
	}
	if len(cp.Items) == 2 {
		last := cp.Items[1].Case
		cp, err = s.CaseList(ctx, store.CaseListParams{Team: w.team, Statuses: statuses, Limit: 2,
			After: &store.CaseListKey{Status: last.Status, ReviewDueAt: last.ReviewDueAt, ID: last.ID}})
		w.e.must(err, "CaseList")
		if got := listedIDs(cp.Items); !slices.Equal(got, []conflict.ID{cases[2].ID}) || cp.More {
			t.Errorf("second page of cases = %v (more %v), want [%s] and no more", got, cp.More, cases[2].ID)
		}
	}
	// CaseGet reads one case of any status as CaseList shows it; another team's or a missing ID is
	// ErrNotFound.
	all, err := s.CaseList(ctx, store.CaseListParams{Team: w.team, Statuses: statuses, Limit: 10})
	w.e.must(err, "CaseList")
	for _, want := range all.Items {
		got, err := s.CaseGet(ctx, w.team, want.Case.ID)
		w.e.must(err, "CaseGet")
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("CaseGet(%s) differs from its CaseList item (-list +get):\n%s", want.Case.ID, d)
		}
	}
	_, err = s.CaseGet(ctx, w.team, "cf_missing")
	w.e.checkErr(err, store.ErrNotFound, "CaseGet of a missing case")
	_, err = s.CaseGet(ctx, w.e.team("tm_other"), cases[0].ID)
	w.e.checkErr(err, store.ErrNotFound, "CaseGet of the case from another team")
}

// checkCaseDeadlinePages pages the cases of listRows latest deadline first, two at a time: the
// dismissed one falls between the open ones, whatever the order of the statuses asked for.
func (w *world) checkCaseDeadlinePages(cases []store.CaseRow) {
	t, ctx, s := w.t, w.e.ctx, w.e.s
	t.Helper()
	statuses := []conflict.Status{conflict.StatusOpen, conflict.StatusDismissed}
	var got []conflict.ID
	var more []bool
	var after *store.CaseListKey
	for range 3 {
		cp, err := s.CaseList(ctx, store.CaseListParams{Team: w.team, Statuses: statuses, DeadlineDesc: true, After: after, Limit: 2})
		w.e.must(err, "CaseList latest deadline first")
		got, more = append(got, listedIDs(cp.Items)...), append(more, cp.More)
		if !cp.More || len(cp.Items) == 0 {
			break
		}
		last := cp.Items[len(cp.Items)-1].Case
		after = &store.CaseListKey{Status: last.Status, ReviewDueAt: last.ReviewDueAt, ID: last.ID}
	}
	want := []conflict.ID{cases[2].ID, cases[1].ID, cases[0].ID}
	if !slices.Equal(got, want) || !slices.Equal(more, []bool{true, false}) {
		t.Errorf("cases latest deadline first, two a page = %v (more %v), want %v (more [true false])", got, more, want)
	}
	cp, err := s.CaseList(ctx, store.CaseListParams{Team: w.team, Statuses: []conflict.Status{conflict.StatusOpen}, DeadlineDesc: true,
		Limit: 10})
	w.e.must(err, "CaseList latest deadline first")
	if got := listedIDs(cp.Items); !slices.Equal(got, []conflict.ID{cases[2].ID, cases[0].ID}) || cp.More {
		t.Errorf("open cases latest deadline first = %v (more %v), want [%s %s]", got, cp.More, cases[2].ID, cases[0].ID)
	}
}

// checkReviewItemPages pages the open review items of listRows two at a time, by profile, then lists
// pf_b's alone.
func (w *world) checkReviewItemPages() {
	t, ctx, s := w.t, w.e.ctx, w.e.s
	t.Helper()
	ip, err := s.ReviewItemList(ctx, store.ReviewItemListParams{Team: w.team, Status: "open", Limit: 2})
	w.e.must(err, "ReviewItemList")
	if got := itemIDs(ip.Items); !slices.Equal(got, []string{"rev_1", "rev_0"}) || !ip.More {
		t.Errorf("first page of review items = %v (more %v), want [rev_1 rev_0] (pf_a's, then pf_b's) and more", got, ip.More)
	}
	if len(ip.Items) == 2 {
		last := ip.Items[1]
		ip, err = s.ReviewItemList(ctx, store.ReviewItemListParams{Team: w.team, Status: "open", Limit: 2,
			After: &store.ReviewItemKey{Profile: last.Profile, CreatedAt: last.CreatedAt, ID: last.ID}})
		w.e.must(err, "ReviewItemList")
		if got := itemIDs(ip.Items); !slices.Equal(got, []string{"rev_2"}) || ip.More {
			t.Errorf("second page of review items = %v (more %v), want [rev_2] and no more", got, ip.More)
		}
	}
	ip, err = s.ReviewItemList(ctx, store.ReviewItemListParams{Team: w.team, Status: "open", Profile: w.b, Limit: 10})
	w.e.must(err, "ReviewItemList")
	if got := itemIDs(ip.Items); !slices.Equal(got, []string{"rev_0", "rev_2"}) || ip.More {
		t.Errorf("pf_b's review items = %v (more %v), want [rev_0 rev_2]", got, ip.More)
	}
}

func profileIDs(ps []store.Profile) []identity.ProfileID {
	out := make([]identity.ProfileID, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func listedIDs(items []store.CaseListItem) []conflict.ID {
	out := make([]conflict.ID, 0, len(items))
	for _, it := range items {
		out = append(out, it.Case.ID)
	}
	return out
}

func itemIDs(items []store.ReviewItemView) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

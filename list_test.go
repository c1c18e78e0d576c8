package densemem_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/densemem/densemem"
)

// The List calls: order, keyset paging, what each item carries, validation and team isolation.

// listConflictPages reads every page of ListConflicts for req with page size limit and returns the
// cases in order, failing on a case listed twice.
func (e *env) listConflictPages(p densemem.Principal, req densemem.ListConflictsRequest) []densemem.ConflictCase {
	e.t.Helper()
	var out []densemem.ConflictCase
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 100 {
			e.t.Fatal("ListConflicts never ends")
		}
		resp, err := e.client.ListConflicts(e.ctx, p, req)
		if err != nil {
			e.t.Fatalf("ListConflicts %+v: %v", req, err)
		}
		if req.Limit > 0 && len(resp.Conflicts) > req.Limit {
			e.t.Fatalf("page of %d cases for limit %d", len(resp.Conflicts), req.Limit)
		}
		for _, c := range resp.Conflicts {
			if seen[c.ConflictID] {
				e.t.Fatalf("case %s listed twice", c.ConflictID)
			}
			seen[c.ConflictID] = true
		}
		out = append(out, resp.Conflicts...)
		if resp.NextAfter == "" {
			return out
		}
		req.After = resp.NextAfter
	}
}

// conflictIDStatuses returns "id:status" for each case, in order.
func conflictIDStatuses(cs []densemem.ConflictCase) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ConflictID+":"+c.Status)
	}
	return out
}

// openEnvironmentCase opens a case on "<env> deploys_from": A says main, B says release since
// 2026-05-01 (one group each), and with corroborate C repeats release from its own source. It returns
// the case ID and A's relationship.
func (e *env) openEnvironmentCase(env string, corroborate bool) (string, densemem.RelationshipID) {
	e.t.Helper()
	a := e.rememberAccepted(e.A, deploy(env, "main"))
	b := e.rememberAccepted(e.B, deploy(env, "release").since(releaseCutoff))
	if b.Conflict == nil {
		e.t.Fatalf("%s: no case opened", env)
	}
	if corroborate {
		f := deploy(env, "release").since(releaseCutoff)
		f.content = "Ops confirmed: " + f.content
		e.rememberAccepted(e.C, f)
	}
	return b.Conflict.ConflictID, a.RelationshipID
}

func TestListConflictsOverdueFirstPaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	t0 := e.clock.Now()
	alpha, _ := e.openEnvironmentCase("alpha", false)
	e.clock.Advance(time.Hour)
	bravo, _ := e.openEnvironmentCase("bravo", false)
	e.clock.Advance(time.Hour)
	charlie, _ := e.openEnvironmentCase("charlie", true)
	e.clock.Advance(time.Hour)
	delta, deltaA := e.openEnvironmentCase("delta", false)
	if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: deltaA, IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	// Past every deadline: alpha and bravo go overdue (one group against one), charlie resolves.
	e.clock.Advance(t0.Add(8 * 24 * time.Hour).Sub(e.clock.Now()))
	if rep := e.reviewTeamAs("w1"); rep.Overdue != 2 || rep.Resolved != 1 {
		t.Fatalf("nightly review: %+v, want 2 overdue and 1 resolved", rep)
	}
	// Cases opened later are open, with later deadlines; echo is opened before foxtrot but its
	// deadline is later only by the clock, so the order is by deadline.
	echo, _ := e.openEnvironmentCase("echo", false)
	e.clock.Advance(time.Minute)
	foxtrot, _ := e.openEnvironmentCase("foxtrot", false)
	e.clock.Advance(time.Minute)
	golf, _ := e.openEnvironmentCase("golf", false)

	want := []string{alpha + ":overdue", bravo + ":overdue", echo + ":open", foxtrot + ":open", golf + ":open"}
	for _, limit := range []int{0, 1, 2, 5} {
		got := e.listConflictPages(e.C, densemem.ListConflictsRequest{Limit: limit})
		if d := cmp.Diff(want, conflictIDStatuses(got)); d != "" {
			t.Errorf("default statuses, limit %d (-want +got):\n%s", limit, d)
		}
	}
	all := append(slices.Clone(want), charlie+":resolved", delta+":dismissed")
	for _, limit := range []int{1, 2, 3, 500} {
		got := e.listConflictPages(densemem.HostPrincipal(e.team), densemem.ListConflictsRequest{Limit: limit,
			Status: []string{"dismissed", "open", "resolved", "overdue", "open"}})
		if d := cmp.Diff(all, conflictIDStatuses(got)); d != "" {
			t.Errorf("every status, limit %d (-want +got):\n%s", limit, d)
		}
	}
	// Newest deadline first: every status together, by deadline, latest first.
	latest := []string{golf + ":open", foxtrot + ":open", echo + ":open", bravo + ":overdue", alpha + ":overdue"}
	for _, limit := range []int{1, 2, 500} {
		got := e.listConflictPages(e.C, densemem.ListConflictsRequest{Limit: limit, Order: densemem.ConflictOrderDeadlineDesc})
		if d := cmp.Diff(latest, conflictIDStatuses(got)); d != "" {
			t.Errorf("newest deadline first, limit %d (-want +got):\n%s", limit, d)
		}
	}
	everyLatest := []string{golf + ":open", foxtrot + ":open", echo + ":open", delta + ":dismissed", charlie + ":resolved",
		bravo + ":overdue", alpha + ":overdue"}
	for _, limit := range []int{1, 3} {
		got := e.listConflictPages(e.C, densemem.ListConflictsRequest{Limit: limit, Order: densemem.ConflictOrderDeadlineDesc,
			Status: []string{"resolved", "open", "dismissed", "overdue"}})
		if d := cmp.Diff(everyLatest, conflictIDStatuses(got)); d != "" {
			t.Errorf("every status, newest deadline first, limit %d (-want +got):\n%s", limit, d)
		}
	}
	settled := e.listConflictPages(e.admin, densemem.ListConflictsRequest{Status: []string{"resolved", "dismissed"}, Limit: 1})
	if d := cmp.Diff([]string{charlie + ":resolved", delta + ":dismissed"}, conflictIDStatuses(settled)); d != "" {
		t.Errorf("settled cases (-want +got):\n%s", d)
	}

	// What an operator sees of an overdue case: deadlines, names, positions with counted groups.
	got := e.listConflictPages(e.C, densemem.ListConflictsRequest{Status: []string{"overdue", "resolved"}})
	byID := map[string]densemem.ConflictCase{}
	for _, c := range got {
		byID[c.ConflictID] = c
	}
	a := byID[alpha]
	if a.Kind != "cross_profile_current_state" || a.Version != 2 || !a.OpenedAt.Equal(t0) ||
		!a.ReviewDueAt.Equal(t0.Add(defaultReviewTTL)) || !a.NextReviewAt.After(t0.Add(defaultReviewTTL)) || a.ResolvedAt != nil ||
		a.PreferredPositionID != "" || a.PolicyVersion != 1 {
		t.Errorf("overdue case state = %+v", a)
	}
	if a.Subject.Name != "alpha" || a.Subject.Kind != "environment" || a.Subject.EntityID == "" || a.Predicate != "deploys_from" ||
		a.Scope != "" || !strings.Contains(a.Question, `"alpha"`) {
		t.Errorf("overdue case key = %+v %q %q, question %q", a.Subject, a.Predicate, a.Scope, a.Question)
	}
	type pos struct {
		Object, Polarity string
		Owners           []densemem.ProfileID
		Members, Groups  int
		Evidence         int
	}
	var positions []pos
	for _, p := range a.Positions {
		positions = append(positions, pos{p.Object.Name, string(p.Polarity), p.OwnerProfileIDs, len(p.RelationshipIDs),
			p.CountedSourceGroups, len(p.Evidence)})
	}
	slices.SortFunc(positions, func(x, y pos) int { return strings.Compare(x.Object, y.Object) })
	if d := cmp.Diff([]pos{{"main", "+", []densemem.ProfileID{e.A.ProfileID}, 1, 1, 1},
		{"release", "+", []densemem.ProfileID{e.B.ProfileID}, 1, 1, 1}}, positions); d != "" {
		t.Errorf("overdue case positions (-want +got):\n%s", d)
	}
	c := byID[charlie]
	if c.Status != "resolved" || c.ResolvedAt == nil || c.EffectiveAt == nil || c.EffectiveTimeBasis == "" ||
		c.PreferredPositionID == "" || c.Question != "" {
		t.Errorf("resolved case = %+v", c)
	}
	for _, p := range c.Positions {
		if p.PositionID == c.PreferredPositionID && (p.Object.Name != "release" || p.CountedSourceGroups != 2 ||
			len(p.OwnerProfileIDs) != 2) {
			t.Errorf("resolved case's preferred position = %+v", p)
		}
	}

	// Another team, its profile and its host, see none of it.
	team2 := e.mustTeam("globex")
	x := e.profileIn(team2, "X", "read")
	for _, p := range []densemem.Principal{x, densemem.HostPrincipal(team2)} {
		if got := e.listConflictPages(p, densemem.ListConflictsRequest{Status: []string{"open", "overdue", "resolved", "dismissed"}}); len(got) != 0 {
			t.Errorf("another team lists %v", conflictIDStatuses(got))
		}
	}
	// A cursor of this team's list, sent by the other team, starts nowhere in particular of its own.
	first, err := e.client.ListConflicts(e.ctx, e.C, densemem.ListConflictsRequest{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := e.client.ListConflicts(e.ctx, x, densemem.ListConflictsRequest{After: first.NextAfter}); err != nil || len(resp.Conflicts) != 0 {
		t.Errorf("another team with this team's cursor: %+v, %v", resp, err)
	}
	body, _ := json.Marshal(first)
	if !strings.Contains(string(body), `"next_review_at"`) || !strings.Contains(string(body), `"counted_source_groups"`) {
		t.Errorf("ListConflicts JSON lacks fields: %s", body)
	}

	// Validation: every bad field named, nothing read.
	profiles, err := e.client.ListProfiles(e.ctx, e.C, densemem.ListProfilesRequest{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	settledCursor, err := e.client.ListConflicts(e.ctx, e.C, densemem.ListConflictsRequest{Status: []string{"resolved", "dismissed"}, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	latestCursor, err := e.client.ListConflicts(e.ctx, e.C, densemem.ListConflictsRequest{Order: densemem.ConflictOrderDeadlineDesc, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	var ve *densemem.ValidationError
	if _, err := e.client.ListConflicts(e.ctx, e.C, densemem.ListConflictsRequest{Order: "newest"}); !errors.As(err, &ve) || !ve.Has("order") ||
		!strings.Contains(err.Error(), "status, deadline_desc") {
		t.Errorf("ListConflicts(order newest): err = %v, want a ValidationError at order naming status and deadline_desc", err)
	}
	for _, tc := range []struct {
		req  densemem.ListConflictsRequest
		path string
	}{
		{densemem.ListConflictsRequest{Order: "deadline"}, "order"},
		{densemem.ListConflictsRequest{After: latestCursor.NextAfter}, "after"},
		{densemem.ListConflictsRequest{After: first.NextAfter, Order: densemem.ConflictOrderDeadlineDesc}, "after"},
		{densemem.ListConflictsRequest{Limit: -1}, "limit"},
		{densemem.ListConflictsRequest{Limit: 501}, "limit"},
		{densemem.ListConflictsRequest{Status: []string{"open", "stale"}}, "status[1]"},
		{densemem.ListConflictsRequest{Status: make([]string, 65)}, "status"},
		{densemem.ListConflictsRequest{After: "not a cursor"}, "after"},
		{densemem.ListConflictsRequest{After: "e30"}, "after"},
		{densemem.ListConflictsRequest{After: profiles.NextAfter}, "after"},
		{densemem.ListConflictsRequest{After: settledCursor.NextAfter}, "after"},
		{densemem.ListConflictsRequest{After: strings.Repeat("x", 1<<20)}, "after"},
	} {
		if _, err := e.client.ListConflicts(e.ctx, e.C, tc.req); !errors.As(err, &ve) || !ve.Has(tc.path) {
			t.Errorf("ListConflicts(%.80v): err = %v, want a ValidationError at %s", tc.req, err, tc.path)
		}
	}
	if _, err := e.client.ListConflicts(e.ctx, densemem.Principal{TeamID: e.team, ProfileID: "pf_nobody"},
		densemem.ListConflictsRequest{}); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("unknown profile: err = %v, want ErrForbidden", err)
	}
	if _, err := e.client.ListConflicts(e.ctx, densemem.HostPrincipal("tm_nowhere"), densemem.ListConflictsRequest{}); !errors.Is(err, densemem.ErrNotFound) {
		t.Errorf("host of a missing team: err = %v, want ErrNotFound", err)
	}
}

func TestListProfilesPredicatesReviewItemsPaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	host := densemem.HostPrincipal(e.team)

	// Profiles, in ID (creation) order, disabled ones included.
	d := e.mustProfile("D", "read")
	e.clock.Advance(time.Second)
	eve := e.mustProfile("E", "read", "write", "erasure")
	if err := e.client.DisableProfile(e.ctx, e.team, d.ProfileID); err != nil {
		t.Fatal(err)
	}
	type prof struct {
		ID     densemem.ProfileID
		Name   string
		Status string
		Scopes []densemem.Scope
	}
	want := []prof{{e.admin.ProfileID, "admin", "active", []densemem.Scope{"read", "vocabulary"}},
		{e.A.ProfileID, "A", "active", []densemem.Scope{"read", "write"}}, {e.B.ProfileID, "B", "active", []densemem.Scope{"read", "write"}},
		{e.C.ProfileID, "C", "active", []densemem.Scope{"read", "write"}}, {d.ProfileID, "D", "disabled", []densemem.Scope{"read"}},
		{eve.ProfileID, "E", "active", []densemem.Scope{"erasure", "read", "write"}}}
	for _, p := range []densemem.Principal{host, e.A} {
		for _, limit := range []int{0, 1, 4} {
			var got []prof
			req := densemem.ListProfilesRequest{Limit: limit}
			for {
				resp, err := e.client.ListProfiles(e.ctx, p, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, pr := range resp.Profiles {
					got = append(got, prof{pr.ProfileID, pr.Name, string(pr.Status), pr.Scopes})
					if pr.CreatedAt.IsZero() {
						t.Errorf("profile %s without created_at", pr.ProfileID)
					}
				}
				if req.After = resp.NextAfter; req.After == "" {
					break
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("profiles, limit %d (-want +got):\n%s", limit, diff)
			}
		}
	}

	// Predicates: the latest version of each key, in key order.
	if _, err := e.client.RegisterPredicate(e.ctx, host, densemem.PredicateDefinition{Key: "works_on", RelationshipKind: "state",
		CurrentCardinality: "many", Aliases: []string{"works on"}, Description: "a person works on a project (v2)"}); err != nil {
		t.Fatal(err)
	}
	var preds []densemem.PredicateDefinition
	req := densemem.ListPredicatesRequest{Limit: 3}
	for {
		resp, err := e.client.ListPredicates(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, resp.Predicates...)
		if req.After = resp.NextAfter; req.After == "" {
			break
		}
	}
	wantPreds := []densemem.PredicateDefinition{
		{Key: "deployed", Version: 1, RelationshipKind: "event", CurrentCardinality: "one", Description: "a deployment happened"},
		{Key: "deploys_from", Version: 1, RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys_from"},
			SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"}, Description: "the branch an environment deploys from"},
		{Key: "owner_email", Version: 1, RelationshipKind: "state", CurrentCardinality: "one", ValueObject: true, Description: "contact address"},
		{Key: "works_on", Version: 2, RelationshipKind: "state", CurrentCardinality: "many", Aliases: []string{"works_on"},
			Description: "a person works on a project (v2)"},
	}
	if diff := cmp.Diff(wantPreds, preds, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("predicates (-want +got):\n%s", diff)
	}

	// Review items: A's three predicate questions and B's two.
	ask := func(p densemem.Principal, env string) densemem.RelationshipOutcome {
		f := deploy(env, "main")
		f.predicate = "is built from"
		out := e.remember(p, f)
		if out.Category != densemem.CategoryPredicateReview || out.Review == nil {
			t.Fatalf("%s: %s, want a predicate review", env, out.Category)
		}
		e.clock.Advance(time.Second)
		return out
	}
	var aItems, bItems []densemem.RelationshipOutcome
	for _, env := range []string{"alpha", "bravo", "charlie"} {
		aItems = append(aItems, ask(e.A, env))
	}
	for _, env := range []string{"delta", "echo"} {
		bItems = append(bItems, ask(e.B, env))
	}
	pages := func(p densemem.Principal, req densemem.ListReviewItemsRequest) []densemem.ReviewItem {
		t.Helper()
		var out []densemem.ReviewItem
		for {
			resp, err := e.client.ListReviewItems(e.ctx, p, req)
			if err != nil {
				t.Fatalf("ListReviewItems %+v: %v", req, err)
			}
			out = append(out, resp.ReviewItems...)
			if req.After = resp.NextAfter; req.After == "" {
				return out
			}
		}
	}
	ids := func(items []densemem.ReviewItem) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, it.ReviewID)
		}
		return out
	}
	outcomeIDs := func(outs ...densemem.RelationshipOutcome) []string {
		out := []string{}
		for _, o := range outs {
			out = append(out, o.Review.ReviewID)
		}
		return out
	}
	own := pages(e.A, densemem.ListReviewItemsRequest{Limit: 2})
	if diff := cmp.Diff(outcomeIDs(aItems...), ids(own)); diff != "" {
		t.Errorf("A's review items (-want +got):\n%s", diff)
	}
	first := own[0]
	if first.Kind != "predicate" || first.Status != "open" || first.ProfileID != e.A.ProfileID ||
		first.PlacementItemID != aItems[0].PlacementItemID || first.ObservationID != aItems[0].ObservationID ||
		first.IngestID == "" || first.Prompt == nil || len(first.Prompt.Choices) == 0 || len(first.Prompt.PredicateOptions) == 0 ||
		first.CreatedAt.IsZero() {
		t.Errorf("review item = %+v (prompt %+v)", first, first.Prompt)
	}
	if diff := cmp.Diff(aItems[0].Review, first.Prompt); diff != "" {
		t.Errorf("stored prompt differs from the placement's (-placement +listed):\n%s", diff)
	}
	if got := pages(e.A, densemem.ListReviewItemsRequest{ProfileID: e.A.ProfileID, Limit: 1}); len(got) != 3 {
		t.Errorf("A naming itself: %d items, want 3", len(got))
	}
	if _, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{ProfileID: e.B.ProfileID}); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("A lists B's items: err = %v, want ErrForbidden", err)
	}
	if got := pages(e.C, densemem.ListReviewItemsRequest{}); len(got) != 0 {
		t.Errorf("C lists %v", ids(got))
	}
	if _, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{AllProfiles: true}); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("A lists every profile's items: err = %v, want ErrForbidden", err)
	}
	if _, err := e.client.ListReviewItems(e.ctx, e.admin, densemem.ListReviewItemsRequest{AllProfiles: true,
		ProfileID: e.A.ProfileID}); !isFieldProblem(err, "all_profiles") {
		t.Errorf("all_profiles with profile_id: err = %v, want a validation error on all_profiles", err)
	}
	if got := pages(e.A, densemem.ListReviewItemsRequest{Status: "resolved"}); len(got) != 0 {
		t.Errorf("A's resolved items: %v", ids(got))
	}
	// The host lists every profile's, by profile then creation, or one profile's.
	byProfile := map[densemem.ProfileID][]string{e.A.ProfileID: outcomeIDs(aItems...), e.B.ProfileID: outcomeIDs(bItems...)}
	wantAll := slices.Concat(byProfile[min(e.A.ProfileID, e.B.ProfileID)], byProfile[max(e.A.ProfileID, e.B.ProfileID)])
	for _, limit := range []int{1, 2, 0} {
		if diff := cmp.Diff(wantAll, ids(pages(host, densemem.ListReviewItemsRequest{Limit: limit}))); diff != "" {
			t.Errorf("host, limit %d (-want +got):\n%s", limit, diff)
		}
	}
	if diff := cmp.Diff(byProfile[e.B.ProfileID], ids(pages(host, densemem.ListReviewItemsRequest{ProfileID: e.B.ProfileID, Limit: 1}))); diff != "" {
		t.Errorf("host, B's items (-want +got):\n%s", diff)
	}
	// A profile with the vocabulary scope sees every profile's (the proposals on predicate items).
	if diff := cmp.Diff(wantAll, ids(pages(e.admin, densemem.ListReviewItemsRequest{AllProfiles: true, Limit: 2}))); diff != "" {
		t.Errorf("the vocabulary profile, all profiles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(byProfile[e.B.ProfileID], ids(pages(e.admin, densemem.ListReviewItemsRequest{ProfileID: e.B.ProfileID}))); diff != "" {
		t.Errorf("the vocabulary profile, B's items (-want +got):\n%s", diff)
	}

	// Another team lists nothing of this one.
	team2 := e.mustTeam("globex")
	x := e.profileIn(team2, "X", "read", "write")
	if resp, err := e.client.ListProfiles(e.ctx, x, densemem.ListProfilesRequest{}); err != nil || len(resp.Profiles) != 1 ||
		resp.Profiles[0].ProfileID != x.ProfileID {
		t.Errorf("team 2 profiles: %+v, %v", resp, err)
	}
	if resp, err := e.client.ListPredicates(e.ctx, x, densemem.ListPredicatesRequest{}); err != nil || len(resp.Predicates) != 0 {
		t.Errorf("team 2 predicates: %+v, %v", resp, err)
	}
	if got := pages(densemem.HostPrincipal(team2), densemem.ListReviewItemsRequest{}); len(got) != 0 {
		t.Errorf("team 2's host lists %v", ids(got))
	}
	if got := pages(densemem.HostPrincipal(team2), densemem.ListReviewItemsRequest{ProfileID: e.A.ProfileID}); len(got) != 0 {
		t.Errorf("team 2's host lists team 1's A: %v", ids(got))
	}

	// Validation.
	predCursor, err := e.client.ListPredicates(e.ctx, e.A, densemem.ListPredicatesRequest{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	var ve *densemem.ValidationError
	if _, err := e.client.ListProfiles(e.ctx, e.A, densemem.ListProfilesRequest{Limit: 501, After: predCursor.NextAfter}); !errors.As(err, &ve) ||
		!ve.Has("limit") || !ve.Has("after") {
		t.Errorf("ListProfiles: err = %v, want ValidationErrors at limit and after", err)
	}
	if _, err := e.client.ListPredicates(e.ctx, e.A, densemem.ListPredicatesRequest{Limit: -3, After: "%%%"}); !errors.As(err, &ve) ||
		!ve.Has("limit") || !ve.Has("after") {
		t.Errorf("ListPredicates: err = %v, want ValidationErrors at limit and after", err)
	}
	if _, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{Status: "closed", ProfileID: "\x00",
		Limit: 1000, After: predCursor.NextAfter}); !errors.As(err, &ve) ||
		!ve.Has("status") || !ve.Has("profile_id") || !ve.Has("limit") || !ve.Has("after") {
		t.Errorf("ListReviewItems: err = %v, want ValidationErrors at status, profile_id, limit and after", err)
	}
	// A disabled profile, or one without the read scope, lists nothing.
	if _, err := e.client.ListProfiles(e.ctx, d, densemem.ListProfilesRequest{}); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("disabled profile lists profiles: err = %v, want ErrForbidden", err)
	}
	w := e.mustProfile("W", "write")
	if _, err := e.client.ListReviewItems(e.ctx, w, densemem.ListReviewItemsRequest{}); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("profile without read lists its items: err = %v, want ErrForbidden", err)
	}
}

// TestListLimitsConfigurable: Limits.MaxPageItems bounds the page size a request may ask for, and a
// request that says nothing gets DefaultPageItems or MaxPageItems when smaller.
func TestListLimitsConfigurable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *densemem.Config) { c.Limits.MaxPageItems = 2 })
	resp, err := e.client.ListProfiles(e.ctx, e.A, densemem.ListProfilesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Profiles) != 2 || resp.NextAfter == "" {
		t.Errorf("default page with MaxPageItems 2: %d profiles, next %q", len(resp.Profiles), resp.NextAfter)
	}
	var ve *densemem.ValidationError
	if _, err := e.client.ListProfiles(e.ctx, e.A, densemem.ListProfilesRequest{Limit: 3}); !errors.As(err, &ve) || !ve.Has("limit") {
		t.Errorf("limit 3 with MaxPageItems 2: err = %v", err)
	}
}

package densemem_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// The same-owner current-state table of DESIGN §6.4: one subtest per row. Every row sets up the
// owner's prior relationship, lets the same owner remember a new statement of the same subject and
// predicate, and checks the outcome, the new relationship, the prior and both ledgers.

// expectedPrior is the expected stored state of the prior after the new statement.
type expectedPrior struct {
	status      string
	tier        string
	validTo     *time.Time
	version     int
	transitions []string
}

// expectedOutcome is the expected outcome of the new statement.
type expectedOutcome struct {
	category densemem.Category
	// status and tier of the outcome's relationship ("" when the outcome has none).
	status densemem.Status
	tier   densemem.Tier
	// same is true when the outcome's relationship is the prior itself (support added, no new row).
	same bool
	// transitions of the outcome's relationship when it is a new one.
	transitions []string
	// related is true when the outcome must name exactly the prior in Related.
	related bool
	// review lists the review choice actions, in order; nil when no review is expected.
	review []string
	// newRows and supports are the deltas of relationships and support_links.
	newRows, supports int
	prior             expectedPrior
}

// datedBetween is a fact with an explicit validity whose content states both dates.
func datedBetween(f fact, from time.Time, to *time.Time) fact {
	f.validFrom = &from
	if to == nil {
		f.content = fmt.Sprintf("Since %s the %s environment deploys from the %s branch.", from.Format(time.DateOnly), f.subject, f.object)
	} else {
		f.content = fmt.Sprintf("From %s until %s the %s environment deploys from the %s branch.",
			from.Format(time.DateOnly), to.Format(time.DateOnly), f.subject, f.object)
	}
	return f
}

// requestValidTo builds a fact's request with an optional valid_to.
func requestValidTo(f fact, validTo *time.Time) densemem.RememberRequest {
	req := f.request(nextKey())
	req.Proposal.Relationships[0].ValidTo = validTo
	return req
}

var (
	conflictChoices            = []string{"supersede_prior", "keep_prior_reject_new", "correct", "both_valid"}
	createdTransitions         = []string{"->active:accepted"}
	heldTransitions            = []string{"->needs_review:held_for_review"}
	pendingTransitions         = []string{"->pending_evidence:evidence_insufficient"}
	priorUntouched             = expectedPrior{status: "active", tier: "validated_claim", version: 1, transitions: createdTransitions}
	priorSupersededTransitions = []string{"->active:accepted", "active->superseded:superseded"}
	pendingPriorUntouched      = expectedPrior{status: "pending_evidence", tier: "candidate", version: 1, transitions: pendingTransitions}
)

// heldAgainstPrior is the expected outcome of a held conflict against an untouched active prior.
var heldAgainstPrior = expectedOutcome{category: densemem.CategoryNeedsReview, status: "needs_review", tier: "validated_claim",
	transitions: heldTransitions, related: true, review: conflictChoices, newRows: 1, supports: 1, prior: priorUntouched}

// coexistsWithPrior is the expected outcome of a new active relationship beside an untouched active prior.
var coexistsWithPrior = expectedOutcome{category: densemem.CategoryAccepted, status: "active", tier: "validated_claim",
	transitions: createdTransitions, newRows: 1, supports: 1, prior: priorUntouched}

// insufficientDeploy is deploy(env, branch) cited from a text that does not name the branch.
func insufficientDeploy(env, branch string) fact {
	return withContent(deploy(env, branch), fmt.Sprintf("The %s environment deploys from the usual branch.", env))
}

func TestSupersessionTable(t *testing.T) {
	t.Parallel()
	may1, apr1 := date("2026-05-01"), date("2026-04-01")

	rows := []struct {
		name  string
		prior func(e *env) densemem.RelationshipOutcome
		next  func(e *env) densemem.RememberRequest
		want  expectedOutcome
	}{
		{
			name: "1a identical active gains support from the same source group",
			prior: func(e *env) densemem.RelationshipOutcome {
				f := deploy("production", "main")
				f.sourceGroup = "ticket-1"
				return e.remember(e.A, f)
			},
			next: func(e *env) densemem.RememberRequest {
				f := deploy("production", "main")
				f.sourceGroup = "ticket-1"
				return f.request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategorySupported, status: "active", tier: "validated_claim", same: true,
				supports: 1, prior: priorUntouched},
		},
		{
			name: "1b identical active with a second independent source group becomes fact",
			prior: func(e *env) densemem.RelationshipOutcome {
				f := deploy("production", "main")
				f.sourceGroup = "ticket-1"
				return e.remember(e.A, f)
			},
			next: func(e *env) densemem.RememberRequest {
				f := withContent(deploy("production", "main"), "Runbook: production deploys from main.")
				f.sourceGroup = "runbook"
				return f.request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategorySupported, status: "active", tier: "fact", same: true, supports: 1,
				prior: expectedPrior{status: "active", tier: "fact", version: 2,
					transitions: []string{"->active:accepted", "active->active:support_added"}}},
		},
		{
			name: "2 identical pending_evidence gains support and becomes active",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, insufficientDeploy("production", "main"))
			},
			next: func(e *env) densemem.RememberRequest { return deploy("production", "main").request(nextKey()) },
			want: expectedOutcome{category: densemem.CategorySupported, status: "active", tier: "validated_claim", same: true, supports: 1,
				prior: expectedPrior{status: "active", tier: "validated_claim", version: 2,
					transitions: []string{"->pending_evidence:evidence_insufficient", "pending_evidence->active:evidence_accepted"}}},
		},
		{
			name: "3a event predicate with a different object coexists",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, deployedEvent("production", "main", nil))
			},
			next: func(e *env) densemem.RememberRequest {
				return deployedEvent("production", "release", nil).request(nextKey())
			},
			want: coexistsWithPrior,
		},
		{
			name: "3b event predicate, same object at the same time, is the same occurrence",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, deployedEvent("production", "main", &may1))
			},
			next: func(e *env) densemem.RememberRequest {
				f := deployedEvent("production", "main", &may1)
				f.content = "Deploy log " + may1.Format(time.DateOnly) + ": production deployed main."
				return f.request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategorySupported, status: "active", tier: "fact", same: true, supports: 1,
				prior: expectedPrior{status: "active", tier: "fact", version: 2,
					transitions: []string{"->active:accepted", "active->active:support_added"}}},
		},
		{
			name: "3c event predicate, same object at another time, is another occurrence",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, deployedEvent("production", "main", &apr1))
			},
			next: func(e *env) densemem.RememberRequest {
				return deployedEvent("production", "main", &may1).request(nextKey())
			},
			want: coexistsWithPrior,
		},
		{
			name:  "4 cardinality many with a different object coexists",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, worksOnFact("Mark", "Dense-Mem")) },
			next:  func(e *env) densemem.RememberRequest { return worksOnFact("Mark", "Billing").request(nextKey()) },
			want:  coexistsWithPrior,
		},
		{
			name:  "5a cardinality one in a different scope coexists",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				f := deploy("production", "release")
				f.scope = "EU"
				return f.request(nextKey())
			},
			want: coexistsWithPrior,
		},
		{
			name: "5b scopes compare after normalisation",
			prior: func(e *env) densemem.RelationshipOutcome {
				f := deploy("production", "main")
				f.scope = "EU"
				return e.remember(e.A, f)
			},
			next: func(e *env) densemem.RememberRequest {
				f := deploy("production", "release")
				f.scope = "  eu "
				return f.request(nextKey())
			},
			want: heldAgainstPrior,
		},
		{
			name: "6 cardinality one with non-overlapping validity coexists",
			prior: func(e *env) densemem.RelationshipOutcome {
				to := date("2026-03-01")
				pl := e.rememberReq(e.A, requestValidTo(datedBetween(deploy("production", "main"), date("2026-01-01"), &to), &to))
				return only(e.t, pl)
			},
			next: func(e *env) densemem.RememberRequest {
				return datedBetween(deploy("production", "release"), apr1, nil).request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategoryAccepted, status: "active", tier: "validated_claim", transitions: createdTransitions,
				newRows: 1, supports: 1,
				prior: expectedPrior{status: "active", tier: "validated_claim", validTo: ptr(date("2026-03-01")), version: 1,
					transitions: createdTransitions}},
		},
		{
			name:  "7a incompatible with a confirmed later valid_from supersedes an undated prior",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				return deploy("production", "release").since(may1).request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategorySupersededPrior, status: "active", tier: "validated_claim",
				transitions: createdTransitions, related: true, newRows: 1, supports: 1,
				prior: expectedPrior{status: "superseded", tier: "validated_claim", validTo: &may1, version: 2, transitions: priorSupersededTransitions}},
		},
		{
			name: "7b incompatible with a confirmed later valid_from supersedes a dated prior",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, deploy("production", "main").since(apr1))
			},
			next: func(e *env) densemem.RememberRequest {
				return deploy("production", "release").since(may1).request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategorySupersededPrior, status: "active", tier: "validated_claim",
				transitions: createdTransitions, related: true, newRows: 1, supports: 1,
				prior: expectedPrior{status: "superseded", tier: "validated_claim", validTo: &may1, version: 2, transitions: priorSupersededTransitions}},
		},
		{
			name:  "8 incompatible and undated is held",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next:  func(e *env) densemem.RememberRequest { return deploy("production", "release").request(nextKey()) },
			want:  heldAgainstPrior,
		},
		{
			name:  "9a incompatible, dated, but the date is not in the evidence, is held",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				f := deploy("production", "release")
				f.validFrom = &may1
				return f.request(nextKey())
			},
			want: heldAgainstPrior,
		},
		{
			name:  "9b incompatible, dated, but the evidence states another date, is held",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				f := deploy("production", "release").since(apr1)
				f.validFrom = &may1
				return f.request(nextKey())
			},
			want: heldAgainstPrior,
		},
		{
			name: "10a incompatible, dated at the prior's valid_from, is held",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, deploy("production", "main").since(may1))
			},
			next: func(e *env) densemem.RememberRequest {
				return deploy("production", "release").since(may1).request(nextKey())
			},
			want: heldAgainstPrior,
		},
		{
			name: "10b incompatible, dated before the prior's valid_from, is held",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, deploy("production", "main").since(may1))
			},
			next: func(e *env) densemem.RememberRequest {
				return deploy("production", "release").since(apr1).request(nextKey())
			},
			want: heldAgainstPrior,
		},
		{
			name:  "11a same object, opposite polarity, undated, is held",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				f := withContent(deploy("production", "main"), "The production environment no longer deploys from the main branch.")
				f.polarity = "-"
				return f.request(nextKey())
			},
			want: heldAgainstPrior,
		},
		{
			name:  "11b same object, opposite polarity, with a confirmed later date, supersedes",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				f := withContent(deploy("production", "main"),
					"Since 2026-05-01 the production environment does not deploy from the main branch.")
				f.polarity, f.validFrom = "-", &may1
				return f.request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategorySupersededPrior, status: "active", tier: "validated_claim",
				transitions: createdTransitions, related: true, newRows: 1, supports: 1,
				prior: expectedPrior{status: "superseded", tier: "validated_claim", validTo: &may1, version: 2, transitions: priorSupersededTransitions}},
		},
		{
			name:  "12 insufficient evidence is pending, without support",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				return insufficientDeploy("production", "release").request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategoryPendingEvidence, status: "pending_evidence", tier: "candidate",
				transitions: pendingTransitions, review: []string{"add_evidence", "accept", "reject", "correct"}, newRows: 1, supports: 0, prior: priorUntouched},
		},
		{
			name:  "13 a hypothetical is an observation only",
			prior: func(e *env) densemem.RelationshipOutcome { return e.remember(e.A, deploy("production", "main")) },
			next: func(e *env) densemem.RememberRequest {
				f := withContent(deploy("production", "release"),
					"If we switched, the production environment would deploy from the release branch.")
				f.modality = "hypothetical"
				return f.request(nextKey())
			},
			want: expectedOutcome{category: densemem.CategoryNotAsserted, prior: priorUntouched},
		},
		{
			name: "14 a pending_evidence relationship never blocks",
			prior: func(e *env) densemem.RelationshipOutcome {
				return e.remember(e.A, insufficientDeploy("production", "main"))
			},
			next: func(e *env) densemem.RememberRequest { return deploy("production", "release").request(nextKey()) },
			want: expectedOutcome{category: densemem.CategoryAccepted, status: "active", tier: "validated_claim", transitions: createdTransitions,
				newRows: 1, supports: 1, prior: pendingPriorUntouched},
		},
		{
			name:  "15 cardinality one with literal values: another value, undated, is held",
			prior: func(e *env) densemem.RelationshipOutcome { return rememberDenseMemEmail(e, "ops@example.com") },
			next:  func(e *env) densemem.RememberRequest { return denseMemEmail("oncall@example.com") },
			want:  heldAgainstPrior,
		},
		{
			name:  "16 cardinality one with literal values: the same value is supported",
			prior: func(e *env) densemem.RelationshipOutcome { return rememberDenseMemEmail(e, "ops@example.com") },
			next: func(e *env) densemem.RememberRequest {
				req := denseMemEmail("ops@example.com")
				req.Evidence[0].Content = "Reminder: the Dense-Mem project owner email is ops@example.com"
				req.Proposal.Relationships[0].Evidence[0].End = len(req.Evidence[0].Content)
				return req
			},
			want: expectedOutcome{category: densemem.CategorySupported, status: "active", tier: "fact", same: true, supports: 1,
				prior: expectedPrior{status: "active", tier: "fact", version: 2,
					transitions: []string{"->active:accepted", "active->active:support_added"}}},
		},
	}

	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			prior := row.prior(e)
			if prior.RelationshipID == "" {
				t.Fatalf("setup: the prior is not a relationship: %+v", prior)
			}
			before := e.counts()
			e.step()
			pl := e.rememberReq(e.A, row.next(e))
			checkSupersessionRow(t, e, pl, prior.RelationshipID, before, row.want)
		})
	}

	// A pending relationship that later gains support is re-planned against the owner's current state
	// (§6.1, §6.4). Its own valid_from is what supersession needs: an undated pending relationship
	// cannot establish replacement, even when the new evidence states a date, so it is held; it must
	// never close the prior with an open (NULL) valid_to.
	t.Run("17 undated pending_evidence gaining dated support over an active prior is held", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		current := e.remember(e.A, deploy("production", "main")).RelationshipID
		pending := e.remember(e.A, insufficientDeploy("production", "release"))
		if pending.Category != densemem.CategoryPendingEvidence {
			t.Fatalf("setup: %+v", pending)
		}
		before := e.counts()
		e.step()
		out := e.remember(e.A, deploy("production", "release").since(may1))
		if d := e.count("relationships") - before["relationships"]; d != 0 {
			t.Errorf("relationships +%d, want the pending one to gain the support", d)
		}
		if out.RelationshipID != pending.RelationshipID {
			t.Errorf("outcome relationship %s, want the pending %s", out.RelationshipID, pending.RelationshipID)
		}
		st, _, vt, v := e.relationshipState(current)
		if st == "superseded" && vt == nil {
			t.Errorf("prior %s superseded with a NULL valid_to (v%d): it now reads as current forever beside its replacement", current, v)
		}
		if out.Category != densemem.CategoryNeedsReview || out.Status != "needs_review" {
			t.Errorf("outcome %s/%s, want relationship_needs_review/needs_review (reason %q)", out.Category, out.Status, out.Reason)
		}
		if st != "active" || vt != nil || v != 1 {
			t.Errorf("prior %s valid_to %v v%d, want active, open, v1", st, vt, v)
		}
		if d := diff([]string{"->pending_evidence:evidence_insufficient", "pending_evidence->needs_review:evidence_accepted_held"},
			e.transitions(pending.RelationshipID)); d != "" {
			t.Errorf("pending relationship transitions (-want +got):\n%s", d)
		}
	})

	t.Run("18 one call with two dated replacements chains the supersessions", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		main := e.remember(e.A, deploy("production", "main")).RelationshipID
		e.step()
		may10 := date("2026-05-10")
		pl := e.rememberReq(e.A, mergeRequests(nextKey(),
			deploy("production", "release").since(may1).request(""),
			deploy("production", "hotfix").since(may10).request("")))
		if len(pl.RelationshipOutcomes) != 2 {
			t.Fatalf("outcomes %+v", pl.RelationshipOutcomes)
		}
		release, hotfix := pl.RelationshipOutcomes[0], pl.RelationshipOutcomes[1]
		if release.Category != densemem.CategorySupersededPrior || hotfix.Category != densemem.CategorySupersededPrior {
			t.Fatalf("categories %s, %s; want both superseded_prior", release.Category, hotfix.Category)
		}
		if d := diff([]densemem.RelationshipID{release.RelationshipID}, hotfix.Related); d != "" {
			t.Errorf("hotfix supersedes (-want +got):\n%s", d)
		}
		type state struct {
			status  string
			validTo *time.Time
			version int
		}
		read := func(id densemem.RelationshipID) state {
			st, _, vt, v := e.relationshipState(id)
			return state{st, vt, v}
		}
		for _, c := range []struct {
			id          densemem.RelationshipID
			want        state
			transitions []string
		}{
			{main, state{"superseded", &may1, 2}, priorSupersededTransitions},
			{release.RelationshipID, state{"superseded", &may10, 2}, priorSupersededTransitions},
			{hotfix.RelationshipID, state{"active", nil, 1}, createdTransitions},
		} {
			if d := diff(c.want, read(c.id)); d != "" {
				t.Errorf("%s (-want +got):\n%s", c.id, d)
			}
			if d := diff(c.transitions, e.transitions(c.id)); d != "" {
				t.Errorf("%s transitions (-want +got):\n%s", c.id, d)
			}
		}
		if n := e.count("semantic_edges"); n != 1 {
			t.Errorf("semantic_edges = %d, want only hotfix", n)
		}
	})
}

// checkSupersessionRow asserts one row's outcome, the new relationship, the prior and both ledgers.
func checkSupersessionRow(t *testing.T, e *env, pl *densemem.Placement, prior densemem.RelationshipID, before map[string]int,
	want expectedOutcome) {
	t.Helper()
	out := only(t, pl)
	if out.Category != want.category {
		t.Fatalf("category %s, want %s (reason %q)", out.Category, want.category, out.Reason)
	}
	if out.Status != want.status || out.Tier != want.tier {
		t.Errorf("outcome status/tier %s/%s, want %s/%s", out.Status, out.Tier, want.status, want.tier)
	}
	after := e.counts()
	if d := after["relationships"] - before["relationships"]; d != want.newRows {
		t.Errorf("relationships +%d, want +%d", d, want.newRows)
	}
	if d := after["support_links"] - before["support_links"]; d != want.supports {
		t.Errorf("support_links +%d, want +%d", d, want.supports)
	}

	switch {
	case want.status == "":
		if out.RelationshipID != "" {
			t.Errorf("outcome names relationship %s, want none", out.RelationshipID)
		}
	case want.same:
		if out.RelationshipID != prior {
			t.Errorf("outcome relationship %s, want the prior %s", out.RelationshipID, prior)
		}
	default:
		if out.RelationshipID == "" || out.RelationshipID == prior {
			t.Fatalf("outcome relationship %q, want a new one", out.RelationshipID)
		}
		status, tier, validTo, version := e.relationshipState(out.RelationshipID)
		if status != string(want.status) || tier != string(want.tier) || version != 1 {
			t.Errorf("new relationship stored %s/%s v%d, want %s/%s v1", status, tier, version, want.status, want.tier)
		}
		if validTo != nil {
			t.Errorf("new relationship valid_to %v, want none", validTo)
		}
		if d := diff(want.transitions, e.transitions(out.RelationshipID)); d != "" {
			t.Errorf("new relationship transitions (-want +got):\n%s", d)
		}
		if got, wantEdges := e.ledger().Edges(out.RelationshipID), edgesOfStatus(want.status); got != wantEdges {
			t.Errorf("new relationship has %d semantic edges, want %d", got, wantEdges)
		}
	}

	status, tier, validTo, version := e.relationshipState(prior)
	gotPrior := expectedPrior{status: status, tier: tier, validTo: validTo, version: version, transitions: e.transitions(prior)}
	if gotPrior.validTo != nil {
		u := gotPrior.validTo.UTC()
		gotPrior.validTo = &u
	}
	if d := diff(want.prior, gotPrior); d != "" {
		t.Errorf("prior (-want +got):\n%s", d)
	}
	if got, wantEdges := e.ledger().Edges(prior), edgesOfStatus(densemem.Status(want.prior.status)); got != wantEdges {
		t.Errorf("prior has %d semantic edges, want %d", got, wantEdges)
	}

	if want.related {
		if d := diff([]densemem.RelationshipID{prior}, out.Related); d != "" {
			t.Errorf("related (-want +got):\n%s", d)
		}
	} else if len(out.Related) > 0 {
		t.Errorf("related %v, want none", out.Related)
	}
	if want.review == nil {
		if out.Review != nil {
			t.Errorf("unexpected review %+v", out.Review)
		}
	} else {
		if out.Review == nil {
			t.Fatalf("no review, want choices %v", want.review)
		}
		var actions []string
		for _, c := range out.Review.Choices {
			actions = append(actions, c.Action)
		}
		if d := diff(want.review, actions); d != "" {
			t.Errorf("review choices (-want +got):\n%s", d)
		}
		if strings.TrimSpace(out.Review.Question) == "" {
			t.Errorf("review %s asks no question", out.Review.ReviewID)
		}
		items, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{})
		if err != nil {
			t.Fatalf("list A's review items: %v", err)
		}
		var item *densemem.ReviewItem
		for i := range items.ReviewItems {
			if items.ReviewItems[i].ReviewID == out.Review.ReviewID {
				item = &items.ReviewItems[i]
			}
		}
		switch {
		case item == nil:
			t.Errorf("review item %s is not among A's open review items", out.Review.ReviewID)
		case want.related && !slices.Equal(item.RelatedRelationshipID, []densemem.RelationshipID{prior}):
			t.Errorf("review item related %v, want [%s]", item.RelatedRelationshipID, prior)
		}
	}

	// Every observation is kept; a verification event exists exactly for statements. Read on the
	// ledger: a hypothetical's observation belongs to no relationship, so no trace shows it.
	var modality []string
	var verifications, granted int
	e.snapshot(func(l ledgerView) {
		modality = l.Strings(`SELECT modality FROM observations WHERE observation_id = $1`, out.ObservationID)
		verifications = l.Int(`SELECT count(*) FROM verification_events WHERE observation_id = $1`, out.ObservationID)
		granted = l.Int(`SELECT count(*) FROM verification_events WHERE observation_id = $1 AND support_granted`, out.ObservationID)
	})
	if len(modality) != 1 {
		t.Fatalf("observation %s: %d rows", out.ObservationID, len(modality))
	}
	switch {
	case want.category == densemem.CategoryNotAsserted:
		if modality[0] != "hypothetical" || verifications != 0 {
			t.Errorf("hypothetical: observation modality %q, %d verification events; want hypothetical and none", modality[0], verifications)
		}
	case want.category == densemem.CategoryPendingEvidence:
		if verifications != 1 || granted != 0 {
			t.Errorf("pending: %d verification events (%d granting support), want 1 granting none", verifications, granted)
		}
	default:
		if verifications != 1 || granted != 1 {
			t.Errorf("%d verification events (%d granting support), want 1 granting support", verifications, granted)
		}
	}
}

// edgesOfStatus is the number of semantic edges a relationship of status has.
func edgesOfStatus(s densemem.Status) int {
	if s == "active" {
		return 1
	}
	return 0
}

// deployedEvent is "<env> deployed <branch>", an event predicate, optionally at a stated time.
func deployedEvent(env, branch string, at *time.Time) fact {
	f := fact{subject: env, subjectKind: "environment", predicate: "deployed", object: branch, objectKind: "git_branch",
		content: fmt.Sprintf("The %s environment deployed the %s branch.", env, branch)}
	if at != nil {
		f.validFrom = at
		f.content = fmt.Sprintf("On %s the %s environment deployed the %s branch.", at.Format(time.DateOnly), env, branch)
	}
	return f
}

// worksOnFact is "<person> works_on <project>", a cardinality-many state predicate.
func worksOnFact(person, project string) fact {
	return fact{subject: person, subjectKind: "person", predicate: "works_on", object: project, objectKind: "project",
		content: fmt.Sprintf("%s works on the %s project.", person, project)}
}

// rememberDenseMemEmail remembers the Dense-Mem project's owner_email for A.
func rememberDenseMemEmail(e *env, address string) densemem.RelationshipOutcome {
	e.t.Helper()
	return only(e.t, e.rememberReq(e.A, denseMemEmail(address)))
}

package conflict_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// The identity_correction fixtures: ann's combined "Mark" (ent_mark) works on two projects; bob's
// two distinct Marks correct one statement each.
func onMark(m conflict.Member, subject identity.EntityID) conflict.Member {
	return with(m, func(r *relationship.Relationship) { r.Subject, r.PredicateKey = subject, "works_on" })
}

func TestIdentityPositions(t *testing.T) {
	t.Parallel()
	now := opened.Add(time.Hour)
	dense, billing := relationship.Object{EntityID: "ent_dense"}, relationship.Object{EntityID: "ent_billing"}
	annDense := onMark(mem("r_01", ann, dense, src("wiki")), "ent_mark")
	annBilling := onMark(mem("r_02", ann, billing, src("wiki")), "ent_mark")
	bobDense := onMark(mem("r_03", bob, dense, src("hr")), "ent_mark_dense")
	bobBilling := onMark(mem("r_04", bob, billing, src("payroll")), "ent_mark_billing")
	retracted := with(annDense, func(r *relationship.Relationship) { r.Status = relationship.StatusRetracted })
	// bob's statements cite one org-chart memo that tells both Marks apart, besides a source each.
	bobDenseShared := onMark(mem("r_05", bob, dense, src("memo"), src("hr")), "ent_mark_dense")
	bobBillingShared := onMark(mem("r_06", bob, billing, src("memo"), src("payroll")), "ent_mark_billing")
	// bob's Billing correction also cites ann's wiki page.
	bobBillingWiki := onMark(mem("r_07", bob, billing, src("wiki"), src("payroll")), "ent_mark_billing")

	type want struct {
		entity identity.EntityID
		ids    []relationship.ID
		groups int
	}
	tests := []struct {
		name    string
		members []conflict.Member
		want    []want
	}{
		{"the combined identity and two distinct ones", []conflict.Member{bobBilling, annDense, bobDense, annBilling},
			[]want{{"ent_mark", []relationship.ID{"r_01", "r_02"}, 1}, {"ent_mark_dense", []relationship.ID{"r_03"}, 1},
				{"ent_mark_billing", []relationship.ID{"r_04"}, 1}}},
		{"no member on the combined identity: none", []conflict.Member{bobDense, bobBilling}, nil},
		{"only the combined identity: none", []conflict.Member{annDense, annBilling}, nil},
		{"a member that is no longer material is left out", []conflict.Member{retracted, bobDense},
			nil},
		{"a correction whose statement on the identity is gone corrects nothing", []conflict.Member{retracted, annBilling, bobDense, bobBilling},
			[]want{{"ent_mark", []relationship.ID{"r_02"}, 1}, {"ent_mark_billing", []relationship.ID{"r_04"}, 1}}},
		{"a document telling both Marks apart counts for each of them, not for neither",
			[]conflict.Member{annDense, annBilling, bobBillingShared, bobDenseShared},
			[]want{{"ent_mark", []relationship.ID{"r_01", "r_02"}, 1}, {"ent_mark_dense", []relationship.ID{"r_05"}, 2},
				{"ent_mark_billing", []relationship.ID{"r_06"}, 2}}},
		{"a source behind the combined Mark and a correction counts for neither",
			[]conflict.Member{annDense, bobDense, annBilling, bobBillingWiki},
			[]want{{"ent_mark", []relationship.ID{"r_01", "r_02"}, 0}, {"ent_mark_dense", []relationship.ID{"r_03"}, 1},
				{"ent_mark_billing", []relationship.ID{"r_07"}, 1}}},
		{"one correction left", []conflict.Member{annBilling, bobBilling},
			[]want{{"ent_mark", []relationship.ID{"r_02"}, 1}, {"ent_mark_billing", []relationship.ID{"r_04"}, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []want
			for _, p := range conflict.IdentityPositions("ent_mark", tt.members, now) {
				if p.Key.Polarity != pos {
					t.Errorf("position %s has polarity %s, want +", p.Key.Object.EntityID, p.Key.Polarity)
				}
				w := want{entity: p.Key.Object.EntityID, groups: p.Groups}
				for _, m := range p.Members {
					w.ids = append(w.ids, m.Relationship.ID)
				}
				got = append(got, w)
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("IdentityPositions (-want +got):\n%s", d)
			}
		})
	}
}

func TestMaintainIdentity(t *testing.T) {
	t.Parallel()
	now := opened.Add(time.Hour)
	dense := relationship.Object{EntityID: "ent_dense"}
	annDense := onMark(mem("r_01", ann, dense, src("wiki")), "ent_mark")
	bobDense := onMark(mem("r_03", bob, dense, src("hr")), "ent_mark_dense")
	opened := conflict.MaintainIdentity("ent_mark", nil, []conflict.Member{annDense, bobDense}, now)
	if opened.Action != conflict.ActionOpen || len(opened.Add) != 2 || len(opened.Positions) != 2 {
		t.Fatalf("a first correction: %+v, want the case opened with both members", opened)
	}
	live := &conflict.Live{ID: "cf_1", Version: 1, Status: conflict.StatusOpen, Members: opened.Add}
	if ch := conflict.MaintainIdentity("ent_mark", live, []conflict.Member{annDense, bobDense}, now); ch.Action != conflict.ActionNone {
		t.Errorf("nothing changed: %+v, want no action", ch)
	}
	forgotten := with(bobDense, func(r *relationship.Relationship) { r.Status, r.Version = relationship.StatusRetracted, 2 })
	if ch := conflict.MaintainIdentity("ent_mark", live, []conflict.Member{annDense, forgotten}, now); ch.Action != conflict.ActionDismiss {
		t.Errorf("the only correction forgotten: %+v, want the case dismissed", ch)
	}
}

// The identity case is decided by the one policy (Decide) over its two sides: ann's combined Mark
// against bob's distinct Marks together. Positions are ordered ent_mark (r_01), ent_mark_dense (r_03),
// ent_mark_billing (r_04), so a win of the corrections names position 1 and one of ann's position 0.
func TestDecideIdentity(t *testing.T) {
	t.Parallel()
	dense, billing := relationship.Object{EntityID: "ent_dense"}, relationship.Object{EntityID: "ent_billing"}
	// marks is ann's two statements on the combined Mark and bob's correction of each, with supports.
	marks := func(annDense, annBilling, bobDense, bobBilling []evidence.Support) []conflict.Member {
		return []conflict.Member{
			onMark(mem("r_01", ann, dense, annDense...), "ent_mark"),
			onMark(mem("r_02", ann, billing, annBilling...), "ent_mark"),
			onMark(mem("r_03", bob, dense, bobDense...), "ent_mark_dense"),
			onMark(mem("r_04", bob, billing, bobBilling...), "ent_mark_billing"),
		}
	}
	one := func(label string) []evidence.Support { return []evidence.Support{src(label)} }
	wiki := one("wiki") // ann's one source behind both of her statements: one group
	tests := []struct {
		name      string
		members   []conflict.Member
		now       time.Time
		confirmed at
		want      conflict.Decision
	}{
		{"before the deadline, the corrections' 4 groups against 1 (80%) resolve for them, though each identity alone has 40%",
			marks(wiki, wiki, srcs("hr", 2), srcs("pay", 2)), preTTL, nil, fallback(1, conflict.ReasonPreTTLFloor)},
		{"before the deadline, 3 groups against 1 (exactly 75%): kept open",
			marks(wiki, wiki, srcs("hr", 2), one("pay1")), preTTL, nil, keepOpen(conflict.ReasonNoQualifyingPosition)},
		{"after the deadline the same 3 against 1 resolve by majority",
			marks(wiki, wiki, srcs("hr", 2), one("pay1")), atDue, nil, fallback(1, conflict.ReasonPostTTLMajority)},
		{"after the deadline, 2 groups against 2: overdue, never an invented winner",
			marks(one("a1"), one("a2"), one("hr1"), one("pay1")), atDue, nil, overdue(conflict.ReasonNoQualifyingPosition)},
		{"one document telling both Marks apart counts once for the corrections (3 of 4), not for neither",
			marks(wiki, wiki, []evidence.Support{src("memo"), src("org")}, []evidence.Support{src("memo"), src("pay")}),
			atDue, nil, fallback(1, conflict.ReasonPostTTLMajority)},
		{"a source behind the combined identity and a correction counts for neither side: 3 groups against 0, kept open",
			marks(one("hr1"), one("hr1"), srcs("hr", 3), one("pay1")), preTTL, nil, keepOpen(conflict.ReasonNoQualifyingPosition)},
		{"symmetric: the combined identity's 3 groups against 1 win after the deadline",
			marks(srcs("a", 2), one("a3"), one("hr1"), one("hr1")), atDue, nil, fallback(0, conflict.ReasonPostTTLMajority)},
		{"authority on the combined identity blocks a majority of corrections and wins after the deadline",
			marks([]evidence.Support{authSrc("registry")}, wiki, srcs("hr", 2), srcs("pay", 2)), atDue, nil,
			fallback(0, conflict.ReasonPostTTLAuthority)},
		{"the corrections' shared confirmed valid_from is the cutoff",
			marks(wiki, wiki, srcs("hr", 2), srcs("pay", 2)), preTTL, at{"r_03": tLate, "r_04": tLate},
			evidenceAt(1, tLate, conflict.ReasonPreTTLFloor)},
		{"different confirmed times across the distinct identities: the recorded fallback",
			marks(wiki, wiki, srcs("hr", 2), srcs("pay", 2)), preTTL, at{"r_03": tLate, "r_04": tLater},
			fallback(1, conflict.ReasonPreTTLFloor)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps := conflict.IdentityPositions("ent_mark", tt.members, opened)
			if len(ps) != 3 {
				t.Fatalf("%d positions, want 3", len(ps))
			}
			got := conflict.DecideIdentity("ent_mark", conflict.PolicyInput{Positions: ps, Now: tt.now, OpenedAt: opened,
				ReviewDueAt: due, ConfirmedFrom: tt.confirmed, PolicyVersion: policyVersion})
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("DecideIdentity (-want +got):\n%s", d)
			}
		})
	}
	t.Run("one owner on both sides: dismissed", func(t *testing.T) {
		t.Parallel()
		single := []conflict.Position{
			{Key: pk(relationship.Object{EntityID: "ent_mark"}, pos), Members: members(onMark(mem("r_01", ann, dense, src("wiki")), "ent_mark")),
				Owners: owners(ann), Groups: 1},
			{Key: pk(relationship.Object{EntityID: "ent_mark_dense"}, pos), Members: members(onMark(mem("r_02", ann, dense, src("memo")), "ent_mark_dense")),
				Owners: owners(ann), Groups: 1},
		}
		if d := cmp.Diff(dismiss(), conflict.DecideIdentity("ent_mark", conflict.PolicyInput{Positions: single, Now: opened,
			OpenedAt: opened, ReviewDueAt: due, PolicyVersion: policyVersion})); d != "" {
			t.Errorf("DecideIdentity (-want +got):\n%s", d)
		}
	})
}

func TestAllied(t *testing.T) {
	t.Parallel()
	mark, dense, billing := pk(relationship.Object{EntityID: "ent_mark"}, pos), pk(relationship.Object{EntityID: "ent_mark_dense"}, pos),
		pk(relationship.Object{EntityID: "ent_mark_billing"}, pos)
	tests := []struct {
		name string
		kind conflict.Kind
		a, b conflict.PositionKey
		want bool
	}{
		{"an identity case's distinct identities stand together", conflict.KindIdentityCorrection, dense, billing, true},
		{"an identity case's subject stands alone", conflict.KindIdentityCorrection, mark, dense, false},
		{"an identity case's subject with itself", conflict.KindIdentityCorrection, mark, mark, true},
		{"a current-state case's positions are each their own side", conflict.KindCrossProfileCurrentState, pk(objMain, pos), pk(objRelease, pos), false},
		{"a current-state position with itself", conflict.KindCrossProfileCurrentState, pk(objMain, pos), pk(objMain, pos), true},
		{"a current-state position and its negation", conflict.KindCrossProfileCurrentState, pk(objMain, pos), pk(objMain, neg), false},
	}
	for _, tt := range tests {
		if got := conflict.Allied(tt.kind, "ent_mark", tt.a, tt.b); got != tt.want {
			t.Errorf("%s: Allied = %v, want %v", tt.name, got, tt.want)
		}
	}
}

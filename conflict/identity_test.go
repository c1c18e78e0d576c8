package conflict_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
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

func TestDecideIdentity(t *testing.T) {
	t.Parallel()
	dense := relationship.Object{EntityID: "ent_dense"}
	ps := conflict.IdentityPositions("ent_mark", []conflict.Member{
		onMark(mem("r_01", ann, dense, srcs("a", 5)...), "ent_mark"),
		onMark(mem("r_03", bob, dense, src("hr")), "ent_mark_dense")}, opened)
	single := conflict.IdentityPositions("ent_mark", []conflict.Member{
		onMark(mem("r_01", ann, dense, src("wiki")), "ent_mark"),
		onMark(mem("r_02", ann, dense, src("memo")), "ent_mark_dense")}, opened)
	tests := []struct {
		name      string
		positions []conflict.Position
		now       time.Time
		want      conflict.Outcome
	}{
		{"before the deadline, however many groups: kept open", ps, opened.Add(time.Hour), conflict.OutcomeKeepOpen},
		{"at the deadline: overdue, never resolved", ps, due, conflict.OutcomeOverdue},
		{"one owner on both sides: dismissed", single, opened, conflict.OutcomeDismiss},
	}
	for _, tt := range tests {
		d := conflict.DecideIdentity(conflict.PolicyInput{Positions: tt.positions, Now: tt.now, OpenedAt: opened, ReviewDueAt: due})
		if d.Outcome != tt.want || d.Winner != -1 {
			t.Errorf("%s: %s (winner %d), want %s and no winner", tt.name, d.Outcome, d.Winner, tt.want)
		}
	}
}

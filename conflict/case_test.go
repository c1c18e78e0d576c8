package conflict_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// Shared fixtures of the conflict tests: one conflict key (production deploys from one branch), three
// branches, and a case opened at `opened` with a two-week deadline.
var (
	deploysFrom = relationship.Predicate{Key: "deploys_from", Version: 1, Kind: relationship.KindState, Cardinality: relationship.CardinalityOne}
	worksOn     = relationship.Predicate{Key: "works_on", Version: 1, Kind: relationship.KindState, Cardinality: relationship.CardinalityMany}
	deployed    = relationship.Predicate{Key: "deployed", Version: 1, Kind: relationship.KindEvent, Cardinality: relationship.CardinalityOne}

	objMain    = relationship.Object{EntityID: "ent_main"}
	objRelease = relationship.Object{EntityID: "ent_release"}
	objHotfix  = relationship.Object{EntityID: "ent_hotfix"}

	opened = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	due    = opened.Add(14 * 24 * time.Hour)
)

const (
	pos = relationship.PolarityPositive
	neg = relationship.PolarityNegative

	ann identity.ProfileID = "pf_ann"
	bob identity.ProfileID = "pf_bob"
	cat identity.ProfileID = "pf_cat"
	dan identity.ProfileID = "pf_dan"
	eve identity.ProfileID = "pf_eve"
)

// src is an effective support from its own source group: a fragment whose content is unique to it.
func src(label string) evidence.Support {
	return evidence.Support{Group: label, ContentHash: "sha:" + label, Effective: true}
}

// copyOf is an effective support under its own label whose fragment is a copy of original's content.
func copyOf(label, original string) evidence.Support {
	return evidence.Support{Group: label, ContentHash: "sha:" + original, Effective: true}
}

// authSrc is an effective support from an allowed authoritative source group.
func authSrc(label string) evidence.Support {
	s := src(label)
	s.AllowedAuthority = true
	return s
}

// retired is a support that no longer counts: its fragment was retired.
func retired(label string) evidence.Support {
	s := src(label)
	s.Effective = false
	return s
}

// srcs is n independent groups prefix1 … prefixn.
func srcs(prefix string, n int) []evidence.Support {
	out := make([]evidence.Support, n)
	for i := range out {
		out[i] = src(fmt.Sprintf("%s%d", prefix, i+1))
	}
	return out
}

// join concatenates support lists.
func join(lists ...[]evidence.Support) []evidence.Support {
	var out []evidence.Support
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// rel is an active validated_claim relationship of owner on the fixture key, valid from always.
func rel(id relationship.ID, owner identity.ProfileID, obj relationship.Object, pol relationship.Polarity) relationship.Relationship {
	return relationship.Relationship{ID: id, Owner: owner, Subject: "ent_production", PredicateKey: "deploys_from",
		PredicateVersion: 1, Object: obj, Polarity: pol, Status: relationship.StatusActive,
		Tier: relationship.TierValidatedClaim, Version: 1}
}

// mem is a positive member of owner for obj with the given supports.
func mem(id relationship.ID, owner identity.ProfileID, obj relationship.Object, sups ...evidence.Support) conflict.Member {
	return conflict.Member{Relationship: rel(id, owner, obj, pos), Supports: sups}
}

// with returns m after applying f to its relationship.
func with(m conflict.Member, f func(*relationship.Relationship)) conflict.Member {
	f(&m.Relationship)
	return m
}

func ptr(t time.Time) *time.Time { return &t }

func TestMaterial(t *testing.T) {
	t.Parallel()
	now := opened
	base := rel("r1", ann, objMain, pos)
	tests := []struct {
		name string
		f    func(*relationship.Relationship)
		want bool
	}{
		{"active validated_claim, open-ended", func(*relationship.Relationship) {}, true},
		{"active fact", func(r *relationship.Relationship) { r.Tier = relationship.TierFact }, true},
		{"active candidate", func(r *relationship.Relationship) { r.Tier = relationship.TierCandidate }, false},
		{"pending_evidence", func(r *relationship.Relationship) { r.Status = relationship.StatusPendingEvidence }, false},
		{"needs_review", func(r *relationship.Relationship) { r.Status = relationship.StatusNeedsReview }, false},
		{"superseded", func(r *relationship.Relationship) { r.Status = relationship.StatusSuperseded }, false},
		{"retracted", func(r *relationship.Relationship) { r.Status = relationship.StatusRetracted }, false},
		{"rejected", func(r *relationship.Relationship) { r.Status = relationship.StatusRejected }, false},
		{"valid_to in the past", func(r *relationship.Relationship) { r.Validity.To = ptr(now.Add(-time.Hour)) }, false},
		{"valid_to exactly now (interval is half-open)", func(r *relationship.Relationship) { r.Validity.To = ptr(now) }, false},
		{"valid_to just after now", func(r *relationship.Relationship) { r.Validity.To = ptr(now.Add(time.Nanosecond)) }, true},
		{"valid_from in the past", func(r *relationship.Relationship) { r.Validity.From = ptr(now.Add(-time.Hour)) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := base
			tt.f(&r)
			if got := conflict.Material(r, now); got != tt.want {
				t.Errorf("Material = %v, want %v", got, tt.want)
			}
		})
	}
}

func pk(obj relationship.Object, pol relationship.Polarity) conflict.PositionKey {
	return conflict.PositionKey{Object: obj, Polarity: pol}
}

// negated is m denying its object instead of asserting it.
func negated(m conflict.Member) conflict.Member {
	return with(m, func(r *relationship.Relationship) { r.Polarity = neg })
}

func owners(ps ...identity.ProfileID) []identity.ProfileID { return ps }

func members(ms ...conflict.Member) []conflict.Member { return ms }

func TestPositions(t *testing.T) {
	t.Parallel()
	now := opened

	a1 := mem("r_01", ann, objMain, src("wiki"))
	b1 := mem("r_02", bob, objRelease, src("chat"))
	c1 := mem("r_03", cat, objMain, src("runbook"))
	d1 := mem("r_04", dan, objHotfix, src("ticket"))
	retract := func(m conflict.Member) conflict.Member {
		return with(m, func(r *relationship.Relationship) { r.Status = relationship.StatusRetracted })
	}
	tests := []struct {
		name    string
		pred    relationship.Predicate
		members []conflict.Member
		want    []conflict.Position
	}{
		{"no members", deploysFrom, nil, nil},
		{"one member", deploysFrom, members(a1), nil},
		{"agreeing owners form one position and no material disagreement", deploysFrom, members(a1, c1), nil},
		{
			"different objects, both positive", deploysFrom, members(b1, a1),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(a1), Owners: owners(ann), Groups: 1},
				{Key: pk(objRelease, pos), Members: members(b1), Owners: owners(bob), Groups: 1},
			},
		},
		{
			"same object, opposite polarity", deploysFrom, members(a1, negated(c1)),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(a1), Owners: owners(ann), Groups: 1},
				{Key: pk(objMain, neg), Members: members(negated(c1)), Owners: owners(cat), Groups: 1},
			},
		},
		{"cardinality many never conflicts", worksOn, members(a1, b1), nil},
		{"event predicates never conflict", deployed, members(a1, b1), nil},
		{"a different object denied is compatible", deploysFrom, members(a1, negated(b1)), nil},
		{"two denials are compatible", deploysFrom, members(negated(a1), negated(b1)), nil},
		{
			"a position compatible with every other one is not material", deploysFrom,
			members(a1, b1, negated(d1)),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(a1), Owners: owners(ann), Groups: 1},
				{Key: pk(objRelease, pos), Members: members(b1), Owners: owners(bob), Groups: 1},
			},
		},
		{
			"three mutually incompatible positions", deploysFrom, members(d1, b1, a1),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(a1), Owners: owners(ann), Groups: 1},
				{Key: pk(objRelease, pos), Members: members(b1), Owners: owners(bob), Groups: 1},
				{Key: pk(objHotfix, pos), Members: members(d1), Owners: owners(dan), Groups: 1},
			},
		},
		{"the other side retracted", deploysFrom, members(a1, retract(b1)), nil},
		{"the other side only a candidate", deploysFrom,
			members(a1, with(b1, func(r *relationship.Relationship) { r.Tier = relationship.TierCandidate })), nil},
		{"the other side pending evidence", deploysFrom,
			members(a1, with(b1, func(r *relationship.Relationship) { r.Status = relationship.StatusPendingEvidence })), nil},
		{"the other side held for review", deploysFrom,
			members(a1, with(b1, func(r *relationship.Relationship) { r.Status = relationship.StatusNeedsReview })), nil},
		{"the other side ended before now", deploysFrom,
			members(a1, with(b1, func(r *relationship.Relationship) { r.Validity.To = ptr(now.Add(-time.Hour)) })), nil},
		{"the other side ends exactly now", deploysFrom,
			members(a1, with(b1, func(r *relationship.Relationship) { r.Validity.To = ptr(now) })), nil},
		{
			"the other side still valid until later, a fact", deploysFrom,
			members(a1, with(b1, func(r *relationship.Relationship) {
				r.Validity.To, r.Tier = ptr(now.Add(time.Hour)), relationship.TierFact
			})),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(a1), Owners: owners(ann), Groups: 1},
				{Key: pk(objRelease, pos), Members: members(with(b1, func(r *relationship.Relationship) {
					r.Validity.To, r.Tier = ptr(now.Add(time.Hour)), relationship.TierFact
				})), Owners: owners(bob), Groups: 1},
			},
		},
		{
			// The retracted member's owner and supports leave the position: eve's "blog" no longer counts.
			"non-material members leave their position, owner and groups", deploysFrom,
			members(a1, b1, retract(mem("r_00", eve, objRelease, src("blog")))),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(a1), Owners: owners(ann), Groups: 1},
				{Key: pk(objRelease, pos), Members: members(b1), Owners: owners(bob), Groups: 1},
			},
		},
		{
			// Positions by earliest member ID, members by ID, owners sorted, whatever the input order.
			"deterministic order", deploysFrom,
			members(mem("r_09", eve, objRelease, src("s9")), mem("r_05", dan, objMain, src("s5")),
				mem("r_03", cat, objRelease, src("s3")), mem("r_07", ann, objMain, src("s7")),
				mem("r_04", bob, objHotfix, src("s4"))),
			[]conflict.Position{
				{Key: pk(objRelease, pos), Members: members(mem("r_03", cat, objRelease, src("s3")), mem("r_09", eve, objRelease, src("s9"))),
					Owners: owners(cat, eve), Groups: 2},
				{Key: pk(objHotfix, pos), Members: members(mem("r_04", bob, objHotfix, src("s4"))), Owners: owners(bob), Groups: 1},
				{Key: pk(objMain, pos), Members: members(mem("r_05", dan, objMain, src("s5")), mem("r_07", ann, objMain, src("s7"))),
					Owners: owners(ann, dan), Groups: 2},
			},
		},
		{
			"an owner with several members sits in each of their positions", deploysFrom,
			members(a1, mem("r_05", ann, objRelease, src("memo")), b1),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(a1), Owners: owners(ann), Groups: 1},
				{Key: pk(objRelease, pos), Members: members(b1, mem("r_05", ann, objRelease, src("memo"))), Owners: owners(ann, bob), Groups: 2},
			},
		},
		{
			"groups and authority are tallied across the case", deploysFrom,
			members(mem("r_01", ann, objMain, src("wiki"), authSrc("cto")),
				mem("r_02", bob, objRelease, src("chat"), copyOf("chat-mirror", "chat"), retired("old"))),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(mem("r_01", ann, objMain, src("wiki"), authSrc("cto"))), Owners: owners(ann),
					Groups: 2, Authority: true},
				{Key: pk(objRelease, pos), Members: members(mem("r_02", bob, objRelease, src("chat"), copyOf("chat-mirror", "chat"), retired("old"))),
					Owners: owners(bob), Groups: 1},
			},
		},
		{
			// The authoritative group also supports the other side: it counts for neither, and so does
			// its authority.
			"an authoritative group on both sides gives neither authority", deploysFrom,
			members(mem("r_01", ann, objMain, src("wiki"), authSrc("cto")), mem("r_02", bob, objRelease, authSrc("cto"))),
			[]conflict.Position{
				{Key: pk(objMain, pos), Members: members(mem("r_01", ann, objMain, src("wiki"), authSrc("cto"))), Owners: owners(ann), Groups: 1},
				{Key: pk(objRelease, pos), Members: members(mem("r_02", bob, objRelease, authSrc("cto"))), Owners: owners(bob), Groups: 0},
			},
		},
		{
			// DESIGN §7: a position is material when it is incompatible (§6.4) with another material
			// position, and §6.4 incompatibility needs the two to be comparable in time (overlapping
			// validity). main until now+5d and release from now+10d never hold at the same instant.
			"positions never comparable in time are not incompatible", deploysFrom,
			members(with(a1, func(r *relationship.Relationship) { r.Validity.To = ptr(now.Add(5 * 24 * time.Hour)) }),
				with(b1, func(r *relationship.Relationship) { r.Validity.From = ptr(now.Add(10 * 24 * time.Hour)) })),
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := conflict.Positions(tt.pred, tt.members, now)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Positions (-want +got):\n%s", d)
			}
		})
	}
}

func TestTally(t *testing.T) {
	t.Parallel()
	// Labels linked by shared content hashes merge transitively: g1~g2 (hash x), g2~g3 (hash y).
	linked := []evidence.Support{
		{Group: "g1", ContentHash: "x", Effective: true},
		{Group: "g2", ContentHash: "x", Effective: true},
		{Group: "g2", ContentHash: "y", Effective: true},
		{Group: "g3", ContentHash: "y", Effective: true},
	}
	tests := []struct {
		name      string
		supports  [][]evidence.Support // per position, one member each
		groups    []int
		authority []bool
	}{
		{"independent groups", [][]evidence.Support{srcs("g", 3), srcs("h", 2)}, []int{3, 2}, []bool{false, false}},
		{"copies merge transitively", [][]evidence.Support{join(linked, srcs("z", 1)), srcs("h", 1)}, []int{2, 1}, []bool{false, false}},
		{"one revision chain of a source is one group", [][]evidence.Support{{
			{Group: "source:wiki/deploy", ContentHash: "rev1", Effective: true},
			{Group: "source:wiki/deploy", ContentHash: "rev2", Effective: true},
		}, srcs("h", 1)}, []int{1, 1}, []bool{false, false}},
		{"a copy on the other side counts for neither", [][]evidence.Support{srcs("g", 2), {copyOf("paste", "g2")}}, []int{1, 0}, []bool{false, false}},
		{"a transitively linked group on the other side counts for neither",
			[][]evidence.Support{linked[:3], {linked[3]}}, []int{0, 0}, []bool{false, false}},
		{
			// Without the other side, g1 and g2 are two groups; its support under label g2 with g1's
			// content links them, and the merged group supports both positions.
			"a link made by the other side merges and cancels both",
			[][]evidence.Support{{src("g1"), src("g2")}, {copyOf("g2", "g1")}}, []int{0, 0}, []bool{false, false},
		},
		{"retired supports do not count and do not link", [][]evidence.Support{{src("g1"), retired("h1")}, {src("h1")}}, []int{1, 1}, []bool{false, false}},
		{"authority of a counted group", [][]evidence.Support{{authSrc("cto")}, srcs("h", 2)}, []int{1, 2}, []bool{true, false}},
		{"authority of a retired support does not count", [][]evidence.Support{{src("g1"), {Group: "cto", ContentHash: "c", AllowedAuthority: true}}, srcs("h", 1)},
			[]int{1, 1}, []bool{false, false}},
		{"authority of a copied fragment on both sides counts for neither",
			[][]evidence.Support{{authSrc("cto"), src("g1")}, {copyOf("forward", "cto")}}, []int{1, 0}, []bool{false, false}},
		{"three positions, a group on two of them", [][]evidence.Support{{src("s"), src("g1")}, {src("s")}, {src("h1")}}, []int{1, 0, 1}, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps := make([]conflict.Position, len(tt.supports))
			for i, sups := range tt.supports {
				ps[i] = conflict.Position{Members: members(mem(relationship.ID(fmt.Sprintf("r_%d", i)), ann, objMain, sups...))}
			}
			conflict.Tally(ps)
			var groups []int
			var authority []bool
			for _, p := range ps {
				groups, authority = append(groups, p.Groups), append(authority, p.Authority)
			}
			if d := cmp.Diff(tt.groups, groups); d != "" {
				t.Errorf("Groups (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.authority, authority); d != "" {
				t.Errorf("Authority (-want +got):\n%s", d)
			}
		})
	}
}

func TestDisagreement(t *testing.T) {
	t.Parallel()
	p := func(os ...identity.ProfileID) conflict.Position { return conflict.Position{Owners: os} }
	tests := []struct {
		name string
		ps   []conflict.Position
		want bool
	}{
		{"none", nil, false},
		{"one position, two owners", []conflict.Position{p(ann, bob)}, false},
		{"two positions, one owner", []conflict.Position{p(ann), p(ann)}, false},
		{"two positions, two owners", []conflict.Position{p(ann), p(bob)}, true},
		{"an owner on both sides and another", []conflict.Position{p(ann), p(ann, bob)}, true},
		{"three positions, one owner", []conflict.Position{p(ann), p(ann), p(ann)}, false},
	}
	for _, tt := range tests {
		if got := conflict.Disagreement(tt.ps); got != tt.want {
			t.Errorf("%s: Disagreement = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMaintain(t *testing.T) {
	t.Parallel()
	now := opened.Add(3 * 24 * time.Hour)
	a1 := mem("r_01", ann, objMain, src("wiki"))
	b1 := mem("r_02", bob, objRelease, src("chat"))
	b2 := mem("r_03", cat, objRelease, src("ticket"))
	a2 := mem("r_04", dan, objMain, src("runbook"))
	a1Mine := mem("r_05", ann, objRelease, src("memo")) // ann also holds release
	ref := func(m conflict.Member) conflict.MemberRef {
		return conflict.MemberRef{Position: pk(m.Relationship.Object, m.Relationship.Polarity), Relationship: m.Relationship.ID,
			Version: m.Relationship.Version, Owner: m.Relationship.Owner}
	}
	refs := func(ms ...conflict.Member) []conflict.MemberRef {
		var out []conflict.MemberRef
		for _, m := range ms {
			out = append(out, ref(m))
		}
		return out
	}
	live := func(ms ...conflict.Member) *conflict.Live {
		return &conflict.Live{ID: "cf_1", Version: 4, Status: conflict.StatusOpen, PolicyVersion: 2, OpenedAt: opened, ReviewDueAt: due,
			PositionIDs: map[conflict.PositionKey]conflict.PositionID{pk(objMain, pos): "cp_main", pk(objRelease, pos): "cp_release"},
			Members:     refs(ms...)}
	}
	retract := func(m conflict.Member) conflict.Member {
		return with(m, func(r *relationship.Relationship) { r.Status, r.Version = relationship.StatusRetracted, r.Version+1 })
	}
	bumped := func(m conflict.Member) conflict.Member {
		return with(m, func(r *relationship.Relationship) { r.Tier, r.Version = relationship.TierFact, r.Version+1 })
	}
	ps := func(ms ...conflict.Member) []conflict.Position { return conflict.Positions(deploysFrom, ms, now) }

	tests := []struct {
		name    string
		live    *conflict.Live
		members []conflict.Member
		want    conflict.Change
	}{
		{"no case, no disagreement: nothing", nil, members(a1, a2), conflict.Change{}},
		{"no case, one owner on both sides: nothing (same-owner review instead)", nil, members(a1, a1Mine), conflict.Change{}},
		{"no case, no members: nothing", nil, nil, conflict.Change{}},
		{
			"no case, cross-profile disagreement: open", nil, members(b1, a1, b2),
			conflict.Change{Action: conflict.ActionOpen, Positions: ps(a1, b1, b2), Add: refs(a1, b1, b2)},
		},
		{
			"no case, non-material members stay out of the opened case", nil,
			members(a1, b1, with(b2, func(r *relationship.Relationship) { r.Tier = relationship.TierCandidate })),
			conflict.Change{Action: conflict.ActionOpen, Positions: ps(a1, b1), Add: refs(a1, b1)},
		},
		{
			"live case, same membership: no action, positions for the policy", live(a1, b1), members(a1, b1),
			conflict.Change{Positions: ps(a1, b1)},
		},
		{
			"live case, new member: update adds it", live(a1, b1), members(a1, b1, b2),
			conflict.Change{Action: conflict.ActionUpdate, Positions: ps(a1, b1, b2), Add: refs(b2)},
		},
		{
			"live case, new member of another position: update adds it", live(a1, b1), members(a2, a1, b1),
			conflict.Change{Action: conflict.ActionUpdate, Positions: ps(a1, b1, a2), Add: refs(a2)},
		},
		{
			"live case, a member retracted, disagreement remains: update removes it", live(a1, b1, b2), members(a1, b1, retract(b2)),
			conflict.Change{Action: conflict.ActionUpdate, Positions: ps(a1, b1), Remove: refs(b2)},
		},
		{
			"live case, a member's new version: remove the old version, add the new", live(a1, b1), members(a1, bumped(b1)),
			conflict.Change{Action: conflict.ActionUpdate, Positions: ps(a1, bumped(b1)), Add: refs(bumped(b1)), Remove: refs(b1)},
		},
		{
			"live case, one member out and one in", live(a1, b1, b2), members(a1, b1, retract(b2), a2),
			conflict.Change{Action: conflict.ActionUpdate, Positions: ps(a1, b1, a2), Add: refs(a2), Remove: refs(b2)},
		},
		{
			"live case, the other side retracted: dismiss and end every membership", live(a1, b1, b2),
			members(a1, retract(b1), retract(b2)),
			conflict.Change{Action: conflict.ActionDismiss, Remove: refs(a1, b1, b2)},
		},
		{
			"live case, the other side's validity ended: dismiss", live(a1, b1),
			members(a1, with(b1, func(r *relationship.Relationship) { r.Validity.To = ptr(now.Add(-time.Minute)) })),
			conflict.Change{Action: conflict.ActionDismiss, Remove: refs(a1, b1)},
		},
		{
			"live case, only one owner left on both sides: dismiss", live(a1, b1, a1Mine),
			members(a1, retract(b1), a1Mine),
			conflict.Change{Action: conflict.ActionDismiss, Remove: refs(a1, b1, a1Mine)},
		},
		{
			"live case, every member gone: dismiss", live(a1, b1), nil,
			conflict.Change{Action: conflict.ActionDismiss, Remove: refs(a1, b1)},
		},
		{
			"overdue case, same membership: no action", func() *conflict.Live { l := live(a1, b1); l.Status = conflict.StatusOverdue; return l }(),
			members(a1, b1), conflict.Change{Positions: ps(a1, b1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := conflict.Maintain(deploysFrom, tt.live, tt.members, now)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Maintain (-want +got):\n%s", d)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s           conflict.Status
		valid, live bool
	}{
		{conflict.StatusOpen, true, true},
		{conflict.StatusOverdue, true, true},
		{conflict.StatusResolved, true, false},
		{conflict.StatusDismissed, true, false},
		{"closed", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := tt.s.Valid(); got != tt.valid {
			t.Errorf("Status(%q).Valid() = %v, want %v", tt.s, got, tt.valid)
		}
		if got := tt.s.Live(); got != tt.live {
			t.Errorf("Status(%q).Live() = %v, want %v", tt.s, got, tt.live)
		}
	}
}

package conflict

import (
	"slices"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// Outcome is what the nightly review does with a case.
type Outcome string

// Review outcomes.
const (
	OutcomeResolve  Outcome = "resolve"
	OutcomeOverdue  Outcome = "overdue"
	OutcomeKeepOpen Outcome = "keep_open"
	OutcomeDismiss  Outcome = "dismiss"
)

// TimeBasis says where a resolution's cutoff came from.
type TimeBasis string

// Time bases of a cutoff.
const (
	BasisEvidenceTime     TimeBasis = "evidence_time"
	BasisRecordedFallback TimeBasis = "recorded_fallback"
)

// Reason is the code of a policy decision; a resolution's event records it, an overdue mark records
// it after "overdue_".
type Reason string

// Reason codes of policy decisions.
const (
	ReasonNoDisagreement       Reason = "no_material_disagreement"
	ReasonPreTTLFloor          Reason = "pre_ttl_floor_met"
	ReasonPostTTLAuthority     Reason = "post_ttl_unique_authority"
	ReasonPostTTLMajority      Reason = "post_ttl_majority_floor_met"
	ReasonStrongOverride       Reason = "timed_strong_override"
	ReasonNoQualifyingPosition Reason = "no_qualifying_position"
	ReasonSeveralQualify       Reason = "several_positions_qualify"
	ReasonEvidenceTimeRequired Reason = "evidence_time_missing_or_conflicting"
)

// DecideIdentity applies the resolution policy (Decide, unchanged: counting unit, floors, deadline,
// authority, override, cutoff, overdue) to the identity_correction case about entity e, whose
// in.Positions come from IdentityPositions. The policy weighs the case's two sides (Allied): e's
// position — its statements as attributed to the one identity — against the correction that e
// combines several identities, every distinct identity's position together, its groups counted once
// across them. The distinct identities are not alternatives to one another: each corrects other
// statements of e, and together they are one answer to the case's question (the specification's B
// splits Mark into a Mark of Dense-Mem and a Mark of Billing). Weighed one against another, they would
// split that answer's support and a document telling both apart would count for neither.
//
// A resolution's Winner is the first position (in in.Positions' order) of the winning side; every
// position not allied with it loses, whichever side that is. Nothing in it touches an entity
// resolution: the reviewer only closes the losing side's relationships.
func DecideIdentity(e identity.EntityID, in PolicyInput) Decision {
	sides := make([]Position, 2)
	sides[0].Key = PositionKey{Object: relationship.Object{EntityID: e}, Polarity: relationship.PolarityPositive}
	sides[1].Key = PositionKey{Polarity: relationship.PolarityPositive} // every identity but e
	for _, p := range in.Positions {
		side := &sides[1]
		if Allied(KindIdentityCorrection, e, p.Key, sides[0].Key) {
			side = &sides[0]
		}
		side.Members = append(side.Members, p.Members...)
		for _, o := range p.Owners {
			if !slices.Contains(side.Owners, o) {
				side.Owners = append(side.Owners, o)
			}
		}
	}
	sides = slices.DeleteFunc(sides, func(p Position) bool { return len(p.Members) == 0 })
	Tally(sides)
	weighed := in
	weighed.Positions = sides
	d := Decide(weighed)
	if d.Outcome == OutcomeResolve {
		won := sides[d.Winner].Key
		d.Winner = slices.IndexFunc(in.Positions, func(p Position) bool { return Allied(KindIdentityCorrection, e, p.Key, won) })
	}
	return d
}

// PolicyInput is the snapshot the resolution policy decides on. Positions must come from Positions
// (material members only, groups tallied across the case).
type PolicyInput struct {
	Positions   []Position
	Now         time.Time
	OpenedAt    time.Time
	ReviewDueAt time.Time
	// ConfirmedFrom maps a member relationship to its verifier-confirmed valid_from, when one of its
	// accepted supports confirmed it.
	ConfirmedFrom map[relationship.ID]time.Time
	PolicyVersion int
}

// Decision is the policy's verdict on one case.
type Decision struct {
	Outcome Outcome
	// Winner indexes PolicyInput.Positions when Outcome is OutcomeResolve.
	Winner int
	// Cutoff and Basis are set when resolving.
	Cutoff        time.Time
	Basis         TimeBasis
	Reason        Reason
	PolicyVersion int
}

// Decide applies the deterministic resolution policy (DESIGN §8). It never invents a winner: with no
// unique qualifying position the case is kept open before its deadline and overdue at or after it.
func Decide(in PolicyInput) Decision {
	d := Decision{Winner: -1, PolicyVersion: in.PolicyVersion}
	// 1. Positions that do not disagree are dismissed.
	if !Disagreement(in.Positions) {
		d.Outcome, d.Reason = OutcomeDismiss, ReasonNoDisagreement
		return d
	}
	// 2. Every position that meets a floor qualifies, unless authority opposes it.
	f := newFloors(in)
	qualified, timeBlocked := f.qualify()
	// 3. A timed strong override has beaten every opposing authority: the authority no longer qualifies
	// as the unique authoritative position (reaching the deadline only lowers the majority floor).
	if slices.ContainsFunc(qualified, func(c candidate) bool { return c.override }) {
		qualified = slices.DeleteFunc(qualified, func(c candidate) bool { return c.reason == ReasonPostTTLAuthority })
	}
	// 4. Without a unique qualifying position the case stays pending.
	switch len(qualified) {
	case 1:
	case 0:
		d.Reason = ReasonNoQualifyingPosition
		if timeBlocked {
			// Evidence time is required to override authority; recorded_fallback never does.
			d.Reason = ReasonEvidenceTimeRequired
		}
		return pending(d, f.postTTL)
	default:
		d.Reason = ReasonSeveralQualify
		return pending(d, f.postTTL)
	}
	// 5. The unique qualifying position wins, from its cutoff.
	return resolve(d, in, qualified[0])
}

// candidate is a position that qualifies to win a case.
type candidate struct {
	index    int
	reason   Reason
	override bool // qualified only through the timed strong override
}

// floors holds what the policy's floors are measured against: the case's positions, their total
// group count, the number of authoritative positions, and whether the review deadline has passed.
type floors struct {
	in          PolicyInput
	total       int
	authorities int
	postTTL     bool
}

// newFloors measures in's positions for the floors.
func newFloors(in PolicyInput) floors {
	f := floors{in: in, postTTL: !in.Now.Before(in.ReviewDueAt)}
	for _, p := range in.Positions {
		f.total += p.Groups
		if p.Authority {
			f.authorities++
		}
	}
	return f
}

// strong reports whether p meets the strong floor: at least 4 groups and more than 3/4 of them.
func (f floors) strong(p Position) bool { return StrongFloor.Met(p.Groups, f.total) }

// qualify returns the positions that qualify, in order. timeBlocked reports whether a strong
// position facing authority had no single evidence time to override with.
func (f floors) qualify() (qualified []candidate, timeBlocked bool) {
	for i, p := range f.in.Positions {
		c, ok, blocked := f.judge(i, p)
		if blocked {
			timeBlocked = true
		}
		if ok {
			qualified = append(qualified, c)
		}
	}
	return qualified, timeBlocked
}

// judge decides whether position p (index i) qualifies, and why. blocked reports a strong position
// that authority opposes and that has no single evidence time.
func (f floors) judge(i int, p Position) (c candidate, ok, blocked bool) {
	reason, ok := f.floor(p)
	if !ok {
		return candidate{}, false, false
	}
	if f.opposed(i) && reason != ReasonPostTTLAuthority {
		// Authoritative opposition blocks replacement, except by the timed strong override.
		return f.override(i, p)
	}
	return candidate{i, reason, false}, true, false
}

// floor returns the floor p meets, if any: the unique authority after the deadline, the strong floor
// before it, the majority floor after it.
func (f floors) floor(p Position) (Reason, bool) {
	switch {
	case f.postTTL && p.Authority && f.authorities == 1:
		return ReasonPostTTLAuthority, true
	case !f.postTTL && f.strong(p):
		return ReasonPreTTLFloor, true
	case f.postTTL && MajorityFloor.Met(p.Groups, f.total):
		return ReasonPostTTLMajority, true
	}
	return "", false
}

// opposed reports whether another position than i is authoritative.
func (f floors) opposed(i int) bool {
	opposed := false
	for j, q := range f.in.Positions {
		if j != i && q.Authority {
			opposed = true
		}
	}
	return opposed
}

// override decides whether position p (index i), opposed by authority, qualifies through the timed
// strong override. blocked reports a strong position without a single evidence time.
func (f floors) override(i int, p Position) (c candidate, ok, blocked bool) {
	if !f.strong(p) {
		return candidate{}, false, false
	}
	if _, timed := evidenceTime(f.in, i); !timed {
		return candidate{}, false, true
	}
	if !overrides(f.in, p, i) {
		return candidate{}, false, false
	}
	return candidate{i, ReasonStrongOverride, true}, true, false
}

// resolve returns d resolved in favour of w, from its evidence time, else from the case's opening.
func resolve(d Decision, in PolicyInput, w candidate) Decision {
	t, ok := evidenceTime(in, w.index)
	if ok {
		d.Cutoff, d.Basis = t, BasisEvidenceTime
	} else {
		// Only a winner without authority against it gets here (an override has evidence time).
		d.Cutoff, d.Basis = in.OpenedAt, BasisRecordedFallback
	}
	d.Outcome, d.Winner, d.Reason = OutcomeResolve, w.index, w.reason
	return d
}

func pending(d Decision, postTTL bool) Decision {
	d.Outcome = OutcomeKeepOpen
	if postTTL {
		d.Outcome = OutcomeOverdue
	}
	return d
}

// evidenceTime is the confirmed valid_from shared by every counted member of position i that has
// one: missing when none has one, conflicting (false) when they differ.
func evidenceTime(in PolicyInput, i int) (time.Time, bool) {
	var t time.Time
	found := false
	for _, m := range in.Positions[i].Members {
		if counted, _ := CountedMember(in.Positions, i, m); !counted {
			continue
		}
		c, ok := in.ConfirmedFrom[m.Relationship.ID]
		if !ok {
			continue
		}
		if found && !c.Equal(t) {
			return time.Time{}, false
		}
		t, found = c, true
	}
	return t, found
}

// overrides reports whether position p (index i) has verifier-confirmed evidence that it became
// effective after every opposing authoritative position's time (the latest confirmed valid_from among
// that position's authoritative members). An authoritative position without such a time cannot be
// overridden.
func overrides(in PolicyInput, p Position, i int) bool {
	t, ok := evidenceTime(in, i)
	if !ok {
		return false
	}
	for j, q := range in.Positions {
		if j == i || !q.Authority {
			continue
		}
		var latest time.Time
		has := false
		for _, m := range q.Members {
			if _, authority := CountedMember(in.Positions, j, m); !authority {
				continue
			}
			if c, ok := in.ConfirmedFrom[m.Relationship.ID]; ok && (!has || c.After(latest)) {
				latest, has = c, true
			}
		}
		if !has || !t.After(latest) {
			return false
		}
	}
	return true
}

// Floor is a counting floor of the policy: a position qualifies by it with at least Groups counted
// source groups and a share of the case's counted groups strictly greater than Share.
type Floor struct {
	Groups int
	Share  float64
}

// The floors of the resolution policy (DESIGN §8): the strong floor before the review deadline (and
// for the timed override), the majority floor at or after it.
var (
	StrongFloor   = Floor{Groups: 4, Share: 0.75}
	MajorityFloor = Floor{Groups: 2, Share: 0.5}
)

// FloorAt returns the counting floor that applies at now to a case due at reviewDueAt: the strong
// floor before the deadline, the majority floor at or after it.
func FloorAt(now, reviewDueAt time.Time) Floor {
	if now.Before(reviewDueAt) {
		return StrongFloor
	}
	return MajorityFloor
}

// Met reports whether a position with groups of the case's total counted groups meets the floor.
func (f Floor) Met(groups, total int) bool {
	return groups >= f.Groups && total > 0 && float64(groups)/float64(total) > f.Share
}

// Shortfall returns how many more independent source groups a position with groups of the case's
// total would need, all of them its own, to meet the floor (0 when it meets it; -1 for a floor no
// count meets, a share of 1 or more).
func (f Floor) Shortfall(groups, total int) int {
	if f.Share >= 1 {
		return -1
	}
	k := 0
	for !f.Met(groups+k, total+k) {
		k++
	}
	return k
}

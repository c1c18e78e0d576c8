package conflict

import (
	"slices"
	"time"

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
	if !Disagreement(in.Positions) {
		d.Outcome, d.Reason = OutcomeDismiss, ReasonNoDisagreement
		return d
	}
	total := 0
	for _, p := range in.Positions {
		total += p.Groups
	}
	postTTL := !in.Now.Before(in.ReviewDueAt)
	// Every floor checks a group count of at least 2 first, so total is never 0 where share is used.
	share := func(p Position) float64 { return float64(p.Groups) / float64(total) }
	strong := func(p Position) bool { return p.Groups >= 4 && share(p) > 0.75 }
	authorities := 0
	for _, p := range in.Positions {
		if p.Authority {
			authorities++
		}
	}

	type candidate struct {
		index    int
		reason   Reason
		override bool // qualified only through the timed strong override
	}
	var qualified []candidate
	// timeBlocked: a strong position facing authority had no single evidence time to override with.
	timeBlocked := false
	for i, p := range in.Positions {
		opposed := false
		for j, q := range in.Positions {
			if j != i && q.Authority {
				opposed = true
			}
		}
		var reason Reason
		switch {
		case postTTL && p.Authority && authorities == 1:
			reason = ReasonPostTTLAuthority
		case !postTTL && strong(p):
			reason = ReasonPreTTLFloor
		case postTTL && p.Groups >= 2 && share(p) > 0.5:
			reason = ReasonPostTTLMajority
		default:
			continue
		}
		if opposed && reason != ReasonPostTTLAuthority {
			// Authoritative opposition blocks replacement, except by the timed strong override.
			if !strong(p) {
				continue
			}
			if _, timed := evidenceTime(in, i); !timed {
				timeBlocked = true
				continue
			}
			if !overrides(in, p, i) {
				continue
			}
			qualified = append(qualified, candidate{i, ReasonStrongOverride, true})
			continue
		}
		qualified = append(qualified, candidate{i, reason, false})
	}
	// A timed strong override has beaten every opposing authority: the authority no longer qualifies
	// as the unique authoritative position (reaching the deadline only lowers the majority floor).
	if slices.ContainsFunc(qualified, func(c candidate) bool { return c.override }) {
		qualified = slices.DeleteFunc(qualified, func(c candidate) bool { return c.reason == ReasonPostTTLAuthority })
	}
	switch len(qualified) {
	case 1:
	case 0:
		d.Reason = ReasonNoQualifyingPosition
		if timeBlocked {
			// Evidence time is required to override authority; recorded_fallback never does.
			d.Reason = ReasonEvidenceTimeRequired
		}
		return pending(d, postTTL)
	default:
		d.Reason = ReasonSeveralQualify
		return pending(d, postTTL)
	}
	w := qualified[0]
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

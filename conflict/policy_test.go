package conflict_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/relationship"
)

const policyVersion = 7

type evidenceSupport = evidence.Support

// Evidence times (verifier-confirmed valid_from), all before the case opened.
var (
	tEarly  = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	tAuth   = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	tLate   = time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC)
	tLater  = time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)
	tLatest = time.Date(2026, 2, 25, 0, 0, 0, 0, time.UTC)

	preTTL   = opened.Add(24 * time.Hour)
	justPre  = due.Add(-time.Nanosecond)
	atDue    = due
	afterDue = due.Add(24 * time.Hour)
)

func resolve(winner int, cutoff time.Time, basis conflict.TimeBasis, reason conflict.Reason) conflict.Decision {
	return conflict.Decision{Outcome: conflict.OutcomeResolve, Winner: winner, Cutoff: cutoff, Basis: basis, Reason: reason,
		PolicyVersion: policyVersion}
}

func fallback(winner int, reason conflict.Reason) conflict.Decision {
	return resolve(winner, opened, conflict.BasisRecordedFallback, reason)
}

func evidenceAt(winner int, cutoff time.Time, reason conflict.Reason) conflict.Decision {
	return resolve(winner, cutoff, conflict.BasisEvidenceTime, reason)
}

func keepOpen(reason conflict.Reason) conflict.Decision {
	return conflict.Decision{Outcome: conflict.OutcomeKeepOpen, Winner: -1, Reason: reason, PolicyVersion: policyVersion}
}

func overdue(reason conflict.Reason) conflict.Decision {
	return conflict.Decision{Outcome: conflict.OutcomeOverdue, Winner: -1, Reason: reason, PolicyVersion: policyVersion}
}

func dismiss() conflict.Decision {
	return conflict.Decision{Outcome: conflict.OutcomeDismiss, Winner: -1, Reason: conflict.ReasonNoDisagreement,
		PolicyVersion: policyVersion}
}

// tally summarises counted groups per position, "*" marking allowed authority: "4", "1*".
func tally(ps []conflict.Position) []string {
	var out []string
	for _, p := range ps {
		s := fmt.Sprint(p.Groups)
		if p.Authority {
			s += "*"
		}
		out = append(out, s)
	}
	return out
}

func tallies(ts ...string) []string { return ts }

// at records a confirmed valid_from for relationship IDs.
type at map[relationship.ID]time.Time

// The fixture's member IDs order positions: r_a* hold main (position 0), r_b* release (1), r_c* hotfix (2).
func TestDecide(t *testing.T) {
	t.Parallel()
	const (
		preFloor  = conflict.ReasonPreTTLFloor
		majority  = conflict.ReasonPostTTLMajority
		authority = conflict.ReasonPostTTLAuthority
		override  = conflict.ReasonStrongOverride
		none      = conflict.ReasonNoQualifyingPosition
		needsTime = conflict.ReasonEvidenceTimeRequired
	)
	main := func(id relationship.ID, sups ...evidenceSupport) conflict.Member {
		return mem(id, ann, objMain, sups...)
	}
	release := func(id relationship.ID, sups ...evidenceSupport) conflict.Member {
		return mem(id, bob, objRelease, sups...)
	}
	hotfix := func(id relationship.ID, sups ...evidenceSupport) conflict.Member {
		return mem(id, cat, objHotfix, sups...)
	}

	tests := []struct {
		name      string
		members   []conflict.Member
		now       time.Time
		confirmed at
		tally     []string // counted groups per position, checked first so a counting error reads as one
		want      conflict.Decision
	}{
		// Before review_due_at: ≥4 groups AND share >75%.
		{"pre-TTL 4 vs 1 (80%): resolve, recorded_fallback",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", src("h1"))), preTTL, nil,
			tallies("4", "1"), fallback(0, preFloor)},
		{"pre-TTL 4 vs 0 (100% of four): resolve",
			members(main("r_a1", join(srcs("g", 4), srcs("s", 1))...), release("r_b1", src("s1"))), preTTL, nil,
			tallies("4", "0"), fallback(0, preFloor)},
		{"pre-TTL 3 vs 0 (100% of three): keep open, fewer than four groups",
			members(main("r_a1", join(srcs("g", 3), srcs("s", 1))...), release("r_b1", src("s1"))), preTTL, nil,
			tallies("3", "0"), keepOpen(none)},
		{"pre-TTL 3 vs 1 (75%, three groups): keep open",
			members(main("r_a1", srcs("g", 3)...), release("r_b1", src("h1"))), preTTL, nil,
			tallies("3", "1"), keepOpen(none)},
		{"pre-TTL 6 vs 2 (exactly 75%): keep open",
			members(main("r_a1", srcs("g", 6)...), release("r_b1", srcs("h", 2)...)), preTTL, nil,
			tallies("6", "2"), keepOpen(none)},
		{"pre-TTL 7 vs 2 (77.8%): resolve",
			members(main("r_a1", srcs("g", 7)...), release("r_b1", srcs("h", 2)...)), preTTL, nil,
			tallies("7", "2"), fallback(0, preFloor)},
		{"pre-TTL 4 vs 2 (66.7%, four groups): keep open",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", srcs("h", 2)...)), preTTL, nil,
			tallies("4", "2"), keepOpen(none)},
		{"pre-TTL 1 vs 5: the second position wins",
			members(main("r_a1", src("g1")), release("r_b1", srcs("h", 5)...)), preTTL, nil,
			tallies("1", "5"), fallback(1, preFloor)},
		{"pre-TTL three positions 5/1/1 (71.4%): keep open",
			members(main("r_a1", srcs("g", 5)...), release("r_b1", src("h1")), hotfix("r_c1", src("k1"))), preTTL, nil,
			tallies("5", "1", "1"), keepOpen(none)},
		{"pre-TTL three positions 7/1/1 (77.8%): resolve",
			members(main("r_a1", src("k1")), release("r_b1", srcs("h", 7)...), hotfix("r_c1", src("k2"))), preTTL, nil,
			tallies("1", "7", "1"), fallback(1, preFloor)},
		{"pre-TTL 3 vs 2 (majority, not the early floor): keep open",
			members(main("r_a1", srcs("g", 3)...), release("r_b1", srcs("h", 2)...)), preTTL, nil,
			tallies("3", "2"), keepOpen(none)},

		// The deadline: before / at / after review_due_at with the same 3 vs 2.
		{"1ns before due, 3 vs 2: keep open",
			members(main("r_a1", srcs("g", 3)...), release("r_b1", srcs("h", 2)...)), justPre, nil,
			tallies("3", "2"), keepOpen(none)},
		{"at due, 3 vs 2 (60%): resolve by majority",
			members(main("r_a1", srcs("g", 3)...), release("r_b1", srcs("h", 2)...)), atDue, nil,
			tallies("3", "2"), fallback(0, majority)},
		{"after due, 3 vs 2: resolve by majority",
			members(main("r_a1", srcs("g", 3)...), release("r_b1", srcs("h", 2)...)), afterDue, nil,
			tallies("3", "2"), fallback(0, majority)},
		{"1ns before due, 4 vs 1: the early floor",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", src("h1"))), justPre, nil,
			tallies("4", "1"), fallback(0, preFloor)},
		{"at due, 4 vs 1: the majority floor now",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", src("h1"))), atDue, nil,
			tallies("4", "1"), fallback(0, majority)},

		// At or after review_due_at: ≥2 groups AND share >50%.
		{"at due 2 vs 2 (exactly 50%): overdue",
			members(main("r_a1", srcs("g", 2)...), release("r_b1", srcs("h", 2)...)), atDue, nil,
			tallies("2", "2"), overdue(none)},
		{"at due 2 vs 1 (66.7%): resolve",
			members(main("r_a1", srcs("g", 2)...), release("r_b1", src("h1"))), atDue, nil,
			tallies("2", "1"), fallback(0, majority)},
		{"at due 1 vs 0 (100%, one group): overdue, needs two groups",
			members(main("r_a1", src("g1"), src("s1")), release("r_b1", src("s1"))), atDue, nil,
			tallies("1", "0"), overdue(none)},
		{"at due 1 vs 1: overdue",
			members(main("r_a1", src("g1")), release("r_b1", src("h1"))), atDue, nil,
			tallies("1", "1"), overdue(none)},
		{"after due three positions 2/1/1 (exactly 50%): overdue",
			members(main("r_a1", srcs("g", 2)...), release("r_b1", src("h1")), hotfix("r_c1", src("k1"))), afterDue, nil,
			tallies("2", "1", "1"), overdue(none)},
		{"after due three positions 1/1/3 (60%): resolve the third",
			members(main("r_a1", src("g1")), release("r_b1", src("h1")), hotfix("r_c1", srcs("k", 3)...)), afterDue, nil,
			tallies("1", "1", "3"), fallback(2, majority)},
		{"after due, no group counted anywhere: overdue",
			members(main("r_a1", src("s1")), release("r_b1", src("s1"))), afterDue, nil,
			tallies("0", "0"), overdue(none)},

		// Counting: copies, adoptions, revisions, profiles, retired support, groups on both sides.
		{"copies under another label count once: 3 vs 1 pre-TTL stays open",
			members(main("r_a1", join(srcs("g", 3), []evidenceSupport{copyOf("g3-forward", "g3")})...), release("r_b1", src("h1"))), preTTL, nil,
			tallies("3", "1"), keepOpen(none)},
		{"copies held by other owners count once",
			members(main("r_a1", srcs("g", 3)...), mem("r_a2", dan, objMain, copyOf("slack-paste", "g1")), release("r_b1", src("h1"))), preTTL, nil,
			tallies("3", "1"), keepOpen(none)},
		{"an adoption (same label and fragment, another owner) adds no group",
			members(main("r_a1", srcs("g", 3)...), mem("r_a2", dan, objMain, src("g2")), mem("r_a3", eve, objMain, src("g3")),
				release("r_b1", src("h1"))), preTTL, nil,
			tallies("3", "1"), keepOpen(none)},
		{"another owner's new independent group does count",
			members(main("r_a1", srcs("g", 3)...), mem("r_a2", dan, objMain, src("g4")), release("r_b1", src("h1"))), preTTL, nil,
			tallies("4", "1"), fallback(0, preFloor)},
		{"revisions of one source are one group",
			members(main("r_a1", join(srcs("g", 3), []evidenceSupport{
				{Group: "source:wiki/deploy", ContentHash: "rev1", Effective: true},
				{Group: "source:wiki/deploy", ContentHash: "rev2", Effective: true}})...),
				release("r_b1", src("h1"))), preTTL, nil,
			tallies("4", "1"), fallback(0, preFloor)},
		{"profiles are not votes: five owners on one group lose to one owner with two",
			members(main("r_a1", src("g1")), mem("r_a2", cat, objMain, src("g1")), mem("r_a3", dan, objMain, src("g1")),
				mem("r_a4", eve, objMain, src("g1")), release("r_b1", srcs("h", 2)...)), atDue, nil,
			tallies("1", "2"), fallback(1, majority)},
		{"relationship rows are not votes: one owner's rows on one group",
			members(main("r_a1", src("g1")), main("r_a2", src("g1")), main("r_a3", src("g1")), release("r_b1", src("h1"))), atDue, nil,
			tallies("1", "1"), overdue(none)},
		{"retired supports do not count",
			members(main("r_a1", join(srcs("g", 3), []evidenceSupport{retired("g4")})...), release("r_b1", src("h1"))), preTTL, nil,
			tallies("3", "1"), keepOpen(none)},
		{"a group on both sides counts for neither: 4 vs 1 becomes 3 vs 1",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", src("h1"), src("g4"))), preTTL, nil,
			tallies("3", "1"), keepOpen(none)},
		{"a copy on the other side counts for neither: 4 vs 1 becomes 3 vs 1",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", src("h1"), copyOf("quoted", "g4"))), preTTL, nil,
			tallies("3", "1"), keepOpen(none)},
		{"a group on both sides counts for neither: 2 vs 2 after due becomes 2 vs 1",
			members(main("r_a1", srcs("g", 2)...), release("r_b1", src("h1"), src("s1")), mem("r_a2", dan, objMain, src("s1"))), atDue, nil,
			tallies("2", "1"), fallback(0, majority)},

		// Authority.
		{"pre-TTL unique authority alone does not qualify",
			members(main("r_a1", authSrc("cto")), release("r_b1", srcs("h", 3)...)), preTTL, nil,
			tallies("1*", "3"), keepOpen(none)},
		{"at due unique authority resolves although outnumbered 1 vs 3",
			members(main("r_a1", src("h1")), main("r_a2", src("h2")), main("r_a3", src("h3")), release("r_b1", authSrc("cto"))), atDue, nil,
			tallies("3", "1*"), fallback(1, authority)},
		{"at due unique authority with a confirmed time: evidence_time",
			members(main("r_a1", srcs("h", 3)...), release("r_b1", authSrc("cto"))), atDue, at{"r_b1": tAuth},
			tallies("3", "1*"), evidenceAt(1, tAuth, authority)},
		{"at due unique authority that also has the majority: the authority reason",
			members(main("r_a1", authSrc("cto"), src("g1")), release("r_b1", src("h1"))), atDue, nil,
			tallies("2*", "1"), fallback(0, authority)},
		{"at due authority on both sides blocks a 3 vs 1 majority",
			members(main("r_a1", authSrc("cto"), src("g1"), src("g2")), release("r_b1", authSrc("ops-lead"))), atDue, nil,
			tallies("3*", "1*"), overdue(none)},
		{"at due authority on both sides, 1 vs 1: overdue",
			members(main("r_a1", authSrc("cto")), release("r_b1", authSrc("ops-lead"))), atDue, nil,
			tallies("1*", "1*"), overdue(none)},
		{"pre-TTL authority on the strong side itself does not block it",
			members(main("r_a1", authSrc("cto"), src("g1"), src("g2"), src("g3")), release("r_b1", src("h1"))), preTTL, nil,
			tallies("4*", "1"), fallback(0, preFloor)},
		{"at due an authoritative group on both sides gives neither authority: majority decides",
			members(main("r_a1", authSrc("cto"), src("g1")), release("r_b1", authSrc("cto"), src("h1"), src("h2"))), atDue, nil,
			tallies("1", "2"), fallback(1, majority)},
		{"at due a copied authoritative fragment on the other side gives neither authority",
			members(main("r_a1", authSrc("cto"), src("g1")), release("r_b1", copyOf("forward", "cto"), src("h1"), src("h2"))), atDue, nil,
			tallies("1", "2"), fallback(1, majority)},
		{"at due three positions, authority on one: it resolves",
			members(main("r_a1", srcs("g", 2)...), release("r_b1", src("h1")), hotfix("r_c1", authSrc("cto"))), atDue, nil,
			tallies("2", "1", "1*"), fallback(2, authority)},

		// Authoritative opposition and the timed strong override.
		{"pre-TTL strong 4 vs 1 against authority with a later confirmed time: timed override",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), preTTL, at{"r_a1": tLate, "r_b1": tAuth},
			tallies("4", "1*"), evidenceAt(0, tLate, override)},
		{"pre-TTL strong against authority without evidence time (recorded_fallback never overrides): keep open",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), preTTL, at{"r_b1": tAuth},
			tallies("4", "1*"), keepOpen(needsTime)},
		{"pre-TTL strong against authority with conflicting winner times: keep open",
			members(main("r_a1", srcs("g", 2)...), mem("r_a2", dan, objMain, srcs("k", 2)...), release("r_b1", authSrc("cto"))), preTTL,
			at{"r_a1": tLate, "r_a2": tLater, "r_b1": tAuth},
			tallies("4", "1*"), keepOpen(needsTime)},
		{"pre-TTL override with a time equal to the authority's: keep open",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), preTTL, at{"r_a1": tAuth, "r_b1": tAuth},
			tallies("4", "1*"), keepOpen(none)},
		{"pre-TTL override with an earlier time: keep open",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), preTTL, at{"r_a1": tEarly, "r_b1": tAuth},
			tallies("4", "1*"), keepOpen(none)},
		{"pre-TTL authority without a confirmed time cannot be overridden",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), preTTL, at{"r_a1": tLate},
			tallies("4", "1*"), keepOpen(none)},
		{"pre-TTL authority's non-authoritative member's time does not make it overridable",
			members(main("r_a1", srcs("g", 8)...), release("r_b1", authSrc("cto")), mem("r_b2", cat, objRelease, src("h1"))), preTTL,
			at{"r_a1": tLate, "r_b2": tEarly},
			tallies("8", "2*"), keepOpen(none)},
		{"pre-TTL override must beat the latest authoritative member: not later",
			members(main("r_a1", srcs("g", 8)...), release("r_b1", authSrc("cto")), mem("r_b2", cat, objRelease, authSrc("ops-lead"))), preTTL,
			at{"r_a1": tLate, "r_b1": tAuth, "r_b2": tLater},
			tallies("8", "2*"), keepOpen(none)},
		{"pre-TTL override must beat the latest authoritative member: later",
			members(main("r_a1", srcs("g", 8)...), release("r_b1", authSrc("cto")), mem("r_b2", cat, objRelease, authSrc("ops-lead"))), preTTL,
			at{"r_a1": tLatest, "r_b1": tAuth, "r_b2": tLater},
			tallies("8", "2*"), evidenceAt(0, tLatest, override)},
		{"pre-TTL an authoritative member without a time beside one with a time: the timed one bounds",
			members(main("r_a1", srcs("g", 8)...), release("r_b1", authSrc("cto")), mem("r_b2", cat, objRelease, authSrc("ops-lead"))), preTTL,
			at{"r_a1": tLate, "r_b2": tAuth},
			tallies("8", "2*"), evidenceAt(0, tLate, override)},
		{"pre-TTL override at exactly 75% (6 vs 2) with a later time: keep open",
			members(main("r_a1", srcs("g", 6)...), release("r_b1", authSrc("cto"), src("h1"))), preTTL, at{"r_a1": tLate, "r_b1": tAuth},
			tallies("6", "2*"), keepOpen(none)},
		{"pre-TTL override just over 75% (7 vs 2) with a later time: timed override",
			members(main("r_a1", srcs("g", 7)...), release("r_b1", authSrc("cto"), src("h1"))), preTTL, at{"r_a1": tLate, "r_b1": tAuth},
			tallies("7", "2*"), evidenceAt(0, tLate, override)},
		{"pre-TTL not strong (3 vs 1) against authority even with later time: keep open",
			members(main("r_a1", srcs("g", 3)...), release("r_b1", authSrc("cto"))), preTTL, at{"r_a1": tLate, "r_b1": tAuth},
			tallies("3", "1*"), keepOpen(none)},
		{"at due strong against unique authority without evidence time: the authority resolves",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), atDue, at{"r_b1": tAuth},
			tallies("4", "1*"), evidenceAt(1, tAuth, authority)},
		{"at due majority 3 vs 1 against unique authority: the authority resolves",
			members(main("r_a1", srcs("g", 3)...), release("r_b1", authSrc("cto"))), atDue, at{"r_a1": tLate},
			tallies("3", "1*"), fallback(1, authority)},
		{"at due authority on both sides, strong without evidence time (recorded_fallback never overrides): overdue",
			members(main("r_a1", authSrc("cto"), src("g1"), src("g2"), src("g3"), src("g4")), release("r_b1", authSrc("ops-lead"))), atDue,
			at{"r_b1": tAuth},
			tallies("5*", "1*"), overdue(needsTime)},
		{"at due authority on both sides, strong with a later time: timed override",
			members(main("r_a1", authSrc("cto"), src("g1"), src("g2"), src("g3"), src("g4")), release("r_b1", authSrc("ops-lead"))), atDue,
			at{"r_a1": tLate, "r_b1": tAuth},
			tallies("5*", "1*"), evidenceAt(0, tLate, override)},
		{"after due authority on both sides, majority 2 vs 1 with later time but not strong: overdue",
			members(main("r_a1", authSrc("cto"), src("g1")), release("r_b1", authSrc("ops-lead"))), afterDue,
			at{"r_a1": tLate, "r_b1": tAuth},
			tallies("2*", "1*"), overdue(none)},
		{
			// DESIGN §8 calls the overridden authority "the losing authoritative position", and spec
			// "Nightly Conflict Review": reaching the deadline "only enables the lower automatic
			// threshold". The same snapshot resolves by override one nanosecond before the deadline.
			"at due strong 4 vs 1 with a later time overrides the unique authority, as before the deadline",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), atDue, at{"r_a1": tLate, "r_b1": tAuth},
			tallies("4", "1*"), evidenceAt(0, tLate, override)},
		{"1ns before due strong 4 vs 1 with a later time overrides the unique authority",
			members(main("r_a1", srcs("g", 4)...), release("r_b1", authSrc("cto"))), justPre, at{"r_a1": tLate, "r_b1": tAuth},
			tallies("4", "1*"), evidenceAt(0, tLate, override)},
		{
			// r_b2's authority comes from "shared", a group on both sides that counts for neither
			// (DESIGN §8); the position's counted authority is r_b1's, which has no confirmed time, so
			// "without one, the override is impossible".
			"pre-TTL an uncounted authoritative member's time does not make the authority overridable",
			members(main("r_a1", join(srcs("g", 4), []evidenceSupport{src("shared")})...), release("r_b1", authSrc("cto")),
				mem("r_b2", cat, objRelease, authSrc("shared"))), preTTL,
			at{"r_a1": tLate, "r_b2": tEarly},
			tallies("4", "1*"), keepOpen(none)},

		// Cutoff.
		{"pre-TTL members agree on the confirmed time, one has none: evidence_time",
			members(main("r_a1", srcs("g", 2)...), mem("r_a2", dan, objMain, srcs("k", 2)...), mem("r_a3", eve, objMain, src("e1")),
				release("r_b1", src("h1"))), preTTL, at{"r_a1": tLate, "r_a3": tLate},
			tallies("5", "1"), evidenceAt(0, tLate, preFloor)},
		{"pre-TTL members with different confirmed times, no authority: recorded_fallback",
			members(main("r_a1", srcs("g", 2)...), mem("r_a2", dan, objMain, srcs("k", 2)...), release("r_b1", src("h1"))), preTTL,
			at{"r_a1": tLate, "r_a2": tLater},
			tallies("4", "1"), fallback(0, preFloor)},
		{"at due majority with a confirmed time: evidence_time",
			members(main("r_a1", srcs("g", 2)...), release("r_b1", src("h1"))), atDue, at{"r_a1": tEarly},
			tallies("2", "1"), evidenceAt(0, tEarly, majority)},
		{"at due the loser's confirmed time does not set the cutoff",
			members(main("r_a1", srcs("g", 2)...), release("r_b1", src("h1"))), atDue, at{"r_b1": tEarly},
			tallies("2", "1"), fallback(0, majority)},
		{
			// DESIGN §8: the cutoff is the confirmed valid_from "shared by all of its counted members
			// that have one". r_a2's only support is "shared", a group on both sides that counts for
			// neither, so r_a2 is not a counted member and its time does not make r_a1's conflicting.
			"at due a member without counted support does not make the evidence time conflicting",
			members(main("r_a1", srcs("g", 2)...), mem("r_a2", dan, objMain, src("shared")), release("r_b1", src("h1"), src("shared"))), atDue,
			at{"r_a1": tLate, "r_a2": tEarly},
			tallies("2", "1"), evidenceAt(0, tLate, majority)},

		// Dismissal: fewer than two material positions or a single owner.
		{"one owner on both sides: dismiss",
			members(main("r_a1", srcs("g", 4)...), mem("r_b1", ann, objRelease, src("h1"))), atDue, nil,
			tallies("4", "1"), dismiss()},
		{"one material position: dismiss",
			members(main("r_a1", srcs("g", 4)...), with(release("r_b1", src("h1")), func(r *relationship.Relationship) {
				r.Status = relationship.StatusRetracted
			})), atDue, nil,
			nil, dismiss()},
		{"no members: dismiss", nil, preTTL, nil, nil, dismiss()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ms := make([]conflict.Member, len(tt.members))
			for i, m := range tt.members {
				if c, ok := tt.confirmed[m.Relationship.ID]; ok {
					m.Relationship.Validity.From = ptr(c) // the confirmed bound is the relationship's valid_from
				}
				ms[i] = m
			}
			ps := conflict.Positions(deploysFrom, ms, tt.now)
			if d := cmp.Diff(tt.tally, tally(ps)); d != "" {
				t.Fatalf("counted groups (-want +got):\n%s", d)
			}
			got := conflict.Decide(conflict.PolicyInput{Positions: ps, Now: tt.now, OpenedAt: opened, ReviewDueAt: due,
				ConfirmedFrom: tt.confirmed, PolicyVersion: policyVersion})
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Decide (-want +got):\n%s", d)
			}
		})
	}
}

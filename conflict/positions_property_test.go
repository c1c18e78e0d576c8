package conflict_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// pairwisePositions is conflict.Positions as it was before positions were grouped once (issue 21):
// every position compared with every other, member by member. It is the oracle of
// TestPositionsGroupedMatchPairwise.
func pairwisePositions(pred relationship.Predicate, members []conflict.Member, now time.Time) []conflict.Position {
	byKey := map[conflict.PositionKey]*conflict.Position{}
	var order []conflict.PositionKey
	for _, m := range members {
		if !conflict.Material(m.Relationship, now) {
			continue
		}
		k := conflict.PositionKey{Object: m.Relationship.Object, Polarity: m.Relationship.Polarity}
		p, ok := byKey[k]
		if !ok {
			p = &conflict.Position{Key: k}
			byKey[k] = p
			order = append(order, k)
		}
		p.Members = append(p.Members, m)
		if !slices.Contains(p.Owners, m.Relationship.Owner) {
			p.Owners = append(p.Owners, m.Relationship.Owner)
		}
	}
	incompatible := func(a, b *conflict.Position) bool {
		for _, x := range a.Members {
			for _, y := range b.Members {
				rx, ry := x.Relationship, y.Relationship
				if relationship.Incompatible(pred, rx.Object, rx.Polarity, rx.Validity, ry.Object, ry.Polarity, ry.Validity) {
					return true
				}
			}
		}
		return false
	}
	var out []conflict.Position
	for _, k := range order {
		for _, other := range order {
			if other != k && incompatible(byKey[k], byKey[other]) {
				out = append(out, *byKey[k])
				break
			}
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Members, func(a, b conflict.Member) int { return cmp.Compare(a.Relationship.ID, b.Relationship.ID) })
		slices.Sort(out[i].Owners)
	}
	slices.SortFunc(out, func(a, b conflict.Position) int {
		return cmp.Compare(a.Members[0].Relationship.ID, b.Members[0].Relationship.ID)
	})
	conflict.Tally(out)
	return out
}

// TestPositionsGroupedMatchPairwise: on random keys — few and many objects, both polarities, dated,
// open-ended, empty and touching validities, statuses and tiers that are not material, every kind of
// predicate — Positions keeps exactly the positions, members, owners and counts the pairwise
// comparison kept.
func TestPositionsGroupedMatchPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 143))
	preds := []relationship.Predicate{deploysFrom, worksOn, deployed}
	owners := []identity.ProfileID{ann, bob, cat, dan, eve}
	day := func(d int) *time.Time { t := opened.AddDate(0, 0, d); return &t }
	for run := range 3000 {
		pred := preds[rng.IntN(len(preds))]
		if run%2 == 0 {
			pred = deploysFrom // most runs on the key that has positions
		}
		objects := 1 + rng.IntN(6)
		n := rng.IntN(14)
		var members []conflict.Member
		for i := range n {
			r := rel(relationship.ID(fmt.Sprintf("rel_%03d", i)), owners[rng.IntN(len(owners))],
				relationship.Object{EntityID: identity.EntityID(fmt.Sprintf("ent_%d", rng.IntN(objects)))}, pos)
			if rng.IntN(3) == 0 {
				r.Polarity = neg
			}
			if rng.IntN(4) > 0 {
				r.Validity.From = day(rng.IntN(20) - 10)
			}
			if rng.IntN(3) > 0 {
				from := -12
				if r.Validity.From != nil {
					from = int(r.Validity.From.Sub(opened).Hours() / 24)
				}
				r.Validity.To = day(from + rng.IntN(8)) // empty when the same day as valid_from
			}
			switch rng.IntN(10) {
			case 0:
				r.Status = relationship.StatusSuperseded
			case 1:
				r.Tier = relationship.TierCandidate
			}
			members = append(members, conflict.Member{Relationship: r, Supports: srcs(fmt.Sprintf("g%d_", rng.IntN(4)), 1+rng.IntN(2))})
		}
		now := opened.AddDate(0, 0, rng.IntN(6)-3)
		want, got := pairwisePositions(pred, members, now), conflict.Positions(pred, members, now)
		if d := gocmp.Diff(want, got); d != "" {
			t.Fatalf("run %d (%s, %d members): positions (-pairwise +grouped):\n%s", run, pred.Key, n, d)
		}
	}
}

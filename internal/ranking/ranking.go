// Package ranking is Recall's ranking rule, pure: reciprocal rank fusion of the search branches,
// the deterministic boosts, and the tie-break. It takes values and returns an order; it reads no
// database and no clock.
package ranking

import (
	"cmp"
	"slices"
	"time"

	"github.com/densemem/densemem/relationship"
)

// Ranking constants (DESIGN §11).
const (
	// K is the reciprocal-rank-fusion constant: a branch's rank r (from 1) contributes 1/(K+r).
	K = 60
	// FactBoost multiplies by 1+FactBoost the score of a relationship whose tier is fact.
	FactBoost = 0.1
	// AuthorityBoost multiplies by 1+AuthorityBoost (added to FactBoost) the score of a relationship
	// with evidence of allowed authority.
	AuthorityBoost = 0.05
)

// Fuse returns the fused score of every relationship found by the branches, each branch a list in
// rank order (best first): the sum over the branches of 1/(K+rank).
func Fuse(branches ...[]relationship.ID) map[relationship.ID]float64 {
	fused := map[relationship.ID]float64{}
	for _, branch := range branches {
		for i, id := range branch {
			fused[id] += 1 / float64(K+i+1)
		}
	}
	return fused
}

// Candidate is one fused relationship as the boosts and the tie-break see it.
type Candidate struct {
	ID    relationship.ID
	Fused float64
	// Fact is true when its tier, as the view records it, is fact.
	Fact bool
	// Authority is true when some of its evidence carries allowed authority.
	Authority bool
	// CreatedAt breaks ties: the earlier-created relationship ranks first, then the smaller ID.
	CreatedAt time.Time
}

// Ranked is a candidate's place in the order with its boosted score.
type Ranked struct {
	ID    relationship.ID
	Score float64
}

// Score is a candidate's boosted score: its fused score times 1, plus FactBoost for a fact, plus
// AuthorityBoost for allowed authority.
func Score(c Candidate) float64 {
	boost := 1.0
	if c.Fact {
		boost += FactBoost
	}
	if c.Authority {
		boost += AuthorityBoost
	}
	return c.Fused * boost
}

// Rank orders the candidates by boosted score, highest first, ties by earlier creation and then by
// ID, and returns at most limit of them.
func Rank(cands []Candidate, limit int) []Ranked {
	order := slices.Clone(cands)
	slices.SortFunc(order, func(a, b Candidate) int {
		if c := cmp.Compare(Score(b), Score(a)); c != 0 {
			return c
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(order) > limit {
		order = order[:max(limit, 0)]
	}
	out := make([]Ranked, len(order))
	for i, c := range order {
		out[i] = Ranked{ID: c.ID, Score: Score(c)}
	}
	return out
}

package densemem

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ranking"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Recall defaults and bounds.
const (
	DefaultRecallLimit = 10
	MaxRecallLimit     = 50
	// MaxExpandEntities bounds expand_from_entity_ids.
	MaxExpandEntities = 50
	// RRFK is the reciprocal-rank-fusion constant: a branch's rank r contributes 1/(RRFK+r).
	RRFK = ranking.K
)

// Ranking branches a Recall may run.
const (
	BranchFullText   = "fulltext"
	BranchEntityName = "entity_name"
)

// RecallRequest asks what the team knows. Query and/or ExpandFromEntityIDs select; ValidAt and
// KnownAt move the view in world time and in recorded time, and combine.
type RecallRequest struct {
	// Query is free text (up to 512 characters) for full-text search over evidence, entity names
	// and predicate phrases, and for exact entity-name matches.
	Query string `json:"query,omitempty"`
	// ExpandFromEntityIDs adds the relationships of these entities.
	ExpandFromEntityIDs []EntityID `json:"expand_from_entity_ids,omitempty"`
	// ValidAt returns what was true in the world at that instant (active or superseded relationships
	// whose validity contains it). Each result's TrueAtValidAt says so, and its Current says whether
	// it is also current: a relationship superseded since was true then but is not current.
	ValidAt *time.Time `json:"valid_at,omitempty"`
	// KnownAt returns what the system had recorded at that instant; nothing recorded later leaks.
	KnownAt *time.Time `json:"known_at,omitempty"`
	// Limit bounds the results (default 10, at most 50).
	Limit int `json:"limit,omitempty"`
	// Predicate restricts results to one predicate (key or alias).
	Predicate string `json:"predicate,omitempty"`
}

// RecallResponse is what Recall found.
type RecallResponse struct {
	Results []RecallResult `json:"results"`
	// Conflicts lists, once each, the live team conflict cases of the results, with every material
	// position and the question to ask.
	Conflicts []RecallConflict `json:"conflicts"`
	// Branches names the ranking branches that ran.
	Branches []string `json:"branches"`
	// QueryTermsDropped counts the query's words past Limits.MaxQueryTerms that full-text search
	// left out.
	QueryTermsDropped int `json:"query_terms_dropped,omitempty"`
	// CandidatesTruncated reports that a source of candidates matched more rows than ranking saw
	// (3 × Limit per source, widened up to Limits.MaxRecallHits when filters rejected too many): the
	// ranking saw the first of them — a named entity's relationships in creation order, text hits
	// best first by their driving word (for a single word, its best matches) — or, for an AND of
	// words each in many fragments, the matches among the postings a search may read (decision 139).
	// A narrower query finds the rest.
	CandidatesTruncated bool       `json:"candidates_truncated,omitempty"`
	ValidAt             *time.Time `json:"valid_at,omitempty"`
	KnownAt             *time.Time `json:"known_at,omitempty"`
}

// RecallResult is one relationship with the evidence that supports it in the requested window.
//
// A result says two different things, in two different fields. TrueAtValidAt (set only when the
// request has ValidAt) says the relationship held in the world at ValidAt: a valid_at recall returns
// exactly those, so it is always true there. Current says whether the relationship is the team's
// active belief and true in the world at the view's known instant (KnownAt, or now without it). A
// superseded relationship that a valid_at recall returns because it was true then has
// TrueAtValidAt true and Current false; only Current true means "is current". Both are read at the
// view's known instant: with KnownAt, "current" is current as the system had recorded it then.
type RecallResult struct {
	// Relationship is the relationship as recorded at the view's known instant: Status, Tier,
	// Version and ValidTo are those of its last transition recorded at or before KnownAt (its latest
	// transition without KnownAt); the other fields never change. They are never its state at ValidAt:
	// a relationship superseded after ValidAt shows status superseded and the valid_to its
	// supersession gave it.
	Relationship RelationshipSummary `json:"relationship"`
	// ValidDuring is the relationship's validity, the world-time interval in which it holds, as
	// recorded at the view's known instant (the same instants as Relationship.ValidFrom and ValidTo):
	// To is when it stopped, or stops, being true, for a superseded relationship the valid_from of
	// what superseded it. A null From means since always, a null To until further notice.
	ValidDuring ValidityInterval `json:"valid_during"`
	// Current reports that, at the view's known instant, the relationship is active and ValidDuring
	// contains that instant: it is the team's current belief and true now (or, with KnownAt, was
	// both as recorded then). False for a superseded relationship returned because it was true at
	// ValidAt, and for an active one whose validity has not started yet (the current view still
	// returns those: decision 23).
	Current bool `json:"current"`
	// TrueAtValidAt is set only when the request has ValidAt, and reports that the relationship held
	// in the world at ValidAt (active or superseded at the view's known instant, ValidDuring containing
	// ValidAt). It says nothing about now: read Current for that.
	TrueAtValidAt *bool   `json:"true_at_valid_at,omitempty"`
	Score         float64 `json:"score"`
	// Evidence is the relationship's effective evidence in the view, its first
	// Limits.MaxRecallExcerpts supports in Trace's order (recorded time, then IDs).
	Evidence []EvidenceExcerpt `json:"evidence"`
	// EvidenceOmitted counts the effective supports past Evidence's last (0 when Evidence holds all).
	EvidenceOmitted int `json:"evidence_omitted,omitempty"`
	// EvidenceNextAfter, set when EvidenceOmitted is, is the cursor of Trace's evidence list after
	// Evidence's last entry: Trace with After[TraceListEvidence] set to it reads the rest, a page at a
	// time (retired supports included, marked so).
	EvidenceNextAfter string `json:"evidence_next_after,omitempty"`
	// ConflictID names the live case this relationship is a member of.
	ConflictID string `json:"conflict_id,omitempty"`
	// ResolvedConflict is set when a resolved case preferred this relationship's position (or, for an
	// identity_correction case, a position on its side: the distinct identities win together).
	ResolvedConflict *ResolvedConflictRef `json:"resolved_conflict,omitempty"`
}

// ValidityInterval is a world-time interval [From, To): a null From means since always, a null To
// until further notice.
type ValidityInterval struct {
	From *time.Time `json:"from"`
	To   *time.Time `json:"to"`
}

// EvidenceExcerpt is one cited span of a supporting fragment: at most evidence.MaxExcerptBytes (600)
// bytes of it, cut before a whole character (preferably after a word), never inside one.
type EvidenceExcerpt struct {
	FragmentID FragmentID `json:"fragment_id"`
	// Start and End are the cited span's byte offsets in the fragment.
	Start   int    `json:"start"`
	End     int    `json:"end"`
	Excerpt string `json:"excerpt"`
	// ExcerptTruncated says the excerpt is shorter than the cited span; Trace shows all of it.
	ExcerptTruncated bool `json:"excerpt_truncated,omitempty"`
	// Erased reports that privacy erasure (Client.Erase) redacted the fragment's content: Excerpt is
	// empty. The tombstone (hash, length, erasure) is in the erasure's result.
	Erased          bool                `json:"erased,omitempty"`
	SourceType      evidence.SourceType `json:"source_type"`
	Authority       evidence.Authority  `json:"authority"`
	SourceGroup     string              `json:"source_group"`
	AuthorProfileID ProfileID           `json:"author_profile_id"`
}

// RecallConflict is a team conflict case as a reader must see it.
type RecallConflict struct {
	ConflictID string `json:"conflict_id"`
	// Kind is cross_profile_current_state, or identity_correction: relationships of another
	// profile on an entity the caller's evidence showed to combine several identities, corrected by
	// relationships on the distinct entities (Subject is the combined entity; Predicate and Scope are
	// empty; each position is one identity).
	Kind        string           `json:"kind"`
	Version     int              `json:"version"`
	Status      string           `json:"status"`
	ReviewDueAt time.Time        `json:"review_due_at"`
	Subject     EntityRefView    `json:"subject"`
	Predicate   string           `json:"predicate"`
	Scope       string           `json:"scope"`
	Positions   []RecallPosition `json:"positions"`
	// Question names the subject, predicate, scope and alternatives, and how to answer. Only a live
	// (open or overdue) case has one.
	Question string `json:"question,omitempty"`
}

// RecallPosition is one material alternative of a case.
type RecallPosition struct {
	PositionID string `json:"position_id"`
	// Object is the position's object; in an identity_correction case, the entity its members are
	// stated about.
	Object              ObjectView        `json:"object"`
	Polarity            Polarity          `json:"polarity"`
	RelationshipIDs     []RelationshipID  `json:"relationship_ids"`
	OwnerProfileIDs     []ProfileID       `json:"owner_profile_ids"`
	CountedSourceGroups int               `json:"counted_source_groups"`
	Evidence            []EvidenceExcerpt `json:"evidence"`
}

// ResolvedConflictRef is the compact reference to a resolved case on a preferred result.
type ResolvedConflictRef struct {
	ConflictID          string     `json:"conflict_id"`
	Version             int        `json:"version"`
	ResolvedAt          *time.Time `json:"resolved_at,omitempty"`
	EffectiveAt         *time.Time `json:"effective_at,omitempty"`
	EffectiveTimeBasis  string     `json:"effective_time_basis,omitempty"`
	PreferredPositionID string     `json:"preferred_position_id"`
}

// Recall returns the team's relationships matching the request, ranked by reciprocal rank fusion of
// a full-text branch and an entity-name branch, with their evidence and the team conflict cases they
// belong to. Filters (team, time, status) apply inside each branch before its limit.
//
// Errors: *ValidationError, ErrForbidden (read scope).
func (c *Client) Recall(ctx context.Context, p Principal, req RecallRequest) (*RecallResponse, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate the whole request.
	limit, err := validateRecall(&req, c.cfg.Limits)
	if err != nil {
		return nil, err
	}
	// 2. Authorise a read of the team: a host's now; a profile's with the search (step 4), which
	// loads it in the same round trip, before any candidate is used.
	if err := checkPrincipal(p, identity.ScopeRead); err != nil {
		return nil, err
	}
	search := store.RecallSearchParams{Team: p.TeamID, ExpandFrom: req.ExpandFromEntityIDs,
		MaxHits: c.cfg.Limits.MaxRecallHits, PerBranch: min(3*limit, 150)}
	if p.Host {
		pr, err := c.authorize(ctx, p, identity.ScopeRead)
		if err != nil {
			return nil, err
		}
		search.Authoritative = pr.Policy.AuthoritativeProfiles
	} else {
		search.Principal = &store.PrincipalLoadParams{Team: p.TeamID, Profile: p.ProfileID}
	}
	// 3. Fix the view: its instants and its predicate.
	v, err := c.recallView(ctx, p, req)
	if err != nil {
		return nil, err
	}
	out := &RecallResponse{Results: []RecallResult{}, Conflicts: []RecallConflict{}, Branches: v.branches,
		ValidAt: v.validAt, KnownAt: v.knownAt}
	// 4. Search both branches, filtered by team, time and status inside each.
	query, dropped := limitTerms(req.Query, c.cfg.Limits.MaxQueryTerms)
	out.QueryTermsDropped = dropped
	search.Query, search.Names, search.At, search.ValidAt, search.KnownAt, search.PredicateKey =
		query, v.names, v.at, v.validAt, v.knownAt, v.predicate
	found, err := c.store.RecallSearch(ctx, search)
	if search.Principal != nil {
		if err := checkLoaded(found.Principal, err, p, identity.ScopeRead); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	out.CandidatesTruncated = found.HitsTruncated
	// 5. Fuse the branches and rank: boosts, then the tie-break, then the limit. The search says
	// what the boosts need, so only the results are read in full.
	state := rankedState(found)
	ranked := ranking.Rank(candidates(ranking.Fuse(rankedIDs(found.FullText), rankedIDs(found.EntityName)), state), limit)
	// 6. Read the results as of the view, with their evidence and cases.
	ids := make([]relationship.ID, len(ranked))
	for i, r := range ranked {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	var rel related
	allCases, err := c.readRelated(ctx, store.RecallDetailsParams{Team: p.TeamID, Relationships: ids,
		KnownAt: v.knownAt, Cases: true, MaxExcerpts: c.cfg.Limits.MaxRecallExcerpts}, &rel)
	if err != nil {
		return nil, err
	}
	// 7. Shape each result in the view, with the cases it belongs to.
	cases := casesOf(allCases)
	for _, r := range ranked {
		if view, ok := rel.views[r.ID]; ok {
			out.Results = append(out.Results, recallResult(view, state[r.ID], r.Score, rel.ev[r.ID], cases[r.ID], v))
		}
	}
	// 8. The live cases of the results, each once, with every position.
	if err := c.recallConflicts(ctx, p, out, allCases, v.knownAt, &rel); err != nil {
		return nil, err
	}
	return out, nil
}

// recallView is what a Recall reads through: the instants and predicate of its view, the names of
// its entity-name branch, and the branches it runs.
type recallView struct {
	validAt, knownAt *time.Time
	// at is the view's known instant: KnownAt, or now.
	at        time.Time
	predicate string
	names     []string
	branches  []string
}

// recallView fixes the view of a validated request: its instants as stored, and its predicate's key
// (the registered predicate the phrase matches, or the phrase normalised).
func (c *Client) recallView(ctx context.Context, p Principal, req RecallRequest) (recallView, error) {
	v := recallView{validAt: storedPtr(req.ValidAt), knownAt: storedPtr(req.KnownAt), at: c.now(),
		names: queryNames(req.Query), branches: []string{}}
	if v.knownAt != nil {
		v.at = *v.knownAt
	}
	if req.Predicate != "" {
		v.predicate = relationship.NormalizePhrase(req.Predicate)
		preds, err := c.store.PredicateList(ctx, p.TeamID)
		if err != nil {
			return v, err
		}
		if pd, ok := relationship.MatchPredicate(req.Predicate, preds); ok {
			v.predicate = pd.Key
		}
	}
	if strings.TrimSpace(req.Query) != "" {
		v.branches = append(v.branches, BranchFullText)
	}
	if len(v.names) > 0 || len(req.ExpandFromEntityIDs) > 0 {
		v.branches = append(v.branches, BranchEntityName)
	}
	return v, nil
}

// rankedIDs is a branch's relationships in rank order.
func rankedIDs(branch []store.RankedRelationship) []relationship.ID {
	ids := make([]relationship.ID, len(branch))
	for i, r := range branch {
		ids[i] = r.ID
	}
	return ids
}

// rankedState is the state in the view of every relationship a branch found.
func rankedState(found store.RecallSearch) map[relationship.ID]store.RankedRelationship {
	state := map[relationship.ID]store.RankedRelationship{}
	for _, branch := range [][]store.RankedRelationship{found.FullText, found.EntityName} {
		for _, r := range branch {
			state[r.ID] = r
		}
	}
	return state
}

// candidates are the fused relationships, as the ranking rule sees them: their tier in the view,
// allowed authority among their effective evidence in the view, and their creation, as the search
// found them.
func candidates(fused map[relationship.ID]float64, state map[relationship.ID]store.RankedRelationship) []ranking.Candidate {
	out := make([]ranking.Candidate, 0, len(fused))
	for _, id := range slices.Sorted(maps.Keys(fused)) {
		st := state[id]
		out = append(out, ranking.Candidate{ID: id, Fused: fused[id], Fact: st.Tier == relationship.TierFact,
			CreatedAt: st.CreatedAt, Authority: st.Authority})
	}
	return out
}

// recallResult shapes one ranked relationship: its state in the view, its evidence, whether it is
// current and true at valid_at, the live case it is a member of and a resolved case that preferred it.
func recallResult(v store.RelationshipView, st store.RankedRelationship, score float64, ev []store.RecallEvidence,
	cases []store.RecallCase, view recallView) RecallResult {
	v.Relationship.Status, v.Relationship.Tier, v.Relationship.Validity.To, v.Relationship.Version = st.Status, st.Tier, st.ValidTo, st.Version
	rel := v.Relationship
	res := RecallResult{Relationship: summary(v), Score: score, Evidence: excerpts(ev),
		ValidDuring: ValidityInterval{From: rel.Validity.From, To: rel.Validity.To}, Current: rel.CurrentAt(view.at)}
	if n := len(ev); n > 0 && ev[0].Effective > n {
		last := ev[n-1]
		res.EvidenceOmitted = ev[0].Effective - n
		res.EvidenceNextAfter = traceCursor{List: TraceListEvidence, At: last.CreatedAt,
			IDs: []string{last.ObservationID, last.VerificationID, last.SupportID}}.encode()
	}
	if view.validAt != nil {
		held := rel.TrueAt(*view.validAt)
		res.TrueAtValidAt = &held
	}
	for _, cs := range cases {
		switch {
		case cs.Status.Live():
			res.ConflictID = string(cs.ID)
		case cs.Status == conflict.StatusResolved && preferredSide(cs, rel.ID):
			res.ResolvedConflict = &ResolvedConflictRef{ConflictID: string(cs.ID), Version: cs.Version,
				ResolvedAt: cs.ResolvedAt, EffectiveAt: cs.EffectiveAt, EffectiveTimeBasis: cs.TimeBasis,
				PreferredPositionID: string(cs.Preferred)}
		}
	}
	return res
}

// recallConflicts fills out.Conflicts with the live cases of the results, as of knownAt.
func (c *Client) recallConflicts(ctx context.Context, p Principal, out *RecallResponse, all []store.RecallCase,
	knownAt *time.Time, rel *related) error {
	var live []store.RecallCase
	for _, r := range out.Results {
		for _, cs := range all {
			if r.ConflictID == string(cs.ID) && !slices.ContainsFunc(live, func(x store.RecallCase) bool { return x.ID == cs.ID }) {
				live = append(live, cs)
			}
		}
	}
	if len(live) == 0 {
		return nil
	}
	var missing []relationship.ID
	for _, cs := range live {
		for _, pos := range cs.Positions {
			for _, m := range pos.Members {
				if _, ok := rel.views[m.RelationshipID]; !ok && !slices.Contains(missing, m.RelationshipID) {
					missing = append(missing, m.RelationshipID)
				}
			}
		}
	}
	if len(missing) > 0 {
		if _, err := c.readRelated(ctx, store.RecallDetailsParams{Team: p.TeamID, Relationships: missing, KnownAt: knownAt,
			MaxExcerpts: c.cfg.Limits.MaxRecallExcerpts}, rel); err != nil {
			return err
		}
	}
	for _, cs := range live {
		out.Conflicts = append(out.Conflicts, conflictView(cs, rel.views, rel.ev))
	}
	return nil
}

func casesOf(cases []store.RecallCase) map[relationship.ID][]store.RecallCase {
	out := map[relationship.ID][]store.RecallCase{}
	for _, cs := range cases {
		for _, pos := range cs.Positions {
			for _, m := range pos.Members {
				out[m.RelationshipID] = append(out[m.RelationshipID], cs)
			}
		}
	}
	return out
}

// preferredSide reports whether rel is a member of resolved case cs's preferred position or of a
// position allied with it (conflict.Allied: the distinct identities of an identity case won together).
func preferredSide(cs store.RecallCase, rel relationship.ID) bool {
	i := slices.IndexFunc(cs.Positions, func(p store.EventPosition) bool { return p.PositionID == cs.Preferred })
	if i < 0 {
		return false
	}
	won := conflict.PositionKey{Object: cs.Positions[i].Object, Polarity: cs.Positions[i].Polarity}
	for _, pos := range cs.Positions {
		if conflict.Allied(cs.Kind, cs.Key.Subject, won, conflict.PositionKey{Object: pos.Object, Polarity: pos.Polarity}) &&
			slices.ContainsFunc(pos.Members, func(m store.EventMember) bool { return m.RelationshipID == rel }) {
			return true
		}
	}
	return false
}

func storedPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	s := storedTime(*t)
	return &s
}

// limitTerms cuts a query after its max-th word (a run of letters, marks and digits) and returns
// how many words it left out. Search syntax up to the cut (quotes, "or", "-") is kept as written.
func limitTerms(q string, max int) (string, int) {
	words, end := 0, len(q)
	in := false
	for i, r := range q {
		word := unicode.In(r, unicode.L, unicode.M, unicode.N)
		if word && !in {
			words++
			if words == max+1 {
				end = i
			}
		}
		in = word
	}
	if words <= max {
		return q, 0
	}
	return q[:end], words - max
}

// queryNames returns the normalised word n-grams (up to four words, at most 64) of a query, the
// candidates of the exact entity-name branch.
func queryNames(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), unicode.IsSpace)
	for i, w := range words {
		words[i] = strings.TrimFunc(w, func(r rune) bool { return unicode.IsPunct(r) && r != '-' && r != '_' })
	}
	words = slices.DeleteFunc(words, func(w string) bool { return w == "" })
	var out []string
	for n := 1; n <= 4; n++ {
		for i := 0; i+n <= len(words); i++ {
			g := identity.NormalizeName(strings.Join(words[i:i+n], " "))
			if !slices.Contains(out, g) && len(out) < 64 {
				out = append(out, g)
			}
		}
	}
	return out
}

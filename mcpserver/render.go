package mcpserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/densemem/densemem"
)

// The text renderings of tool results: short, plain, and complete where a model must act (the
// question verbatim, every position with its owners and counted groups, every allowed action with
// its impact). The structured content carries everything else.

// text accumulates a rendering.
type text struct{ strings.Builder }

func (t *text) line(indent int, format string, args ...any) {
	t.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(t, format, args...)
	t.WriteByte('\n')
}

func (t *text) String() string { return strings.TrimRight(t.Builder.String(), "\n") }

func renderPlacement(pl *densemem.Placement) string {
	var t text
	replayed := ""
	if pl.Replayed {
		replayed = " (replayed: an earlier call with this idempotency_key stored it)"
	}
	t.line(0, "Remembered: ingest_id %s%s; %d evidence fragment(s).", pl.IngestID, replayed, len(pl.Fragments))
	for _, o := range pl.RelationshipOutcomes {
		t.outcome(0, o, pl.IngestID)
	}
	for _, e := range pl.Entities {
		if len(e.Candidates) > 0 {
			t.line(0, "Entity %q: %s; candidates: %s", e.Ref, e.Decision, candidates(e.Candidates))
		}
	}
	return t.String()
}

// outcome renders one relationship outcome and what to do next.
func (t *text) outcome(indent int, o densemem.RelationshipOutcome, ingestID string) {
	t.line(indent, "- proposal %s: %s (status %s, tier %s): %s", o.ProposalID, o.Category, orDash(string(o.Status)),
		orDash(string(o.Tier)), o.Reason)
	if o.RelationshipID != "" {
		t.line(indent+1, "relationship_id %s, placement_item_id %s", o.RelationshipID, o.PlacementItemID)
	}
	if len(o.Related) > 0 {
		t.line(indent+1, "related relationships: %s", joinIDs(o.Related))
	}
	for _, x := range o.CrossReferences {
		t.line(indent+1, "cross-reference: %s %s (another profile's relationship; it is not changed)", x.Kind, x.ToRelationshipID)
	}
	if c := o.Conflict; c != nil {
		t.line(indent+1, "team conflict case %s: %s, version %d; the nightly reviewer settles it, others answer it with evidence",
			c.ConflictID, c.Status, c.Version)
	}
	if o.Review == nil {
		return
	}
	t.prompt(indent+1, o.Review)
	target := o.RelationshipID
	if target == "" && len(o.Related) > 0 {
		target = o.Related[0]
	}
	if target != "" {
		t.line(indent+1, "Next: call trace_memory {\"relationship_id\": %q}, ask the user the question above verbatim with "+
			"its choices, then call resolve_memory_placement {\"ingest_id\": %q, \"placement_item_id\": %q, \"action\": <the "+
			"user's choice>}.", target, ingestID, o.PlacementItemID)
	} else {
		t.line(indent+1, "Next: ask the user the question above verbatim, then call resolve_memory_placement "+
			"{\"ingest_id\": %q, \"placement_item_id\": %q, \"action\": <the user's choice>}.", ingestID, o.PlacementItemID)
	}
}

// prompt renders a review prompt: its question verbatim and every allowed choice with its impact.
func (t *text) prompt(indent int, p *densemem.ReviewPrompt) {
	t.line(indent, "Review %s (%s). Question: %s", p.ReviewID, p.Kind, p.Question)
	if v := p.Verdict; v != nil {
		t.line(indent+1, "verifier verdict: %s (confidence %.2f) %s", v.Verdict, v.Confidence, v.Rationale)
	}
	for _, m := range p.Mentions {
		t.line(indent+1, "ambiguous mention %q (ref %s, %s): candidates %s", m.Name, m.Ref, m.EntityKind, joinIDs(m.CandidateIDs))
	}
	if len(p.EntityCandidates) > 0 {
		t.line(indent+1, "entity candidates: %s", candidates(p.EntityCandidates))
	}
	for _, o := range p.PredicateOptions {
		t.line(indent+1, "predicate option %s: %s", o.Key, o.Description)
	}
	t.line(indent+1, "Allowed actions:")
	for _, c := range p.Choices {
		t.line(indent+2, "%s: %s", c.Action, c.Description)
		for _, ch := range c.Impact {
			t.line(indent+3, "impact: %s", change(ch))
		}
	}
}

// change renders the before and after of one relationship.
func change(c densemem.RelationshipChange) string {
	return fmt.Sprintf("%s %s -> %s", c.RelationshipID, state(c.Before), state(c.After))
}

func state(s densemem.RelationshipState) string {
	if s.Version == 0 {
		return "(new)"
	}
	out := fmt.Sprintf("%s/%s v%d", s.Status, s.Tier, s.Version)
	if s.ValidTo != nil {
		out += ", valid_to " + stamp(*s.ValidTo)
	}
	return out
}

func candidates(cs []densemem.EntityCandidate) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %q (%s)", c.EntityID, c.Name, c.EntityKind)
		if len(c.IdentityContext) > 0 {
			parts[i] += fmt.Sprintf(" %v", c.IdentityContext)
		}
	}
	return strings.Join(parts, "; ")
}

func renderRecall(r *densemem.RecallResponse) string {
	var t text
	t.line(0, "%d result(s).", len(r.Results))
	for i, res := range r.Results {
		current := "not current"
		if res.Current {
			current = "current"
		}
		t.line(0, "%d. %s; %s, valid %s", i+1, summary(res.Relationship), current, validity(res.ValidDuring.From, res.ValidDuring.To))
		for _, e := range res.Evidence {
			t.line(1, "evidence %q (%s, by %s)", e.Excerpt, e.SourceType, e.AuthorProfileID)
		}
		if res.ConflictID != "" {
			t.line(1, "in live team conflict case %s (see below)", res.ConflictID)
		}
		if rc := res.ResolvedConflict; rc != nil {
			t.line(1, "preferred by resolved conflict case %s (effective_at %s, %s)", rc.ConflictID, optStamp(rc.EffectiveAt),
				orDash(rc.EffectiveTimeBasis))
		}
	}
	for _, c := range r.Conflicts {
		t.conflict(0, c)
	}
	if r.CandidatesTruncated || r.QueryTermsDropped > 0 {
		t.line(0, "More may match: narrow the query.")
	}
	return t.String()
}

// conflict renders a team conflict case: its question verbatim, every position with its owners and
// counted source groups, and how to answer it.
func (t *text) conflict(indent int, c densemem.RecallConflict) {
	t.line(indent, "Team conflict case %s (%s): %s, version %d, review due %s; subject %s %q, predicate %s, scope %q.",
		c.ConflictID, c.Kind, c.Status, c.Version, stamp(c.ReviewDueAt), c.Subject.EntityID, c.Subject.Name, c.Predicate, c.Scope)
	if c.Question != "" {
		t.line(indent+1, "Question: %s", c.Question)
	}
	for _, p := range c.Positions {
		t.line(indent+1, "Position %s: %s %q: owners %s; %d counted source group(s); relationships %s", p.PositionID, p.Polarity,
			p.Object.Name, joinIDs(p.OwnerProfileIDs), p.CountedSourceGroups, joinIDs(p.RelationshipIDs))
		for _, e := range p.Evidence {
			t.line(indent+2, "evidence %q (by %s)", e.Excerpt, e.AuthorProfileID)
		}
	}
	if c.Question != "" {
		t.line(indent+1, "Answer by asking the user for evidence and calling remember with conflict_response "+
			"{\"conflict_id\": %q, \"expected_version\": %d}; the nightly reviewer resolves the case.", c.ConflictID, c.Version)
	}
}

// summary renders a relationship as «subject predicate object» with its owner, state and ID.
func summary(s densemem.RelationshipSummary) string {
	pol := ""
	if s.Polarity == "-" {
		pol = "NOT "
	}
	scope := ""
	if s.Scope != "" {
		scope = fmt.Sprintf(" in scope %q", s.Scope)
	}
	return fmt.Sprintf("«%s%s %s %s»%s owned by %s: %s, %s, v%d (relationship_id %s)", pol, s.Subject.Name, s.Predicate,
		s.Object.Name, scope, s.OwnerProfileID, s.Status, s.Tier, s.Version, s.RelationshipID)
}

func validity(from, to *time.Time) string {
	return optStamp(from) + " .. " + optStamp(to)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func optStamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func joinIDs[T ~string](ids []T) string {
	if len(ids) == 0 {
		return "-"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = string(id)
	}
	return strings.Join(parts, ", ")
}

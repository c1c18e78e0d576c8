package mcpserver

import (
	"fmt"
	"strings"

	"github.com/densemem/densemem"
)

func renderTrace(tr *densemem.TraceResult) string {
	var t text
	r := tr.Relationship
	t.line(0, "%s", summary(r.RelationshipSummary))
	t.line(1, "valid %s; predicate %s v%d (%s, current_cardinality %s); %d independent source group(s)",
		validity(r.ValidFrom, r.ValidTo), r.Predicate, r.PredicateVersion, r.RelationshipKind, r.CurrentCardinality, r.SourceCount)
	for _, e := range tr.Evidence {
		ex := e.Excerpt
		switch {
		case e.ContentOmitted:
			ex = "(content omitted: the response's content budget is spent; read the next page)"
		case ex == "":
			ex = "(content not requested: include_evidence_content)"
		}
		t.line(1, "evidence %s [%d,%d) %q (%s, %s, group %s, by %s)", e.FragmentID, e.Start, e.End, ex, e.SourceType,
			e.Authority, e.SourceGroup, e.AuthorProfileID)
	}
	for _, v := range tr.Verifications {
		t.line(1, "verification %s: %s (confidence %.2f, support granted %t) %s", v.VerificationID, v.Verdict, v.Confidence,
			v.SupportGranted, v.Rationale)
	}
	for _, tt := range tr.Transitions {
		actor := string(tt.ActorProfileID)
		if actor == "" {
			actor = tt.ActorKind
		}
		t.line(1, "transition v%d %s: %s -> %s (%s) by %s: %s", tt.ToVersion, stamp(tt.CreatedAt), orDash(string(tt.FromStatus)),
			tt.ToStatus, tt.ToTier, actor, tt.Reason)
	}
	for _, x := range tr.CrossReferences {
		t.line(1, "%s cross-reference %s: %s -> %s, by %s", x.Direction, x.Kind, x.FromRelationshipID, x.ToRelationshipID,
			x.AuthorProfileID)
	}
	for _, it := range tr.ReviewItems {
		t.reviewItem(1, it)
	}
	for _, c := range tr.Conflicts {
		t.traceConflict(1, c)
	}
	for _, n := range tr.Neighbours {
		t.line(1, "neighbour %s", summary(n))
	}
	for _, tc := range tr.Truncated {
		t.line(1, "more %s: pass after {%q: %q}", tc.List, tc.List, tc.NextAfter)
	}
	return t.String()
}

// reviewItem renders a stored review item: how to name it, its status, and its prompt.
func (t *text) reviewItem(indent int, it densemem.ReviewItem) {
	t.line(indent, "review item %s (%s, %s) of profile %s: ingest_id %s, placement_item_id %s, relationship %s, related %s",
		it.ReviewID, it.Kind, it.Status, it.ProfileID, it.IngestID, it.PlacementItemID, orDash(string(it.RelationshipID)),
		joinIDs(it.RelatedRelationshipID))
	if it.Prompt != nil && it.Status == densemem.ReviewItemStatusOpen {
		t.prompt(indent+1, it.Prompt)
	}
	if d := it.Decision; d != nil {
		t.line(indent+1, "decided %s by %s at %s: %s", d.Action, d.ProfileID, stamp(d.CreatedAt), orDash(d.Reason))
	}
}

// traceConflict renders a case as Trace shows it: its positions with owners and counted groups, and
// its events.
func (t *text) traceConflict(indent int, c densemem.TraceConflict) {
	t.line(indent, "team conflict case %s (%s): %s, version %d, opened %s, review due %s, resolved %s", c.ConflictID, c.Kind,
		c.Status, c.Version, stamp(c.OpenedAt), stamp(c.ReviewDueAt), optStamp(c.ResolvedAt))
	for _, p := range c.Positions {
		var owners []densemem.ProfileID
		var rels []densemem.RelationshipID
		for _, m := range p.Members {
			owners = append(owners, m.OwnerProfileID)
			rels = append(rels, m.RelationshipID)
		}
		preferred := ""
		if p.PositionID == c.PreferredPositionID {
			preferred = " (preferred)"
		}
		t.line(indent+1, "position %s%s: %s %q: owners %s; %d counted source group(s); relationships %s", p.PositionID,
			preferred, p.Polarity, p.Object.Name, joinIDs(owners), p.CountedSourceGroups, joinIDs(rels))
	}
	for _, e := range c.Events {
		actor := string(e.ActorProfileID)
		if actor == "" {
			actor = e.ActorKind
		}
		t.line(indent+1, "event v%d %s: %s -> %s by %s: %s", e.CaseVersion, stamp(e.CreatedAt), orDash(e.PriorStatus),
			e.ResultingStatus, actor, e.Reason)
	}
}

func renderResolve(r *densemem.ResolveResult) string {
	var t text
	replayed := ""
	if r.Replayed {
		replayed = " (replayed)"
	}
	t.line(0, "Decision %s: %s on review item %s (ingest_id %s)%s.", r.DecisionID, r.Action, r.ReviewID, r.IngestID, replayed)
	if len(r.Changes) == 0 {
		t.line(1, "no relationship changed")
	}
	for _, c := range r.Changes {
		t.line(1, "changed: %s", change(c))
	}
	if r.Outcome != nil {
		t.outcome(1, *r.Outcome, r.IngestID)
	}
	for _, x := range r.CrossReferences {
		t.line(1, "cross-reference: %s %s", x.Kind, x.ToRelationshipID)
	}
	if c := r.Conflict; c != nil {
		t.line(1, "team conflict case %s: %s, version %d", c.ConflictID, c.Status, c.Version)
	}
	return t.String()
}

func renderForget(r *densemem.ForgetResult) string {
	var t text
	switch {
	case r.AlreadyRetracted:
		t.line(0, "Relationship %s was already retracted (version %d); nothing changed.", r.RelationshipID, r.Version)
	default:
		t.line(0, "Relationship %s is now %s (version %d); its evidence and history stay available to trace_memory.",
			r.RelationshipID, r.Status, r.Version)
	}
	if c := r.Conflict; c != nil {
		t.line(1, "team conflict case %s: %s, version %d", c.ConflictID, c.Status, c.Version)
	}
	return t.String()
}

func renderConflicts(r *densemem.ListConflictsResponse) string {
	var t text
	t.line(0, "%d team conflict case(s).", len(r.Conflicts))
	for _, c := range r.Conflicts {
		t.conflict(0, c.RecallConflict)
		t.line(1, "opened %s, next review %s, policy v%d", stamp(c.OpenedAt), stamp(c.NextReviewAt), c.PolicyVersion)
		if c.ResolvedAt != nil {
			t.line(1, "resolved %s: preferred position %s, effective_at %s (%s)", stamp(*c.ResolvedAt), c.PreferredPositionID,
				optStamp(c.EffectiveAt), orDash(c.EffectiveTimeBasis))
		}
	}
	if r.NextAfter != "" {
		t.line(0, "More: pass after %q.", r.NextAfter)
	}
	return t.String()
}

func renderReviewItems(r *densemem.ListReviewItemsResponse) string {
	var t text
	t.line(0, "%d review item(s).", len(r.ReviewItems))
	for _, it := range r.ReviewItems {
		t.reviewItem(0, it)
	}
	if len(r.ReviewItems) > 0 {
		t.line(0, "Ask the user each open item's question verbatim, then call resolve_memory_placement with its ingest_id, "+
			"placement_item_id and the chosen action.")
	}
	if r.NextAfter != "" {
		t.line(0, "More: pass after %q.", r.NextAfter)
	}
	return t.String()
}

func renderPredicates(r *densemem.ListPredicatesResponse) string {
	var t text
	if len(r.Predicates) == 0 {
		t.line(0, "The team has no predicates registered yet, so nothing can be remembered: a relationship's predicate must "+
			"name a registered predicate (its key or an alias). Tell the user; the operator registers them "+
			"(densemem predicate register, or the library's RegisterPredicate).")
		return t.String()
	}
	t.line(0, "%d predicate(s). Use a key or an alias as proposal.relationships[].predicate:", len(r.Predicates))
	for _, p := range r.Predicates {
		line := fmt.Sprintf("%s (%s, %s current value(s) per subject", p.Key, p.RelationshipKind, p.CurrentCardinality)
		if p.ValueObject {
			line += ", the object is a literal object_value"
		}
		line += ")"
		if len(p.Aliases) > 0 {
			line += "; aliases: " + strings.Join(p.Aliases, ", ")
		}
		if len(p.SubjectKinds) > 0 {
			line += "; subject kinds: " + strings.Join(p.SubjectKinds, ", ")
		}
		if len(p.ObjectKinds) > 0 {
			line += "; object kinds: " + strings.Join(p.ObjectKinds, ", ")
		}
		if p.Description != "" {
			line += ". " + p.Description
		}
		t.line(1, "%s", line)
	}
	if r.NextAfter != "" {
		t.line(0, "More: pass after %q.", r.NextAfter)
	}
	return t.String()
}

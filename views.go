package densemem

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Shaping shared by the read calls (Recall, Trace, the List calls): stored rows as the public views
// show them. A call's own shaping stays in its file; what two calls show alike lives here.

// reviewItem is a stored review item as Trace and ListReviewItems show it, with its stored prompt.
func reviewItem(ri store.ReviewItemView) TraceReviewItem {
	item := TraceReviewItem{ReviewID: ri.ID, Kind: ri.Kind, Status: ri.Status, IngestID: ri.IngestID,
		PlacementItemID: ri.PlacementItemID, ProfileID: ri.Profile, ObservationID: ri.ObservationID,
		RelationshipID: ri.RelationshipID, CreatedAt: ri.CreatedAt, ResolvedAt: ri.ResolvedAt}
	for _, id := range ri.Related {
		item.RelatedRelationshipID = append(item.RelatedRelationshipID, RelationshipID(id))
	}
	var prompt ReviewPrompt
	if json.Unmarshal(ri.Choices, &prompt) == nil {
		item.Prompt = &prompt
	}
	if len(ri.Decision) > 0 {
		var d TraceDecision
		if json.Unmarshal(ri.Decision, &d) == nil {
			item.Decision = &d
		}
	}
	if len(ri.Proposals) > 0 {
		_ = json.Unmarshal(ri.Proposals, &item.Proposals) // stored rows: they unmarshal, or show none
	}
	return item
}

func summary(v store.RelationshipView) RelationshipSummary {
	r := v.Relationship
	return RelationshipSummary{RelationshipID: r.ID, OwnerProfileID: r.Owner,
		Subject: EntityRefView{EntityID: r.Subject, Name: v.SubjectName, Kind: v.SubjectKind}, Predicate: r.PredicateKey,
		Object: objectView(r.Object, store.ObjectName{Name: v.ObjectName, Kind: v.ObjectKind}), Polarity: r.Polarity,
		Scope: r.Scope, ValidFrom: r.Validity.From, ValidTo: r.Validity.To, Status: r.Status, Tier: r.Tier, Version: r.Version}
}

// objectView names an object: an entity with its kind, or a literal with its value type (the store's
// kind "value:<type>").
func objectView(o relationship.Object, n store.ObjectName) ObjectView {
	obj := ObjectView{EntityID: o.EntityID, ValueID: o.ValueID, Name: n.Name, Kind: n.Kind}
	if o.ValueID != "" {
		obj.Kind = ""
		if len(n.Kind) > len("value:") {
			obj.ValueType = ValueType(n.Kind[len("value:"):])
		}
	}
	return obj
}

func detail(v store.RelationshipView) RelationshipDetail {
	return RelationshipDetail{RelationshipSummary: summary(v), PredicateVersion: v.Predicate.Version,
		RelationshipKind: v.Predicate.Kind, CurrentCardinality: v.Predicate.Cardinality, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
}

// conflictView builds a case's reader view: positions with owners, counted groups and excerpts, and
// the explicit question.
func conflictView(cs store.RecallCase, views map[relationship.ID]store.RelationshipView, ev map[relationship.ID][]store.RecallEvidence) RecallConflict {
	rc := RecallConflict{ConflictID: string(cs.ID), Kind: string(cs.Kind), Version: cs.Version, Status: string(cs.Status), ReviewDueAt: cs.ReviewDueAt,
		Predicate: cs.Key.PredicateKey, Scope: cs.Key.Scope, Positions: []RecallPosition{}}
	identityCase := cs.Kind == conflict.KindIdentityCorrection
	// ev holds effective evidence only (RecallDetails leaves out the supports of fragments retired by
	// the read's instant), so every support counted here is effective.
	groups := countedGroups(cs, func(id relationship.ID) []evidence.Support {
		var sups []evidence.Support
		for _, e := range ev[id] {
			sups = append(sups, evidence.Support{Group: e.SourceGroup, ContentHash: e.ContentHash, Effective: true})
		}
		return sups
	})
	var alternatives []string
	for i, pos := range cs.Positions {
		rp := RecallPosition{PositionID: string(pos.PositionID), Polarity: pos.Polarity, CountedSourceGroups: groups[i],
			RelationshipIDs: []RelationshipID{}, OwnerProfileIDs: []ProfileID{}, Evidence: []EvidenceExcerpt{}}
		var statements []string
		for _, m := range pos.Members {
			rp.RelationshipIDs = append(rp.RelationshipIDs, m.RelationshipID)
			if !slices.Contains(rp.OwnerProfileIDs, m.Owner) {
				rp.OwnerProfileIDs = append(rp.OwnerProfileIDs, m.Owner)
			}
			if v, ok := views[m.RelationshipID]; ok {
				s := summary(v)
				switch {
				case identityCase: // a position is the identity its members are stated about
					rp.Object = ObjectView{EntityID: s.Subject.EntityID, Name: s.Subject.Name, Kind: s.Subject.Kind}
					statements = append(statements, fmt.Sprintf("%s %q", s.Predicate, s.Object.Name))
					if s.Subject.EntityID == cs.Key.Subject {
						rc.Subject = s.Subject
					}
				default:
					rp.Object = s.Object
					if rc.Subject.EntityID == "" {
						rc.Subject = s.Subject
					}
				}
			}
			rp.Evidence = append(rp.Evidence, excerpts(ev[m.RelationshipID])...)
		}
		name := fmt.Sprintf("%q", rp.Object.Name)
		switch {
		case identityCase:
			name = fmt.Sprintf("%s (%s)", rp.Object.EntityID, strings.Join(statements, ", "))
		case pos.Polarity == relationship.PolarityNegative:
			name = "not " + name
		}
		alternatives = append(alternatives, fmt.Sprintf("%s (%d profile(s), %d independent source group(s))",
			name, len(rp.OwnerProfileIDs), rp.CountedSourceGroups))
		rc.Positions = append(rc.Positions, rp)
	}
	rc.Question = conflictQuestion(rc, alternatives)
	return rc
}

// conflictQuestion is the question a live case asks its readers.
func conflictQuestion(rc RecallConflict, alternatives []string) string {
	if rc.Kind == string(conflict.KindIdentityCorrection) {
		return fmt.Sprintf("Team members disagree on who %q (%s) is: one identity, or the distinct ones its corrections "+
			"name? Positions: %s. Answer by remembering exact evidence about the entity you mean (known_entity_id, or "+
			"distinct_from_entity_ids); only the owner of a statement on %s can split or forget it. The nightly review "+
			"weighs %s against the distinct identities together under the team's policy and, when one side qualifies, "+
			"supersedes the other side's statements; it never changes an entity resolution.", rc.Subject.Name,
			rc.Subject.EntityID, strings.Join(alternatives, "; "), rc.Subject.EntityID, rc.Subject.EntityID)
	}
	scope := ""
	if rc.Scope != "" {
		scope = fmt.Sprintf(" in scope %q", rc.Scope)
	}
	return fmt.Sprintf("Team members disagree on %q %s%s: which is current, %s? Answer by remembering exact "+
		"evidence with conflict_response {conflict_id: %q, expected_version: %d}; the nightly review decides.",
		rc.Subject.Name, rc.Predicate, scope, strings.Join(alternatives, " or "), rc.ConflictID, rc.Version)
}

// countedGroups returns the independent source groups counted for each position of case cs
// (conflict.TallyCase: copies count once, a group behind two positions that are not allied counts for
// neither), given the effective supports of each member relationship. Recall's conflicts and Trace's
// case positions both count through it.
func countedGroups(cs store.RecallCase, supports func(relationship.ID) []evidence.Support) []int {
	tally := make([]conflict.Position, len(cs.Positions))
	for i, pos := range cs.Positions {
		tally[i].Key = conflict.PositionKey{Object: pos.Object, Polarity: pos.Polarity}
		for _, m := range pos.Members {
			tally[i].Members = append(tally[i].Members, conflict.Member{Supports: supports(m.RelationshipID)})
		}
	}
	conflict.TallyCase(cs.Kind, cs.Key.Subject, tally)
	out := make([]int, len(tally))
	for i, p := range tally {
		out[i] = p.Groups
	}
	return out
}

func groupEvidence(es []store.RecallEvidence) map[relationship.ID][]store.RecallEvidence {
	out := map[relationship.ID][]store.RecallEvidence{}
	for _, e := range es {
		out[e.RelationshipID] = append(out[e.RelationshipID], e)
	}
	return out
}

func excerpts(es []store.RecallEvidence) []EvidenceExcerpt {
	out := make([]EvidenceExcerpt, 0, len(es))
	for _, e := range es {
		out = append(out, EvidenceExcerpt{FragmentID: e.FragmentID, Start: e.Start, End: e.End, Excerpt: e.Excerpt,
			ExcerptTruncated: e.ExcerptCut, Erased: e.Erased, SourceType: e.SourceType, Authority: e.Authority, SourceGroup: e.SourceGroup, AuthorProfileID: e.Author})
	}
	return out
}

// related is what the read calls read of some relationships, by relationship: their views and their
// effective evidence.
type related struct {
	views map[relationship.ID]store.RelationshipView
	ev    map[relationship.ID][]store.RecallEvidence
}

// readRelated reads the views and evidence of relationships (with p.Cases, also their cases, which it
// returns) in one round trip, and adds them to rel.
func (c *Client) readRelated(ctx context.Context, p store.RecallDetailsParams, rel *related) ([]store.RecallCase, error) {
	details, err := c.store.RecallDetails(ctx, p)
	if err != nil {
		return nil, err
	}
	if rel.views == nil {
		rel.views, rel.ev = map[relationship.ID]store.RelationshipView{}, map[relationship.ID][]store.RecallEvidence{}
	}
	for _, v := range details.Views {
		rel.views[v.Relationship.ID] = v
	}
	for id, e := range groupEvidence(details.Evidence) {
		rel.ev[id] = e
	}
	return details.Cases, nil
}

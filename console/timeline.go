package console

import (
	"html/template"
	"slices"

	"github.com/densemem/densemem"
)

// maxTimelineRows bounds the relationships a key's timeline traces: the traced one and those its
// cases, cross-references and transitions name, each one Trace call.
const maxTimelineRows = 12

// timelineBody is a key's timeline page: the picture and its rows as a table.
type timelineBody struct {
	Center  densemem.RelationshipDetail
	Picture Timeline
	Drawn   template.HTML
	Cut     bool
}

// timelinePage draws the bitemporal timeline of a relationship's key (subject, predicate, scope):
// the relationship and the others of the key that its cases, cross-references and transitions name,
// with a resolved case's cutoff.
func (c *console) timelinePage(rq *request) error {
	id := densemem.RelationshipID(rq.r.PathValue("id"))
	req := densemem.TraceRequest{RelationshipID: id, IncludeTransitions: true, Limit: c.opts.PageSize}
	tr, err := c.client.Trace(rq.ctx, rq.principal, req)
	if err != nil {
		return err
	}
	key := tr.Relationship
	t := Timeline{Title: "Timeline of " + key.Subject.Name + " " + key.Predicate, Now: c.opts.Clock()}
	ids := []densemem.RelationshipID{id}
	for _, cs := range tr.Conflicts {
		if cs.EffectiveAt != nil {
			t.Cutoff = cs.EffectiveAt
		}
		for _, p := range cs.Positions {
			for _, m := range p.Members {
				ids = append(ids, m.RelationshipID)
			}
		}
	}
	for _, x := range tr.CrossReferences {
		ids = append(ids, x.FromRelationshipID, x.ToRelationshipID)
	}
	for _, tt := range tr.Transitions {
		if tt.RelatedRelationshipID != "" {
			ids = append(ids, tt.RelatedRelationshipID)
		}
	}
	ids = uniq(ids)
	body := timelineBody{Center: key, Cut: len(ids) > maxTimelineRows}
	for _, rid := range ids[:min(len(ids), maxTimelineRows)] {
		other := tr
		if rid != id {
			req.RelationshipID = rid
			if other, err = c.client.Trace(rq.ctx, rq.principal, req); err != nil {
				return err
			}
		}
		r := other.Relationship
		if r.Subject.EntityID != key.Subject.EntityID || r.Predicate != key.Predicate || r.Scope != key.Scope {
			continue
		}
		t.Rows = append(t.Rows, timelineRow(other, rq.who))
	}
	body.Picture = t
	body.Drawn = DrawTimeline(t)
	return rq.show("timeline", t.Title, "", body)
}

// timelineRow is one relationship's validity and the interval the system held it current: from its
// creation to its first transition out of active or review.
func timelineRow(tr *densemem.TraceResult, who func(densemem.ProfileID) string) TimelineRow {
	r := tr.Relationship
	row := TimelineRow{Label: statement(r.RelationshipSummary, who), ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, LearntAt: r.CreatedAt}
	for _, t := range tr.Transitions {
		switch t.ToStatus {
		case "superseded", "retracted", "rejected":
			at := t.CreatedAt
			row.ClosedAt, row.ClosedBy = &at, string(t.ToStatus)
			return row
		}
	}
	return row
}

func uniq(ids []densemem.RelationshipID) []densemem.RelationshipID {
	seen := map[densemem.RelationshipID]bool{}
	return slices.DeleteFunc(ids, func(id densemem.RelationshipID) bool {
		if seen[id] {
			return true
		}
		seen[id] = true
		return false
	})
}

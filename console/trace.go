package console

import (
	"html/template"
	"strings"
	"unicode/utf8"

	"github.com/densemem/densemem"
)

// traceBody is a relationship's trace page: one page of every list, the evidence split around its
// cited spans, the lineage picture, and the links to each cut list's next page.
type traceBody struct {
	T        *densemem.TraceResult
	Evidence []evidenceView
	Lineage  template.HTML
	More     []moreLink
}

// evidenceView is one support with its fragment's text split around the cited span.
type evidenceView struct {
	densemem.TraceEvidence
	Before, Span, After string
	Split               bool
}

// moreLink is the next page of one list of a trace.
type moreLink struct {
	List string
	Href string
}

// tracePage shows one relationship's Trace: evidence verbatim with spans highlighted,
// verification events, transitions, cross-references, cases, identity history, and its lineage.
func (c *console) tracePage(rq *request) error {
	id := densemem.RelationshipID(rq.r.PathValue("id"))
	after := traceAfter(rq.r.URL.Query())
	tr, err := c.client.Trace(rq.ctx, rq.principal, densemem.TraceRequest{RelationshipID: id, IncludeEvidenceContent: true,
		IncludeVerification: true, IncludeTransitions: true, MaxDepth: 1, MaxEdges: 20, Limit: c.opts.PageSize, After: after})
	if err != nil {
		return err
	}
	g := lineage(tr, rq.who)
	if err := c.labelLineage(rq, &g); err != nil {
		return err
	}
	body := traceBody{T: tr, Lineage: DrawLineage(g)}
	for _, e := range tr.Evidence {
		body.Evidence = append(body.Evidence, splitSpan(e))
	}
	for _, t := range tr.Truncated {
		q := rq.r.URL.Query()
		q.Set("after."+t.List, t.NextAfter)
		body.More = append(body.More, moreLink{List: t.List, Href: "/relationships/" + string(id) + "?" + q.Encode()})
	}
	return rq.show("trace", "Trace of "+string(id), "", body)
}

// splitSpan cuts a support's fragment around its cited byte span, when the span lies on character
// boundaries of the content it came with.
func splitSpan(e densemem.TraceEvidence) evidenceView {
	v := evidenceView{TraceEvidence: e}
	c := e.Content
	if c == "" || e.Start < 0 || e.End > len(c) || e.Start >= e.End || !utf8.ValidString(c[:e.Start]) || !utf8.ValidString(c[e.Start:e.End]) {
		return v
	}
	v.Before, v.Span, v.After, v.Split = c[:e.Start], c[e.Start:e.End], c[e.End:], true
	return v
}

// lineage is the graph one hop around a traced relationship: its cross-references both ways, and
// the relationships its transitions name (what superseded it, what it was split or merged into or
// re-derived from).
func lineage(tr *densemem.TraceResult, who func(densemem.ProfileID) string) Lineage {
	r := tr.Relationship
	center := string(r.RelationshipID)
	g := Lineage{Title: "Lineage of " + center, Center: LineageNode{ID: center, Label: statement(r.RelationshipSummary, who)}}
	labels := map[string]string{}
	for _, n := range tr.Neighbours {
		labels[string(n.RelationshipID)] = statement(n, who)
	}
	for _, cs := range tr.Conflicts {
		for _, p := range cs.Positions {
			for _, m := range p.Members {
				labels[string(m.RelationshipID)] = who(m.OwnerProfileID) + ": " + p.Object.Name
			}
		}
	}
	seen := map[string]bool{}
	add := func(from, to, kind string) {
		g.Edges = append(g.Edges, LineageEdge{From: from, To: to, Kind: kind})
		other := from
		if from == center {
			other = to
		}
		if !seen[other] {
			seen[other] = true
			g.Nodes = append(g.Nodes, LineageNode{ID: other, Label: labels[other], Href: "/relationships/" + other})
		}
	}
	for _, x := range tr.CrossReferences {
		add(string(x.FromRelationshipID), string(x.ToRelationshipID), x.Kind)
	}
	for _, t := range tr.Transitions {
		if t.RelatedRelationshipID == "" {
			continue
		}
		rel, kind := string(t.RelatedRelationshipID), strings.SplitN(t.Reason, ":", 2)[0]
		switch {
		case kind == "superseded":
			add(rel, center, "supersedes")
		case t.FromVersion == 0:
			add(rel, center, kind)
		default:
			add(center, rel, kind)
		}
	}
	return g
}

// maxLineageLabels bounds the relationships of a lineage named by a Trace of their own: those the
// traced relationship's page does not name (closed ones, which are not neighbours).
const maxLineageLabels = 8

// labelLineage names the nodes of g that have no label yet, one Trace each, the first
// maxLineageLabels of them.
func (c *console) labelLineage(rq *request, g *Lineage) error {
	looked := 0
	for i, n := range g.Nodes {
		if n.Label != "" || looked == maxLineageLabels {
			continue
		}
		looked++
		tr, err := c.client.Trace(rq.ctx, rq.principal, densemem.TraceRequest{RelationshipID: densemem.RelationshipID(n.ID), Limit: 1})
		if err != nil {
			return err
		}
		g.Nodes[i].Label = statement(tr.Relationship.RelationshipSummary, rq.who) + " (" + string(tr.Relationship.Status) + ")"
	}
	for i := range g.Nodes {
		g.Nodes[i].Label = labelOr(g.Nodes[i].Label, "relationship")
	}
	return nil
}

// statement is a relationship as a short sentence: owner, subject, predicate, object.
func statement(s densemem.RelationshipSummary, who func(densemem.ProfileID) string) string {
	neg := ""
	if s.Polarity == "-" {
		neg = "not "
	}
	return who(s.OwnerProfileID) + ": " + s.Subject.Name + " " + s.Predicate + " " + neg + s.Object.Name
}

func labelOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

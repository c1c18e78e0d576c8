package console

import (
	"html/template"
	"slices"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/conflict"
)

// statusFilter returns a page's status filter: no status means statuses (the page's default), a
// status name itself.
func statusFilter(status string, statuses ...string) ([]string, bool) {
	if status == "" {
		return statuses, true
	}
	known := []string{densemem.ConflictStatusOverdue, densemem.ConflictStatusOpen, densemem.ConflictStatusResolved,
		densemem.ConflictStatusDismissed}
	return []string{status}, slices.Contains(known, status)
}

// casesBody is the cases page: one page of cases under the policy in force.
type casesBody struct {
	Status           string
	Policy           densemem.TeamPolicy
	Strong, Majority conflict.Floor
	Cases            []caseView
	Next             string
}

// caseView is one case with what would resolve it: the floor that applies now and each position's
// distance from it.
type caseView struct {
	densemem.ConflictCase
	Floor     conflict.Floor
	PostTTL   bool
	Total     int
	Positions []positionView
	Bars      template.HTML
}

// positionView is one position with its share of the counted groups and how many more groups it
// would need to meet the floor.
type positionView struct {
	densemem.RecallPosition
	Name      string
	Share     float64
	Shortfall int
	Preferred bool
}

// casesPage lists a page of the team's cases of one status filter (open and overdue by default).
func (c *console) casesPage(rq *request) error {
	status, page, err := c.listCases(rq, "open and overdue", densemem.ConflictStatusOverdue, densemem.ConflictStatusOpen)
	if err != nil {
		return err
	}
	pol, err := c.client.TeamPolicy(rq.ctx, rq.principal)
	if err != nil {
		return err
	}
	body := casesBody{Status: status, Policy: pol, Strong: conflict.StrongFloor, Majority: conflict.MajorityFloor, Next: page.NextAfter}
	for _, cs := range page.Conflicts {
		body.Cases = append(body.Cases, c.caseView(cs))
	}
	return rq.show("cases", "Conflict cases", "cases", body)
}

// listCases reads the page of cases the request's status filter and cursor name; without a status,
// of the page's default statuses (named def).
func (c *console) listCases(rq *request, def string, defaults ...string) (string, *densemem.ListConflictsResponse, error) {
	q := rq.r.URL.Query()
	statuses, ok := statusFilter(q.Get("status"), defaults...)
	if !ok {
		return "", nil, badInput("status", "unknown status filter: one of open, overdue, resolved, dismissed, or none for "+def)
	}
	page, err := c.client.ListConflicts(rq.ctx, rq.principal, densemem.ListConflictsRequest{Status: statuses,
		Limit: c.opts.PageSize, After: q.Get("after")})
	return q.Get("status"), page, err
}

// caseView measures a case against the floor that applies to it now.
func (c *console) caseView(cs densemem.ConflictCase) caseView {
	v := caseView{ConflictCase: cs, Floor: conflict.FloorAt(c.opts.Clock(), cs.ReviewDueAt)}
	v.PostTTL = v.Floor == conflict.MajorityFloor
	for _, p := range cs.Positions {
		v.Total += p.CountedSourceGroups
	}
	bars := Bars{Title: "Counted source groups per position of " + cs.ConflictID, Floor: v.Floor}
	for _, p := range cs.Positions {
		pv := positionView{RecallPosition: p, Name: positionName(p), Shortfall: v.Floor.Shortfall(p.CountedSourceGroups, v.Total),
			Preferred: p.PositionID == cs.PreferredPositionID}
		if v.Total > 0 {
			pv.Share = float64(p.CountedSourceGroups) / float64(v.Total)
		}
		v.Positions = append(v.Positions, pv)
		bars.Bars = append(bars.Bars, Bar{Label: pv.Name, Groups: p.CountedSourceGroups, Needed: p.CountedSourceGroups + pv.Shortfall,
			Preferred: pv.Preferred})
	}
	v.Bars = DrawBars(bars)
	return v
}

// positionName is a position as a reader names it: its object, "not" before a negative one.
func positionName(p densemem.RecallPosition) string {
	name := p.Object.Name
	if name == "" {
		name = string(p.Object.EntityID)
	}
	if p.Polarity == "-" {
		name = "not " + name
	}
	return name
}

// caseBody is one case's page: the case, its bars and a page of its events.
type caseBody struct {
	Case       caseView
	Events     []densemem.TraceConflictEvent
	EventsNote string
	Next       string
}

// casePage shows one case: its positions against the floor and a page of its event history.
func (c *console) casePage(rq *request) error {
	id := rq.r.PathValue("id")
	cs, err := c.client.Conflict(rq.ctx, rq.principal, id)
	if err != nil {
		return err
	}
	body := caseBody{Case: c.caseView(*cs)}
	events, next, found, err := c.caseEvents(rq, *cs, rq.r.URL.Query().Get("after"))
	if err != nil {
		return err
	}
	body.Events, body.Next = events, next
	if !found {
		body.EventsNote = "The events of this case are read through a member's trace: open a member's trace to page to them."
	}
	return rq.show("case", "Case "+id, "cases", body)
}

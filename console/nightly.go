package console

import (
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem"
)

// reasonExhausted is the reason of the event the nightly review appends to a case that failed every
// attempt of a run date (it stays due; the next run date tries again).
const reasonExhausted = "max_attempts_exhausted"

// nightlyBody is the nightly page: the reviewer's events of one page of cases, by run date, newest
// first, and the cases themselves.
type nightlyBody struct {
	Status string
	Zone   string
	Runs   []runView
	Cases  []densemem.ConflictCase
	Next   string
}

// runView is what the nightly review did on one run date to the cases of the page.
type runView struct {
	Date                                    string
	Resolved, Dismissed, Overdue, Exhausted []runCase
}

// runCase is one case a run decided, with the event's reason code.
type runCase struct {
	ConflictID, Key, Reason string
}

// nightlyPage shows, for one page of cases, what each nightly run decided: resolved, dismissed,
// marked overdue, or failed every attempt (decision 214: the library keeps no per-run report; each
// run's report goes to the host's scheduler). Each case's events are read through Trace of its
// first member, one call per case of the page.
func (c *console) nightlyPage(rq *request) error {
	status, page, err := c.listCases(rq, "all four", densemem.ConflictStatusOverdue, densemem.ConflictStatusOpen,
		densemem.ConflictStatusResolved, densemem.ConflictStatusDismissed)
	if err != nil {
		return err
	}
	pol, err := c.client.TeamPolicy(rq.ctx, rq.principal)
	if err != nil {
		return err
	}
	zone, _ := time.LoadLocation(pol.TimeZone) // "" is UTC; a stored zone always loads
	body := nightlyBody{Status: status, Zone: zone.String(), Cases: page.Conflicts, Next: page.NextAfter}
	runs := map[string]*runView{}
	for _, cs := range page.Conflicts {
		events, _, _, err := c.caseEvents(rq, cs, "")
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.ActorKind != "system_conflict_reviewer" {
				continue
			}
			date := e.CreatedAt.In(zone).Format(time.DateOnly)
			if runs[date] == nil {
				runs[date] = &runView{Date: date}
			}
			runs[date].add(runCase{ConflictID: cs.ConflictID, Key: cs.Subject.Name + " " + cs.Predicate, Reason: e.Reason}, e)
		}
	}
	for _, r := range runs {
		body.Runs = append(body.Runs, *r)
	}
	slices.SortFunc(body.Runs, func(a, b runView) int { return strings.Compare(b.Date, a.Date) })
	return rq.show("nightly", "Nightly review", "nightly", body)
}

// add files one reviewer event under what it did.
func (r *runView) add(rc runCase, e densemem.TraceConflictEvent) {
	switch {
	case e.Reason == reasonExhausted:
		r.Exhausted = append(r.Exhausted, rc)
	case e.ResultingStatus == densemem.ConflictStatusResolved:
		r.Resolved = append(r.Resolved, rc)
	case e.ResultingStatus == densemem.ConflictStatusDismissed:
		r.Dismissed = append(r.Dismissed, rc)
	case e.ResultingStatus == densemem.ConflictStatusOverdue:
		r.Overdue = append(r.Overdue, rc)
	}
}

// caseEvents reads a page of a case's events, after the cursor after, through Trace of its first
// member (the only call that pages a case's events), with the next page's cursor. found is false
// for a case without members, or one not on the first page of its member's cases.
func (c *console) caseEvents(rq *request, cs densemem.ConflictCase, after string) (events []densemem.TraceConflictEvent,
	next string, found bool, err error) {
	var first densemem.RelationshipID
	for _, p := range cs.Positions {
		if first == "" && len(p.RelationshipIDs) > 0 {
			first = p.RelationshipIDs[0]
		}
	}
	if first == "" {
		return nil, "", false, nil
	}
	list := densemem.TraceConflictEventsList(cs.ConflictID)
	req := densemem.TraceRequest{RelationshipID: first, Limit: c.opts.PageSize}
	if after != "" {
		req.After = map[string]string{list: after}
	}
	tr, err := c.client.Trace(rq.ctx, rq.principal, req)
	if err != nil {
		return nil, "", false, err
	}
	for _, t := range tr.Truncated {
		if t.List == list {
			next = t.NextAfter
		}
	}
	for _, tc := range tr.Conflicts {
		if tc.ConflictID == cs.ConflictID {
			return tc.Events, next, true, nil
		}
	}
	return nil, "", false, nil
}

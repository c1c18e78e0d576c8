package console

import (
	"time"

	"github.com/densemem/densemem"
)

// reasonExhausted is the reason of the event the nightly review appends to a case that failed every
// attempt of a run date (it stays due; the next run date tries again).
const reasonExhausted = "max_attempts_exhausted"

// nightlyBody is the nightly page: one page of the run ledger (ListNightlyRuns), newest run date
// first, each run with the cases of the page of cases below that its events name, and that page of
// cases.
type nightlyBody struct {
	Status string
	Zone   string
	Runs   []runView
	// After and Next are this and the next page's run cursors (the after parameter).
	After, Next string
	Cases       []densemem.ConflictCase
	// CasesAfter and CasesNext are this and the next page's case cursors (the cases_after parameter).
	CasesAfter, CasesNext string
}

// runView is one run of the ledger, with what its reviewer events did to the cases of the page.
type runView struct {
	densemem.NightlyRun
	// State says whether the run finished: "finished", "unfinished" (a pass did not record its
	// outcome), or "unrecorded" (reserved before the ledger existed).
	State      string
	Unfinished int
	// Decided names the cases of the page the run's events decided.
	Decided decided
}

// decided files the cases a run's events decided by what the run did.
type decided struct {
	Resolved, Dismissed, Overdue, Exhausted []runCase
}

// runCase is one case a run decided, with the event's reason code.
type runCase struct {
	ConflictID, Key, Reason string
}

// nightlyPage shows a page of the run ledger: each run's passes, whether they finished, what they
// did (counts) and their first failures (decision 214, revised by 230). The cases each run decided
// are named from the reviewer's events of one page of cases (every status by default), read through
// Trace of each case's first member, one call per case of that page.
func (c *console) nightlyPage(rq *request) error {
	q := rq.r.URL.Query()
	runs, err := c.client.ListNightlyRuns(rq.ctx, rq.principal, densemem.ListNightlyRunsRequest{Limit: c.opts.PageSize,
		After: q.Get("after")})
	if err != nil {
		return err
	}
	status, page, err := c.listCases(rq, "cases_after", "all four", densemem.ConflictStatusOverdue, densemem.ConflictStatusOpen,
		densemem.ConflictStatusResolved, densemem.ConflictStatusDismissed)
	if err != nil {
		return err
	}
	pol, err := c.client.TeamPolicy(rq.ctx, rq.principal)
	if err != nil {
		return err
	}
	zone, _ := time.LoadLocation(pol.TimeZone) // "" is UTC; a stored zone always loads
	body := nightlyBody{Status: status, Zone: zone.String(), After: q.Get("after"), Next: runs.NextAfter, Cases: page.Conflicts,
		CasesAfter: q.Get("cases_after"), CasesNext: page.NextAfter}
	byDate := map[string]*runView{}
	for _, r := range runs.Runs {
		v := runView{NightlyRun: r, State: "finished", Unfinished: r.PassesStarted - r.PassesFinished}
		switch {
		case r.PassesStarted == 0:
			v.State = "unrecorded"
		case v.Unfinished > 0:
			v.State = "unfinished"
		}
		body.Runs = append(body.Runs, v)
	}
	for i := range body.Runs {
		byDate[body.Runs[i].RunDate] = &body.Runs[i]
	}
	for _, cs := range page.Conflicts {
		events, _, _, err := c.caseEvents(rq, cs, "")
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.ActorKind != "system_conflict_reviewer" {
				continue
			}
			if r := byDate[e.CreatedAt.In(zone).Format(time.DateOnly)]; r != nil {
				r.Decided.add(runCase{ConflictID: cs.ConflictID, Key: cs.Subject.Name + " " + cs.Predicate, Reason: e.Reason}, e)
			}
		}
	}
	return rq.show("nightly", "Nightly review", "nightly", body)
}

// add files one reviewer event under what it did.
func (r *decided) add(rc runCase, e densemem.TraceConflictEvent) {
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

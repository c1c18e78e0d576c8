package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem"
)

// errCasesFailed makes review run exit non-zero when cases failed: they stay due for the next run.
var errCasesFailed = errors.New("cases failed")

func (c *cli) reviewRun(ctx context.Context, args []string) error {
	s := c.sub("review run", "")
	fs := s.fs
	s.reviewer = fs.String("reviewer-database-url", "",
		"PostgreSQL URL as the reviewer role densemem_reviewer (default $"+envReviewerDatabaseURL+", else --database-url, "+
			"which must then be the owner's or a superuser's)")
	var teams multi
	fs.Var(&teams, "team", "review only this team (repeatable; default: every team with due cases)")
	worker := fs.String("worker", "densemem-cli", "the worker name recorded in run reservations")
	maxCases := fs.Int("max-cases", 0, "the most cases claimed per team (0: no bound)")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	req := densemem.NightlyReviewRequest{WorkerID: *worker, MaxCases: *maxCases}
	for _, t := range teams {
		req.TeamIDs = append(req.TeamIDs, densemem.TeamID(t))
	}
	rep, err := client.RunNightlyReview(ctx, req)
	if err != nil {
		if *s.reviewer == "" || *s.reviewer == *s.url {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42501" || errors.Is(err, densemem.ErrForbidden) {
				return fmt.Errorf("%w\nThe nightly review runs as the reviewer role: pass --reviewer-database-url (or set %s) "+
					"with a URL that logs in as densemem_reviewer, or run it with the owner's URL", err, envReviewerDatabaseURL)
			}
		}
		return err
	}
	if perr := c.print(rep, func() { c.printReport(rep) }); perr != nil {
		return perr
	}
	if rep.Failed > 0 || rep.Unknown > 0 {
		return fmt.Errorf("%w: %d failed, %d of unknown outcome; they stay due for the next run", errCasesFailed, rep.Failed, rep.Unknown)
	}
	return nil
}

// printReport prints a nightly run's report.
func (c *cli) printReport(rep *densemem.NightlyReviewReport) {
	fmt.Fprintf(c.stdout, "nightly review: %d team(s), %d run date(s) reserved, %d case(s) claimed\n", rep.Teams, rep.Reserved, rep.Claimed)
	for _, row := range []struct {
		what string
		n    int
	}{{"resolved", rep.Resolved}, {"overdue", rep.Overdue}, {"dismissed", rep.Dismissed}, {"kept open", rep.KeptOpen},
		{"failed", rep.Failed}, {"unknown outcome", rep.Unknown}, {"lost to another worker", rep.Lost},
		{"escalated (attempts exhausted)", rep.Escalated}} {
		fmt.Fprintf(c.stdout, "  %-31s %d\n", row.what, row.n)
	}
	for _, id := range rep.UnknownCaseIDs {
		fmt.Fprintf(c.stdout, "  unknown outcome: %s\n", id)
	}
}

func (c *cli) reviewRuns(ctx context.Context, args []string) error {
	s := c.sub("review runs", "")
	team := s.require("team", "the team")
	limit := s.fs.Int("limit", 30, "the most run dates listed")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	page, err := client.ListNightlyRuns(ctx, host(*team), densemem.ListNightlyRunsRequest{Limit: *limit})
	if err != nil {
		return err
	}
	return c.print(page, func() { c.printRuns(page) })
}

// printRuns prints a page of the run ledger, a run a paragraph, newest first.
func (c *cli) printRuns(page *densemem.ListNightlyRunsResponse) {
	if len(page.Runs) == 0 {
		fmt.Fprintln(c.stdout, "no nightly runs")
		return
	}
	for _, r := range page.Runs {
		state := "finished"
		switch {
		case r.PassesStarted == 0:
			state = "not recorded (reserved before the run ledger)"
		case r.PassesFinished < r.PassesStarted:
			state = fmt.Sprintf("did not finish: %d of %d passes recorded no outcome", r.PassesStarted-r.PassesFinished, r.PassesStarted)
		}
		fmt.Fprintf(c.stdout, "run of %s (reserved by %s): %s\n", r.RunDate, r.ReservedBy, state)
		fmt.Fprintf(c.stdout, "  claimed %d, resolved %d, dismissed %d, marked overdue %d, kept open %d, exhausted %d, failed %d, unknown %d\n",
			r.Claimed, r.Resolved, r.Dismissed, r.MarkedOverdue, r.KeptOpen, r.Exhausted, r.Failed, r.Unknown)
		for _, f := range r.Failures {
			what := "the pass itself"
			if f.ConflictID != "" {
				what = fmt.Sprintf("%s attempt %d", f.ConflictID, f.Attempt)
			}
			fmt.Fprintf(c.stdout, "  failure: %s: %s\n", what, f.Error)
		}
	}
	if page.NextAfter != "" {
		fmt.Fprintf(c.stdout, "(more runs: raise --limit)\n")
	}
}

func (c *cli) reviewList(ctx context.Context, args []string) error {
	s := c.sub("review list", "")
	team := s.require("team", "the team")
	limit := s.fs.Int("limit", 100, "the most cases listed")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	page, err := client.ListConflicts(ctx, host(*team), densemem.ListConflictsRequest{Limit: *limit})
	if err != nil {
		return err
	}
	return c.print(page, func() { c.printCases(page, "no open or overdue conflict cases") })
}

// printCases prints a page of cases, or none when there is none.
func (c *cli) printCases(page *densemem.ListConflictsResponse, none string) {
	if len(page.Conflicts) == 0 {
		fmt.Fprintln(c.stdout, none)
		return
	}
	for _, cs := range page.Conflicts {
		c.printCaseLine(cs)
	}
	if page.NextAfter != "" {
		fmt.Fprintf(c.stdout, "(more cases: raise --limit)\n")
	}
}

func (c *cli) caseList(ctx context.Context, args []string) error {
	s := c.sub("case list", "")
	team := s.require("team", "the team")
	limit := s.fs.Int("limit", 100, "the most cases listed")
	statuses := s.fs.String("status", "open,overdue", "comma-separated statuses, of: open, overdue, resolved, dismissed")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	page, err := client.ListConflicts(ctx, host(*team), densemem.ListConflictsRequest{Limit: *limit, Status: split(*statuses)})
	if err != nil {
		return err
	}
	return c.print(page, func() { c.printCases(page, "no cases of status "+*statuses) })
}

func (c *cli) reviewItems(ctx context.Context, args []string) error {
	s := c.sub("review items", "")
	team := s.require("team", "the team")
	profile := s.fs.String("profile", "", "only this profile's items (default: every profile's)")
	status := s.fs.String("status", densemem.ReviewItemStatusOpen, "open, resolved or superseded")
	limit := s.fs.Int("limit", 100, "the most items listed")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	page, err := client.ListReviewItems(ctx, host(*team), densemem.ListReviewItemsRequest{Status: *status,
		ProfileID: densemem.ProfileID(*profile), Limit: *limit})
	if err != nil {
		return err
	}
	return c.print(page, func() {
		if len(page.ReviewItems) == 0 {
			fmt.Fprintf(c.stdout, "no %s review items\n", *status)
			return
		}
		for _, it := range page.ReviewItems {
			fmt.Fprintf(c.stdout, "%s  %s  %s  profile %s, ingest %s, item %s\n", it.Status, it.ReviewID, it.Kind,
				it.ProfileID, it.IngestID, it.PlacementItemID)
			if it.Prompt != nil {
				fmt.Fprintf(c.stdout, "    %s\n", it.Prompt.Question)
				for _, ch := range it.Prompt.Choices {
					fmt.Fprintf(c.stdout, "    - %s\n", ch.Action)
				}
			}
		}
		if page.NextAfter != "" {
			fmt.Fprintf(c.stdout, "(more items: raise --limit)\n")
		}
	})
}

// printCaseLine prints one case of a list: status, ID, subject and key, deadline, positions.
func (c *cli) printCaseLine(cs densemem.ConflictCase) {
	fmt.Fprintf(c.stdout, "%-8s %s  %s  due %s  v%d\n", cs.Status, cs.ConflictID, caseKey(cs), stamp(cs.ReviewDueAt), cs.Version)
	for _, p := range cs.Positions {
		fmt.Fprintf(c.stdout, "         %s  owners %s, %d counted source group(s)\n", positionName(cs, p),
			profiles(p.OwnerProfileIDs), p.CountedSourceGroups)
	}
}

// caseKey names what a case is about: the subject, predicate and scope, or the identity.
func caseKey(cs densemem.ConflictCase) string {
	if cs.Kind == "identity_correction" {
		return fmt.Sprintf("identity of %q (%s)", cs.Subject.Name, cs.Subject.EntityID)
	}
	key := fmt.Sprintf("%q %s", cs.Subject.Name, cs.Predicate)
	if cs.Scope != "" {
		key += fmt.Sprintf(" (scope %q)", cs.Scope)
	}
	return key
}

// positionName names a position: its object (or identity), negated when its polarity is "-".
func positionName(cs densemem.ConflictCase, p densemem.RecallPosition) string {
	if cs.Kind == "identity_correction" {
		return fmt.Sprintf("identity %q (%s)", p.Object.Name, p.Object.EntityID)
	}
	name := fmt.Sprintf("%q", p.Object.Name)
	if p.Polarity == "-" {
		name = "not " + name
	}
	return name
}

// profiles joins profile IDs.
func profiles(ids []densemem.ProfileID) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return strings.Join(out, ", ")
}

// stamp formats an instant for a person: UTC to the minute.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }

// printJSON prints v as indented JSON.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }

func (m *multi) Set(v string) error {
	*m = append(*m, v)
	return nil
}

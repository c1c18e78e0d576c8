package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/densemem/densemem"
)

// Reading what happened: a relationship's trace and a conflict case, for a person (or --json).

// maxEventPages bounds the pages of a case's events the case command reads through Trace.
const maxEventPages = 20

func (c *cli) trace(ctx context.Context, args []string) error {
	s := c.sub("trace", "RELATIONSHIP_ID")
	team := s.require("team", "the team")
	limit := s.fs.Int("limit", 0, "the most items per list (0: the library's default)")
	pos, client, done, err := s.open(ctx, args, 1)
	if err != nil {
		return err
	}
	defer done()
	tr, err := client.Trace(ctx, host(*team), densemem.TraceRequest{RelationshipID: densemem.RelationshipID(pos[0]),
		IncludeEvidenceContent: true, IncludeVerification: true, IncludeTransitions: true, Limit: *limit})
	if err != nil {
		return err
	}
	return c.print(tr, func() { c.printTrace(tr) })
}

// printTrace prints a trace for a person: the relationship, its evidence, transitions,
// cross-references and cases.
func (c *cli) printTrace(tr *densemem.TraceResult) {
	r := tr.Relationship
	fmt.Fprintf(c.stdout, "relationship %s, version %d, owned by %s\n", r.RelationshipID, r.Version, r.OwnerProfileID)
	fmt.Fprintf(c.stdout, "  %s\n", statement(r.RelationshipSummary))
	fmt.Fprintf(c.stdout, "  status %s, tier %s, valid %s .. %s, %d independent source group(s)\n", r.Status, r.Tier,
		optStamp(r.ValidFrom), optStamp(r.ValidTo), r.SourceCount)
	fmt.Fprintf(c.stdout, "evidence (%d):\n", len(tr.Evidence))
	for _, e := range tr.Evidence {
		fmt.Fprintf(c.stdout, "  %s by %s, %s, group %q: %q\n", e.FragmentID, e.AuthorProfileID, e.Authority, e.SourceGroup, e.Excerpt)
	}
	fmt.Fprintf(c.stdout, "transitions (%d):\n", len(tr.Transitions))
	for _, t := range tr.Transitions {
		from := "(new)"
		if t.FromStatus != "" {
			from = fmt.Sprintf("%s/%s", t.FromStatus, t.FromTier)
		}
		fmt.Fprintf(c.stdout, "  v%d %s -> %s/%s, valid_to %s: %s, by %s\n", t.ToVersion, from, t.ToStatus, t.ToTier,
			optStamp(t.ToValidTo), t.Reason, actor(t.ActorKind, t.ActorProfileID))
	}
	fmt.Fprintf(c.stdout, "cross-references (%d):\n", len(tr.CrossReferences))
	for _, x := range tr.CrossReferences {
		other, verb := x.ToRelationshipID, "to"
		if x.Direction == "incoming" {
			other, verb = x.FromRelationshipID, "from"
		}
		fmt.Fprintf(c.stdout, "  %s %s %s %s (by %s)\n", x.Direction, x.Kind, verb, other, x.AuthorProfileID)
	}
	fmt.Fprintf(c.stdout, "conflict cases (%d):\n", len(tr.Conflicts))
	for _, cs := range tr.Conflicts {
		fmt.Fprintf(c.stdout, "  %s %s, %s, version %d\n", cs.ConflictID, cs.Kind, cs.Status, cs.Version)
	}
	for _, t := range tr.Truncated {
		fmt.Fprintf(c.stdout, "(list %s has more than the %d shown: raise --limit or use --json and the library's cursors)\n",
			t.List, t.Returned)
	}
}

func (c *cli) showCase(ctx context.Context, args []string) error {
	s := c.sub("case", "CONFLICT_ID")
	team := s.require("team", "the team")
	pos, client, done, err := s.open(ctx, args, 1)
	if err != nil {
		return err
	}
	defer done()
	cs, err := client.Conflict(ctx, host(*team), pos[0])
	if err != nil {
		return err
	}
	events, err := caseEvents(ctx, client, host(*team), cs)
	if err != nil {
		return err
	}
	return c.print(struct {
		*densemem.ConflictCase
		Events []densemem.TraceConflictEvent `json:"events"`
	}{cs, events}, func() { c.printCase(cs, events) })
}

// caseEvents reads a case's events through Trace of one of its members (the events of a case
// without current members, a dismissed one, are read through the relationship its first event
// names is not possible here: such a case shows none).
func caseEvents(ctx context.Context, client *densemem.Client, p densemem.Principal, cs *densemem.ConflictCase) ([]densemem.TraceConflictEvent, error) {
	var member densemem.RelationshipID
	for _, pos := range cs.Positions {
		if len(pos.RelationshipIDs) > 0 {
			member = pos.RelationshipIDs[0]
			break
		}
	}
	if member == "" {
		return nil, nil
	}
	var out []densemem.TraceConflictEvent
	after := map[string]string{}
	for range maxEventPages {
		tr, err := client.Trace(ctx, p, densemem.TraceRequest{RelationshipID: member, After: after})
		if err != nil {
			return nil, err
		}
		for _, tc := range tr.Conflicts {
			if tc.ConflictID == cs.ConflictID {
				out = append(out, tc.Events...)
			}
		}
		next := ""
		for _, t := range tr.Truncated {
			if t.List == densemem.TraceConflictEventsList(cs.ConflictID) {
				next = t.NextAfter
			}
		}
		if next == "" {
			return out, nil
		}
		after[densemem.TraceConflictEventsList(cs.ConflictID)] = next
	}
	return out, nil
}

// printCase prints a case for a person: its state, key, deadlines, positions, question and events.
func (c *cli) printCase(cs *densemem.ConflictCase, events []densemem.TraceConflictEvent) {
	fmt.Fprintf(c.stdout, "case %s (%s): %s, version %d, policy version %d\n", cs.ConflictID, cs.Kind, cs.Status, cs.Version,
		cs.PolicyVersion)
	fmt.Fprintf(c.stdout, "  about %s\n", caseKey(*cs))
	fmt.Fprintf(c.stdout, "  opened %s, review due %s, next review %s\n", stamp(cs.OpenedAt), stamp(cs.ReviewDueAt),
		stamp(cs.NextReviewAt))
	if cs.ResolvedAt != nil {
		fmt.Fprintf(c.stdout, "  resolved %s, effective at %s (%s), preferred position %s\n", optStamp(cs.ResolvedAt),
			optStamp(cs.EffectiveAt), cs.EffectiveTimeBasis, cs.PreferredPositionID)
	}
	fmt.Fprintf(c.stdout, "positions (%d):\n", len(cs.Positions))
	for _, p := range cs.Positions {
		ids := make([]string, len(p.RelationshipIDs))
		for i, id := range p.RelationshipIDs {
			ids[i] = string(id)
		}
		fmt.Fprintf(c.stdout, "  %s %s: owners %s, %d counted source group(s), relationships %s\n", p.PositionID,
			positionName(*cs, p), profiles(p.OwnerProfileIDs), p.CountedSourceGroups, strings.Join(ids, ", "))
		for _, e := range p.Evidence {
			fmt.Fprintf(c.stdout, "    %q by %s\n", e.Excerpt, e.AuthorProfileID)
		}
	}
	if cs.Question != "" {
		fmt.Fprintf(c.stdout, "question: %s\n", cs.Question)
	}
	fmt.Fprintf(c.stdout, "events (%d):\n", len(events))
	for _, e := range events {
		prior := "(new)"
		if e.PriorStatus != "" {
			prior = e.PriorStatus
		}
		fmt.Fprintf(c.stdout, "  v%d %s -> %s: %s, by %s, policy v%d, %s\n", e.CaseVersion, prior, e.ResultingStatus, e.Reason,
			actor(e.ActorKind, e.ActorProfileID), e.PolicyVersion, stamp(e.CreatedAt))
	}
}

// statement reads a relationship summary as a sentence.
func statement(r densemem.RelationshipSummary) string {
	s := fmt.Sprintf("%q %s %q", r.Subject.Name, r.Predicate, r.Object.Name)
	if r.Polarity == "-" {
		s = "not: " + s
	}
	if r.Scope != "" {
		s += fmt.Sprintf(" (scope %q)", r.Scope)
	}
	return s
}

// actor names who acted: a profile, the nightly reviewer, or the system.
func actor(kind string, profile densemem.ProfileID) string {
	if kind == "profile" {
		return "profile " + string(profile)
	}
	return kind
}

// optStamp formats an optional instant; "-" when unset.
func optStamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/golden"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/store/postgres"
)

// clock is the tests' injected clock: it moves only when a test says so.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// harness runs the command in-process against one fresh database, with the injected clock.
type harness struct {
	t     *testing.T
	url   string
	clock *clock
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, url: testdb.NewHostURL(t), clock: &clock{t: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}}
}

// run runs the command line args and returns its output and exit status.
func (h *harness) run(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	// A server "answers" on 127.0.0.1:5432, so that no test starts a private one by chance.
	c := &cli{stdout: &out, stderr: &errOut, now: h.clock.now, localServer: func(context.Context) bool { return true }, getenv: func(k string) string {
		if k == envDatabaseURL {
			return h.url
		}
		return ""
	}}
	code = c.run(context.Background(), args)
	return out.String(), errOut.String(), code
}

// must runs args, fails the test unless it exits 0, and returns its output trimmed.
func (h *harness) must(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.run(args...)
	if code != exitOK {
		h.t.Fatalf("densemem %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return strings.TrimSpace(out)
}

// client is a library client on the harness's database, for what the command does not do
// (remembering), with the same clock.
func (h *harness) client() *densemem.Client {
	h.t.Helper()
	st, err := postgres.Open(context.Background(), h.url, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(st.Close)
	client, err := densemem.New(st, &densemem.Config{Clock: h.clock.now})
	if err != nil {
		h.t.Fatal(err)
	}
	return client
}

// staleTeam provisions a team through the command and tells the specification's stale team story
// through the library: A's main, B's dated correction to release, C's confirmation. It returns the
// team, A's relationship and the case.
func (h *harness) staleTeam() (team, a1, conflictID string) {
	h.t.Helper()
	team = h.must("team", "create", "--name", "acme")
	h.must("predicate", "register", "--team", team, "--key", "deploys_from", "--kind", "state", "--cardinality", "one",
		"--aliases", "deploys from", "--subject-kinds", "environment", "--object-kinds", "git_branch",
		"--description", "the branch an environment deploys from")
	profiles := map[string]densemem.Principal{}
	for _, name := range []string{"A", "B", "C"} {
		id := h.must("profile", "create", "--team", team, "--name", name)
		profiles[name] = densemem.Principal{TeamID: densemem.TeamID(team), ProfileID: densemem.ProfileID(id)}
	}
	client := h.client()
	remember := func(p densemem.Principal, content, branch string, from *time.Time) densemem.RelationshipOutcome {
		pl, err := client.Remember(context.Background(), p, densemem.RememberRequest{IdempotencyKey: content,
			Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
			Proposal: densemem.Proposal{
				Entities: []densemem.ProposedEntity{{Ref: "e", Name: "production", EntityKind: "environment"},
					{Ref: "b", Name: branch, EntityKind: "git_branch"}},
				Relationships: []densemem.ProposedRelationship{{ProposalID: "p", SubjectRef: "e", Predicate: "deploys from",
					ObjectRef: "b", ValidFrom: from, Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}},
			}})
		if err != nil {
			h.t.Fatal(err)
		}
		return pl.RelationshipOutcomes[0]
	}
	a := remember(profiles["A"], "Production deploys from main.", "main", nil)
	h.clock.set(h.clock.now().Add(24 * time.Hour))
	cutoff := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	b := remember(profiles["B"], "Since 2026-05-01 production deploys from release.", "release", &cutoff)
	h.clock.set(h.clock.now().Add(time.Hour))
	remember(profiles["C"], "Ops checked: since 2026-05-01 production deploys from release.", "release", &cutoff)
	if b.Conflict == nil {
		h.t.Fatalf("B's correction opened no case: %+v", b)
	}
	return team, string(a.RelationshipID), b.Conflict.ConflictID
}

// generatedID matches the IDs the library generates.
var generatedID = regexp.MustCompile(`\b[a-z]+_[0-9a-hjkmnp-tv-z]{26}\b`)

// redact replaces every generated ID by a stable name in order of first appearance (<team_1>,
// <rel_1>, …), so a golden file does not depend on the run.
func redact(out string, names map[string]string) string {
	return generatedID.ReplaceAllStringFunc(out, func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		prefix, _, _ := strings.Cut(id, "_")
		count := 1
		for _, n := range names {
			if strings.HasPrefix(n, "<"+prefix+"_") {
				count++
			}
		}
		names[id] = fmt.Sprintf("<%s_%d>", prefix, count)
		return names[id]
	})
}

// TestReviewAndCaseGolden: review list, case and review run print what an operator needs, the same on
// every run: the case before the deadline, the nightly pass after it, the resolved case.
func TestReviewAndCaseGolden(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	team, a1, conflictID := h.staleTeam()
	names := map[string]string{}
	var story strings.Builder
	step := func(title string, args ...string) {
		out, errOut, code := h.run(args...)
		fmt.Fprintf(&story, "$ densemem %s\n%s%s(exit %d)\n\n", redact(strings.Join(args, " "), names), redact(out, names),
			redact(errOut, names), code)
		_ = title
	}
	step("list", "review", "list", "--team", team)
	step("case", "case", "--team", team, conflictID)
	h.clock.set(time.Date(2026, 6, 10, 2, 0, 0, 0, time.UTC))
	step("run", "review", "run")
	step("case after", "case", "--team", team, conflictID)
	step("list after", "review", "list", "--team", team)
	step("trace", "trace", "--team", team, a1)
	golden.Check(t, "review", []byte(story.String()))
}

// TestAdministration: migrations status, profiles, policies and predicates through the command.
func TestAdministration(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if out := h.must("migrate", "up"); !strings.Contains(out, "schema at migration") {
		t.Errorf("migrate up: %q", out)
	}
	if out := h.must("migrate", "status"); !strings.Contains(out, "0 pending") || !strings.Contains(out, "00001_foundation.sql") {
		t.Errorf("migrate status: %q", out)
	}
	team := h.must("team", "create", "--name", "acme")
	profile := h.must("profile", "create", "--team", team, "--name", "A", "--scopes", "read,write")
	if out := h.must("policy", "show", "--team", team); !strings.Contains(out, "policy version 1") {
		t.Errorf("policy show: %q", out)
	}
	if out := h.must("policy", "set", "--team", team, "--version", "1", "--review-ttl", "72h", "--authoritative", profile); !strings.Contains(out, "policy version 2") || !strings.Contains(out, profile) {
		t.Errorf("policy set: %q", out)
	}
	if _, errOut, code := h.run("policy", "set", "--team", team, "--version", "1", "--time-zone", "Europe/Berlin"); code != exitFailed || !strings.Contains(errOut, "stale") {
		t.Errorf("policy set from a replaced version: exit %d, %q; want a failure naming the stale version", code, errOut)
	}
	if out := h.must("profile", "disable", "--team", team, "--profile", profile); !strings.Contains(out, "disabled") {
		t.Errorf("profile disable: %q", out)
	}
	if out := h.must("predicate", "register", "--team", team, "--key", "works on", "--cardinality", "many"); !strings.Contains(out, "works_on v1") {
		t.Errorf("predicate register: %q", out)
	}
}

// TestUsage: every subcommand has --help, and mistakes exit 2 with a message naming them.
func TestUsage(t *testing.T) {
	t.Parallel()
	h := &harness{t: t, url: "", clock: &clock{}}
	for _, cmd := range commands {
		out, errOut, code := h.run(append(strings.Fields(cmd.name), "--help")...)
		if code != exitOK || !strings.Contains(out+errOut, "Usage: densemem "+cmd.name) {
			t.Errorf("%s --help: exit %d, %q", cmd.name, code, out+errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"team", "create"}, "--name required"},
		{[]string{"trace", "--team", "t"}, "want 1 argument"},
		{[]string{"review", "list", "--team", "t", "--bogus"}, "flag provided but not defined"},
		{[]string{"team", "create", "--name", "x"}, "no database"},
	} {
		_, errOut, code := h.run(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit %d mentioning %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}

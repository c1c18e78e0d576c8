package densemem_test

// Generated sequences of public calls (issue 20, item 2). For many seeds, a random list of steps —
// Remember (undated, dated with a valid_from the verifier confirms or not, negative, pending,
// scoped, from versioned sources, exact duplicates), Resolve of random open items with random offered
// actions, Forget, late Split and Merge of the caller's own observations, source revisions, privacy
// erasure, clock moves and nightly reviews — is applied by profiles A, B and C to a small universe
// (one or two environments and three branches under deploys_from, two people and two projects under
// works_on), so statements collide often. After every step the rules of the issue are checked
// through the public API (one function per rule, named after it); on failure the seed, the run's log
// and a shrunk step list ready to paste into a regression test are printed.
//
// Default run: part of `go test -race -count=1 ./...` (12 seeds × 60 steps).
// Long run:    DENSEMEM_SEQUENCE_SEEDS=200 DENSEMEM_SEQUENCE_STEPS=60 \
//                go test -race -count=1 -timeout 0 -run 'TestSequences' -v .
// One seed:    DENSEMEM_SEQUENCE_SEED=17 go test -race -count=1 -run 'TestSequences_RandomCallsKeepEveryRule' -v .
//              (or -run 'TestSequences_RandomCallsKeepEveryRule/seed=17$' within the default seeds)
// Shrinking:   one failing seed at a time; DENSEMEM_SEQUENCE_SHRINK=N bounds its candidate runs (default
//              150; 0: off), DENSEMEM_SEQUENCE_SHRINK_SECONDS the time from the start of the test after which
//              no seed shrinks any more (default 150): later failures print their failing prefix.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/testdb"
)

// ---- steps: what a sequence does, as data that prints as Go and replays ----

// seqOp names the kind of a step.
type seqOp string

// The kinds of steps.
const (
	// opRemember: Who states "Subject <predicate> Object" (deploys_from for an environment, works_on
	// for a person), dated Since when set (the evidence states the date unless Unconfirmed), negative,
	// pending (the evidence omits the object), in Scope, from Source or in Group as the step says.
	opRemember seqOp = "remember"
	// opRevise: the owner of Source (Who unless AsOwner) states a new revision of it, naming the one
	// it replaces, with a statement as opRemember's. A non-owner's revision must be refused.
	opRevise seqOp = "revise"
	// opResolve: the owner of the open item Pick answers it with the Choice-th of the choices the
	// item offers (seqChoices). Foreign: another profile answers (ErrNotOwner); Bad: the request
	// names an action the item does not offer (a *ValidationError).
	opResolve seqOp = "resolve"
	// opResolveClosed: the owner of the closed (resolved or superseded) item Pick answers it again;
	// it must be refused with ErrStaleDecision.
	opResolveClosed seqOp = "resolve_closed"
	// opForget: Who forgets its live relationship Pick (Foreign: another profile's, ErrNotOwner).
	opForget seqOp = "forget"
	// opSplit: Who splits some of its observations on Subject off to a new entity.
	opSplit seqOp = "split"
	// opMerge: Who merges some of its observations on Subject into Into (same kind).
	opMerge seqOp = "merge"
	// opErase: the profile with the erasure scope erases the Pick-th fragment not erased yet.
	opErase seqOp = "erase"
	// opClock: the clock moves Days days and Minutes minutes.
	opClock seqOp = "clock"
	// opNightly: the clock moves Days days, then the nightly Conflict review runs.
	opNightly seqOp = "nightly"
	// opDrain: every open item is answered in turn, the choice rotating from Choice.
	opDrain seqOp = "drain"
)

// seqStep is one step of a sequence. Which item, relationship, observation or fragment it acts on
// is chosen when it runs (Pick, Choice modulo what exists then), so a step list replays, and a
// shorter one still runs, on a fresh database.
type seqStep struct {
	Op          seqOp
	Who         string // "A", "B" or "C"
	Subject     string // "production", "staging", "Ada", "Bob"
	Object      string // "main", "release", "develop", "Atlas", "Billing"
	Since       string // a valid_from (YYYY-MM-DD); "" undated
	Unconfirmed bool   // the evidence does not state Since, so the verifier cannot confirm it
	Negative    bool
	Pending     bool   // the evidence does not name the object: the verifier finds it insufficient
	Scope       string // a statement's scope
	Source      string // the versioned source the evidence comes from
	Group       string // the evidence's source group label
	AsOwner     bool   // revise as the source's owner, whoever Who is
	Into        string // merge target
	Pick        int
	Choice      int
	Foreign     bool // act on another profile's item or relationship
	Bad         bool // send a request the item must refuse with a *ValidationError
	Days        int
	Minutes     int
}

// GoString prints the step as a Go composite literal of its non-zero fields, so a shrunk list can be
// pasted into a regression test.
func (s seqStep) GoString() string {
	var b strings.Builder
	b.WriteString("{Op: ")
	b.WriteString(map[seqOp]string{opRemember: "opRemember", opRevise: "opRevise", opResolve: "opResolve",
		opResolveClosed: "opResolveClosed", opForget: "opForget", opSplit: "opSplit", opMerge: "opMerge",
		opErase: "opErase", opClock: "opClock", opNightly: "opNightly", opDrain: "opDrain"}[s.Op])
	str := func(name, v string) {
		if v != "" {
			fmt.Fprintf(&b, ", %s: %q", name, v)
		}
	}
	flag := func(name string, v bool) {
		if v {
			fmt.Fprintf(&b, ", %s: true", name)
		}
	}
	num := func(name string, v int) {
		if v != 0 {
			fmt.Fprintf(&b, ", %s: %d", name, v)
		}
	}
	str("Who", s.Who)
	str("Subject", s.Subject)
	str("Object", s.Object)
	str("Since", s.Since)
	flag("Unconfirmed", s.Unconfirmed)
	flag("Negative", s.Negative)
	flag("Pending", s.Pending)
	str("Scope", s.Scope)
	str("Source", s.Source)
	str("Group", s.Group)
	flag("AsOwner", s.AsOwner)
	str("Into", s.Into)
	num("Pick", s.Pick)
	num("Choice", s.Choice)
	flag("Foreign", s.Foreign)
	flag("Bad", s.Bad)
	num("Days", s.Days)
	num("Minutes", s.Minutes)
	b.WriteString("}")
	return b.String()
}

// goSource prints steps as the body of a regression test.
func goSource(steps []seqStep) string {
	var b strings.Builder
	b.WriteString("\tcheckSequence(t, []seqStep{\n")
	for _, s := range steps {
		fmt.Fprintf(&b, "\t\t%#v,\n", s)
	}
	b.WriteString("\t})\n")
	return b.String()
}

// ---- the universe and the generator ----

var (
	seqProfiles     = []string{"A", "B", "C"}
	seqEnvironments = []string{"production", "staging"}
	seqBranches     = []string{"main", "release", "develop"}
	seqPeople       = []string{"Ada", "Bob"}
	seqProjects     = []string{"Atlas", "Billing"}
	// seqDates are the valid_from instants statements and decisions use: few, so dated statements
	// collide, some later and some earlier than each other.
	seqDates   = []string{"2025-01-10", "2025-01-20", "2025-02-01", "2025-03-01"}
	seqSources = []string{"doc:alpha", "doc:beta"}
	seqGroups  = []string{"runbook", "chat", "ticket"}
)

// seqChoice is one answer a Resolve step may give an item that offers its action: the decision as
// it travels on the wire (a JSON template whose {from} is the step's Since, {to} the next of
// seqDates after it or 30 days later, and {scope} a scope other than the statement's),
// whether the user's evidence stating the item's relationship comes with it, whether it is a
// correction (evidence and a proposal), and the request fields a *ValidationError may name when the
// item refuses the answer on its merits (besides ErrStaleDecision, which any answer may meet).
type seqChoice struct {
	name       string
	action     string
	decision   string
	evidence   bool
	correction bool
	refusable  []string
	// restates: the answer places the item's observation again, citing its evidence, so it is
	// refused with ErrErased once an erasure redacted that evidence.
	restates bool
}

// seqChoices are the answers Resolve steps give; adding an answer is one line. They include
// both_valid in a scope or in a time (valid_from, valid_to or both: refused with a *ValidationError
// naming them when the time overlaps the prior's) and the hold choices with the user's evidence
// (issue 20, items 3 and 4).
var seqChoices = []seqChoice{
	{name: "supersede_prior", action: densemem.ActionSupersedePrior},
	{name: "keep_prior_reject_new", action: densemem.ActionKeepPriorRejectNew},
	{name: "both_valid_in_scope", action: densemem.ActionBothValid, decision: `{"scope": "{scope}"}`, restates: true},
	{name: "both_valid_from", action: densemem.ActionBothValid, decision: `{"valid_from": "{from}"}`, restates: true,
		refusable: []string{"decision", "decision.valid_from", "decision.valid_to"}},
	{name: "both_valid_interval", action: densemem.ActionBothValid, decision: `{"valid_from": "{from}", "valid_to": "{to}"}`,
		restates: true, refusable: []string{"decision", "decision.valid_from", "decision.valid_to"}},
	{name: "both_valid_until", action: densemem.ActionBothValid, decision: `{"valid_to": "{from}"}`, restates: true,
		refusable: []string{"decision", "decision.valid_from", "decision.valid_to"}},
	{name: "correct", action: densemem.ActionCorrect, correction: true},
	{name: "reject", action: densemem.ActionReject},
	{name: "forget", action: densemem.ActionForget},
	{name: "add_evidence", action: densemem.ActionAddEvidence, evidence: true},
	{name: "accept_with_evidence", action: densemem.ActionAccept, evidence: true},
	{name: "accept", action: densemem.ActionAccept},
	{name: "supersede_prior_with_evidence", action: densemem.ActionSupersedePrior, evidence: true},
	{name: "keep_prior_reject_new_with_evidence", action: densemem.ActionKeepPriorRejectNew, evidence: true},
	{name: "reject_with_evidence", action: densemem.ActionReject, evidence: true},
	{name: "forget_with_evidence", action: densemem.ActionForget, evidence: true},
}

// generateSequence returns the steps of seed: n random steps, then a drain of the open items.
func generateSequence(seed uint64, n int) []seqStep {
	g := seqGenerator{rng: rand.New(rand.NewPCG(seed, 0x73657175656e6365))}
	g.envs = seqEnvironments[:1+g.rng.IntN(len(seqEnvironments))]
	steps := make([]seqStep, 0, n+1)
	for range n {
		steps = append(steps, g.next())
	}
	return append(steps, seqStep{Op: opDrain, Choice: g.rng.IntN(len(seqChoices))})
}

// seqGenerator draws steps.
type seqGenerator struct {
	rng        *rand.Rand
	envs       []string
	remembered []seqStep
}

func (g *seqGenerator) pick(from []string) string { return from[g.rng.IntN(len(from))] }

func (g *seqGenerator) percent(p int) bool { return g.rng.IntN(100) < p }

// next draws one step: remember 41%, resolve 22%, forget 6%, revise 6%, nightly 6%, clock 5%, merge
// 4%, erase 4%, split 3%, a closed item answered again 2%, a drain 1%.
func (g *seqGenerator) next() seqStep {
	who := g.pick(seqProfiles)
	switch r := g.rng.IntN(100); {
	case r < 22:
		return seqStep{Op: opResolve, Pick: g.rng.IntN(64), Choice: g.rng.IntN(64), Since: g.pick(seqDates),
			Object: g.pick(seqBranches), Foreign: g.percent(3), Bad: g.percent(4)}
	case r < 24:
		return seqStep{Op: opResolveClosed, Pick: g.rng.IntN(64)}
	case r < 30:
		return seqStep{Op: opForget, Who: who, Pick: g.rng.IntN(64), Foreign: g.percent(10)}
	case r < 36:
		s := g.statement(who)
		s.Op, s.Source, s.AsOwner, s.Group = opRevise, g.pick(seqSources), g.percent(85), ""
		return s
	case r < 42:
		return seqStep{Op: opNightly, Days: 1 + g.rng.IntN(9)}
	case r < 47:
		return seqStep{Op: opClock, Days: g.rng.IntN(3), Minutes: g.rng.IntN(120)}
	case r < 51:
		return g.merge(who)
	case r < 55:
		return seqStep{Op: opErase, Pick: g.rng.IntN(64)}
	case r < 58:
		subjects := g.envs
		if g.percent(25) {
			subjects = seqPeople
		}
		return seqStep{Op: opSplit, Who: who, Subject: g.pick(subjects), Pick: g.rng.IntN(64)}
	case r < 59:
		return seqStep{Op: opDrain, Choice: g.rng.IntN(len(seqChoices))}
	}
	// An exact duplicate of an earlier statement, usually by the same profile.
	if len(g.remembered) > 0 && g.percent(22) {
		s := g.remembered[g.rng.IntN(len(g.remembered))]
		if g.percent(20) {
			s.Who = who
		}
		g.remembered = append(g.remembered, s)
		return s
	}
	s := g.statement(who)
	g.remembered = append(g.remembered, s)
	return s
}

// statement draws a Remember step: deploys_from 85%, works_on 15%.
func (g *seqGenerator) statement(who string) seqStep {
	s := seqStep{Op: opRemember, Who: who, Subject: g.pick(g.envs), Object: g.pick(seqBranches)}
	if g.percent(15) {
		s.Subject, s.Object = g.pick(seqPeople), g.pick(seqProjects)
	}
	if g.percent(45) {
		s.Since, s.Unconfirmed = g.pick(seqDates), g.percent(20)
	}
	s.Negative = g.percent(8)
	s.Pending = !s.Negative && g.percent(8)
	if g.percent(8) {
		s.Scope = "canary"
	}
	switch {
	case g.percent(20):
		s.Source = g.pick(seqSources)
	case g.percent(35):
		s.Group = g.pick(seqGroups)
	}
	return s
}

// merge draws a Merge step of two entities of one kind: the two environments, two branches or the
// two people.
func (g *seqGenerator) merge(who string) seqStep {
	kinds := [][]string{seqBranches, seqPeople}
	if len(g.envs) > 1 {
		kinds = append(kinds, g.envs)
	}
	names := kinds[g.rng.IntN(len(kinds))]
	i := g.rng.IntN(len(names))
	j := (i + 1 + g.rng.IntN(len(names)-1)) % len(names)
	return seqStep{Op: opMerge, Who: who, Subject: names[i], Into: names[j], Pick: g.rng.IntN(64)}
}

// ---- the rules ----

// The rules checked after every step (issue 20, item 2), and the one every call keeps.
const (
	ruleOneCurrentValue       = "one current value per owner and key"
	ruleOwnRowsOnly           = "no call changes another profile's relationship"
	ruleRefusalWritesNothing  = "a refused call changes nothing"
	ruleItemsAnswerable       = "every open item is answerable or refused as stale"
	ruleHeldAsksItsQuestion   = "every held statement has one open item asking about the state that is"
	ruleRecallCurrentOnly     = "Recall's current view is exactly the current relationships"
	ruleEvidenceBehindCurrent = "every current relationship has effective evidence in Trace"
	ruleCallsSucceed          = "calls fail only where the sequence provoked it"
)

// seqViolation is one broken rule, at a step.
type seqViolation struct {
	step   int // 1-based
	rule   string
	detail string
}

func (v seqViolation) String() string {
	return fmt.Sprintf("step %d broke %q: %s", v.step, v.rule, v.detail)
}

// violationsText lists violations, one a line.
func violationsText(vs []seqViolation) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	return strings.Join(out, "\n")
}

// ---- one run ----

// seqRun is what one run of a step list did: its log, the violations that stopped it, and counts of
// what happened, for the coverage summary.
type seqRun struct {
	log        []string
	violations []seqViolation
	stats      map[string]int
	// acted marks the steps (1-based) that made a call; the others found nothing to act on.
	acted map[int]bool
	// canon are the steps run, each with the Pick and Choice it used.
	canon []seqStep
}

// brokenRule is the rule of the run's first violation, "" when it kept every rule.
func (r *seqRun) brokenRule() string {
	if len(r.violations) == 0 {
		return ""
	}
	return r.violations[0].rule
}

// scopedTB is a testing.TB whose cleanups run when the run that made them ends rather than when the
// test does, so shrinking (many runs, each on a database of its own) holds one database at a time.
// Every other method is the test's.
type scopedTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

// Cleanup registers f to run when the run ends.
func (s *scopedTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// close runs the cleanups, last registered first.
func (s *scopedTB) close() {
	s.mu.Lock()
	fs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}

// runSequence applies steps to a fresh database, checking every rule after each, and stops at the
// first step that breaks one. A failure of the test database itself fails tb.
func runSequence(tb testing.TB, steps []seqStep) *seqRun { return runSequenceOn(tb, nil, steps) }

// runSequenceOn is runSequence on a fresh team (with its own profiles, vocabulary, client and clock)
// of the database behind pool, or of a fresh database when pool is nil.
func runSequenceOn(tb testing.TB, pool *pgxpool.Pool, steps []seqStep) *seqRun {
	scope := &scopedTB{TB: tb}
	defer scope.close()
	w := newSeqWorld(scope, pool)
	for i, s := range steps {
		w.run(i+1, s)
		if len(w.violations) > 0 {
			break
		}
	}
	return &seqRun{log: w.log, violations: w.violations, stats: w.stats, acted: w.acted, canon: w.canon}
}

// checkSequence runs steps and fails t with the run's log when a rule breaks: the body of a
// regression test pasted from a shrunk failure.
func checkSequence(t *testing.T, steps []seqStep) {
	t.Helper()
	run := runSequence(t, steps)
	if len(run.violations) > 0 {
		t.Errorf("%s\nrun:\n  %s", violationsText(run.violations), strings.Join(run.log, "\n  "))
	}
}

// seqWorld is one run's state: the env, the principals by name, what the calls reported (entities,
// fragments, sources), the state read after the last step, and the violations found.
type seqWorld struct {
	t      testing.TB
	e      *env
	actors map[string]densemem.Principal
	names  map[densemem.ProfileID]string
	// entities are the entity IDs placements, splits and merges reported, by name.
	entities map[string]densemem.EntityID
	// fragments are the fragments calls stored, in order; erased those an erasure redacted.
	fragments []densemem.FragmentID
	erased    map[densemem.FragmentID]bool
	sources   map[string]*seqSource
	splits    int
	alias     map[string]string
	aliasN    map[string]int
	log       []string
	stats     map[string]int
	acted     map[int]bool
	// canonical is the running step with the Pick and Choice it used; canon those of the steps run.
	canonical seqStep
	canon     []seqStep
	// rels and prints are the state after the last step (the superuser's reads; see readState).
	rels       map[densemem.RelationshipID]seqRel
	prints     map[string]string
	tables     []string
	stateQuery string
	// evidenceChecked is the version of each active relationship at which its evidence was last
	// checked through Trace.
	evidenceChecked map[densemem.RelationshipID]int
	violations      []seqViolation
}

// seqSource is a versioned source: its owner (who stored its first fragment) and current revision.
type seqSource struct {
	owner string
	rev   int
}

// seqRel is one relationship row as stored.
type seqRel struct {
	ID        densemem.RelationshipID
	Owner     densemem.ProfileID
	Subject   densemem.EntityID
	Predicate string
	Scope     string
	Object    string
	Polarity  densemem.Polarity
	ValidFrom *time.Time
	ValidTo   *time.Time
	Status    densemem.Status
	Tier      densemem.Tier
	Version   int
	CreatedAt time.Time
}

// lifecycle is the part of a relationship only transitions change.
func (r seqRel) lifecycle() string {
	return fmt.Sprintf("%s/%s v%d until %v", r.Status, r.Tier, r.Version, r.ValidTo)
}

// newSeqWorld starts a run on a fresh team of the database behind pool (nil: a fresh database).
func newSeqWorld(tb testing.TB, pool *pgxpool.Pool) *seqWorld {
	if pool == nil {
		pool = testdb.New(tb)
	}
	e := newEnvOnPool(tb, pool)
	w := &seqWorld{t: tb, e: e, entities: map[string]densemem.EntityID{}, erased: map[densemem.FragmentID]bool{},
		sources: map[string]*seqSource{}, alias: map[string]string{}, aliasN: map[string]int{}, stats: map[string]int{},
		acted: map[int]bool{}, evidenceChecked: map[densemem.RelationshipID]int{}}
	w.actors = map[string]densemem.Principal{"A": e.A, "B": e.B, "C": e.C,
		"eraser": e.mustProfile("eraser", densemem.Scope("erasure"))}
	w.names = map[densemem.ProfileID]string{}
	for name, p := range w.actors {
		w.names[p.ProfileID] = name
	}
	w.tables = e.ledger().Tables()
	w.stateQuery = stateQuery(w.tables, e.ledger().Strings(`SELECT table_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name = 'team_id'`))
	w.readState()
	return w
}

// seqCall is one call a step made, as the checks need it.
type seqCall struct {
	desc string
	// actor is the profile whose call it was ("" for the nightly review).
	actor string
	err   error
	// allowed reports whether err is a refusal the step may meet; nil: none is.
	allowed func(error) bool
	// wantErr: the step provoked a refusal on purpose, so success breaks a rule (rule says which).
	wantErr     bool
	wantErrRule string
	// answer: a Resolve of an item (rule 4 governs its errors).
	answer bool
	// retires: the call retired fragments, so system transitions may recompute any owner's
	// relationships (a source revision, an erasure); review: the nightly reviewer ran.
	retires, review bool
	// skipped: nothing to act on, no call made.
	skipped bool
	// note is a violation the call itself showed (a nightly failure, a revision by a non-owner).
	note *seqViolation
}

// run performs step n and checks every rule.
func (w *seqWorld) run(n int, s seqStep) {
	w.e.clock.Advance(time.Minute)
	// The step as it could have been written: its Pick and Choice the indexes they chose (none when
	// it found nothing to act on), which the shrinker prints.
	w.canonical = s
	w.canonical.Pick, w.canonical.Choice = 0, 0
	if s.Op == opDrain {
		w.canonical.Pick, w.canonical.Choice = s.Pick, s.Choice
	}
	defer func() { w.canon = append(w.canon, w.canonical) }()
	switch s.Op {
	case opRemember:
		w.after(n, w.remember(s))
	case opRevise:
		w.after(n, w.revise(s))
	case opResolve:
		w.after(n, w.resolve(s))
	case opResolveClosed:
		w.after(n, w.resolveClosed(s))
	case opForget:
		w.after(n, w.forget(s))
	case opSplit:
		w.after(n, w.split(s))
	case opMerge:
		w.after(n, w.merge(s))
	case opErase:
		w.after(n, w.erase(s))
	case opClock:
		w.e.clock.Advance(time.Duration(s.Days)*24*time.Hour + time.Duration(s.Minutes)*time.Minute)
		w.after(n, seqCall{desc: fmt.Sprintf("clock +%dd%dm", s.Days, s.Minutes), skipped: true})
	case opNightly:
		w.after(n, w.nightly(s))
	case opDrain:
		w.drain(n, s)
	default:
		w.t.Fatalf("step %d: unknown op %q", n, s.Op)
	}
}

// after logs call c of step n, reads the state it left and checks every rule against the state
// before it.
func (w *seqWorld) after(n int, c seqCall) {
	if c.err != nil {
		c.desc += fmt.Sprintf(" -> refused: %v", c.err)
	}
	w.log = append(w.log, fmt.Sprintf("%d. %s", n, c.desc))
	if c.skipped {
		return
	}
	w.acted[n] = true
	if c.note != nil {
		c.note.step = n
		w.violations = append(w.violations, *c.note)
	}
	before, printsBefore := w.rels, w.prints
	w.readState()
	w.checkCallsFailOnlyAsProvoked(n, c)
	w.checkRefusedCallChangedNothing(n, c, printsBefore)
	w.checkNoCallChangesAnotherProfilesRelationship(n, c, before)
	if printsBefore["review_items"] != w.prints["review_items"] || printsBefore["relationships"] != w.prints["relationships"] {
		w.checkHeldStatementsAskTheirQuestion(n)
	}
	if !c.retires && slices.Equal(stateOf(printsBefore), stateOf(w.prints)) {
		return // no relationship, support or retirement changed: the views below are as they were
	}
	recall, err := w.recallCurrent()
	if err != nil {
		w.violate(n, ruleRecallCurrentOnly, "Recall failed: %v", err)
		return
	}
	w.checkRecallShowsExactlyTheCurrentRelationships(n, recall)
	w.checkOneCurrentValuePerOwnerAndKey(n, recall)
	w.checkCurrentRelationshipsHaveEffectiveEvidence(n, c)
}

// stateOf is the part of a fingerprint the views of the rules depend on.
func stateOf(prints map[string]string) []string {
	return []string{prints["relationships"], prints["support_links"], prints["fragment_retirements"]}
}

func (w *seqWorld) violate(n int, rule, format string, args ...any) {
	w.violations = append(w.violations, seqViolation{step: n, rule: rule, detail: fmt.Sprintf(format, args...)})
}

func (w *seqWorld) count(what string) { w.stats[what]++ }

// name gives a long ID a short alias for the log: r1 (a relationship), i2 (a review item), f3 (a
// fragment).
func (w *seqWorld) name(id, prefix string) string {
	if id == "" {
		return "-"
	}
	if a, ok := w.alias[id]; ok {
		return a
	}
	w.aliasN[prefix]++
	a := fmt.Sprintf("%s%d", prefix, w.aliasN[prefix])
	w.alias[id] = a
	return a
}

func (w *seqWorld) rel(id densemem.RelationshipID) string { return w.name(string(id), "r") }

// ---- the calls ----

// fact is the statement of a Remember or revision step.
func (w *seqWorld) fact(s seqStep) fact {
	f := fact{subject: s.Subject, subjectKind: "environment", predicate: "deploys_from", object: s.Object,
		objectKind: "git_branch", scope: s.Scope, sourceGroup: s.Group}
	if slices.Contains(seqPeople, s.Subject) {
		f.subjectKind, f.predicate, f.objectKind = "person", "works_on", "project"
	}
	if s.Negative {
		f.polarity = "-"
	}
	if s.Since != "" {
		d := date(s.Since)
		f.validFrom = &d
	}
	since := ""
	if s.Since != "" && !s.Unconfirmed {
		since = "Since " + s.Since + " "
	}
	f.content = since + statementText(f.predicate, s.Subject, s.Object, s.Negative, s.Pending)
	return f
}

// statementText is evidence that states "subject predicate object" (or its negation); pending
// evidence leaves the object out.
func statementText(predicate, subject, object string, negative, pending bool) string {
	switch {
	case predicate == "works_on" && pending:
		return fmt.Sprintf("%s works on some project.", subject)
	case predicate == "works_on" && negative:
		return fmt.Sprintf("%s does not work on %s.", subject, object)
	case predicate == "works_on":
		return fmt.Sprintf("%s works on %s.", subject, object)
	case pending:
		return fmt.Sprintf("the %s environment deploys from some branch.", subject)
	case negative:
		return fmt.Sprintf("the %s environment does not deploy from the %s branch.", subject, object)
	}
	return fmt.Sprintf("the %s environment deploys from the %s branch.", subject, object)
}

// describe is a statement step as the log shows it.
func describe(s seqStep) string {
	predicate := "deploys_from"
	if slices.Contains(seqPeople, s.Subject) {
		predicate = "works_on"
	}
	d := fmt.Sprintf("%s %s %s", s.Subject, predicate, s.Object)
	if s.Negative {
		d += " (negative)"
	}
	if s.Since != "" {
		d += " since " + s.Since
		if s.Unconfirmed {
			d += " (unconfirmed)"
		}
	}
	if s.Pending {
		d += " [evidence omits the object]"
	}
	if s.Scope != "" {
		d += " scope=" + s.Scope
	}
	if s.Group != "" {
		d += " group=" + s.Group
	}
	return d
}

// placed records what a placement reported (entities, fragments) and describes its outcomes.
func (w *seqWorld) placed(pl *densemem.Placement, s seqStep) string {
	names := map[string]string{"s": s.Subject, "o": s.Object}
	for _, en := range pl.Entities {
		if en.EntityID != "" && names[en.Ref] != "" {
			w.entities[names[en.Ref]] = en.EntityID
		}
	}
	for _, f := range pl.Fragments {
		w.fragments = append(w.fragments, f.FragmentID)
	}
	var out []string
	for _, o := range pl.RelationshipOutcomes {
		w.count("remember: " + strings.TrimPrefix(string(o.Category), "relationship_"))
		d := fmt.Sprintf("%s %s", strings.TrimPrefix(string(o.Category), "relationship_"), w.rel(o.RelationshipID))
		if len(o.Related) > 0 {
			var rel []string
			for _, id := range o.Related {
				rel = append(rel, w.rel(id))
			}
			d += fmt.Sprintf(" (related %s)", strings.Join(rel, ", "))
		}
		if o.Review != nil {
			d += " item " + w.name(o.Review.ReviewID, "i")
		}
		out = append(out, d)
	}
	if len(pl.Retired) > 0 {
		out = append(out, fmt.Sprintf("retired %d fragment(s)", len(pl.Retired)))
	}
	for _, c := range pl.Recomputed {
		out = append(out, fmt.Sprintf("recomputed %s %s->%s", w.rel(c.RelationshipID), c.Before.Status, c.After.Status))
	}
	return strings.Join(out, "; ")
}

// remember: Who states the step's statement.
func (w *seqWorld) remember(s seqStep) seqCall {
	req := w.fact(s).request(nextKey())
	note := ""
	if s.Source != "" {
		src := w.source(s.Source)
		rev := max(src.rev, 1)
		req.Evidence[0].SourceKey, req.Evidence[0].SourceRevision = s.Source, fmt.Sprintf("r%d", rev)
		note = fmt.Sprintf(" source=%s@r%d", s.Source, rev)
	}
	c := seqCall{desc: fmt.Sprintf("%s remember %s%s", s.Who, describe(s), note), actor: s.Who}
	pl, err := w.e.client.Remember(w.e.ctx, w.actors[s.Who], req)
	if c.err = err; err != nil {
		return c
	}
	if s.Source != "" {
		if src := w.source(s.Source); src.owner == "" {
			src.owner, src.rev = s.Who, 1
		}
	}
	c.desc += " -> " + w.placed(pl, s)
	return c
}

func (w *seqWorld) source(key string) *seqSource {
	if w.sources[key] == nil {
		w.sources[key] = &seqSource{}
	}
	return w.sources[key]
}

// revise: the source's owner (or Who) states its next revision, naming the current one. A revision
// may be refused with a *ValidationError (a non-owner's, or one with nothing left to retire after an
// erasure); a non-owner's that succeeds breaks the ownership rule.
func (w *seqWorld) revise(s seqStep) seqCall {
	src := w.source(s.Source)
	who := s.Who
	if s.AsOwner && src.owner != "" {
		who = src.owner
	}
	f := w.fact(s)
	f.content = "Revised guide: " + f.content
	req := f.request(nextKey())
	req.Evidence[0].SourceKey = s.Source
	req.Evidence[0].SourceRevision = fmt.Sprintf("r%d", src.rev+1)
	req.Evidence[0].PreviousSourceRevision = fmt.Sprintf("r%d", src.rev)
	c := seqCall{desc: fmt.Sprintf("%s revise %s r%d->r%d (owner %s) with %s", who, s.Source, src.rev, src.rev+1,
		cmp.Or(src.owner, "none"), describe(s)), actor: who, allowed: isValidation}
	pl, err := w.e.client.Remember(w.e.ctx, w.actors[who], req)
	if c.err = err; err != nil {
		w.count("revise: refused")
		return c
	}
	w.count("revise: accepted")
	if src.owner != who {
		c.note = &seqViolation{rule: ruleOwnRowsOnly, detail: fmt.Sprintf("%s revised %s, which %s owns", who, s.Source,
			cmp.Or(src.owner, "nobody"))}
	}
	src.rev++
	c.retires = len(pl.Retired) > 0
	c.desc += " -> " + w.placed(pl, s)
	return c
}

// reviewItems lists every profile's items of status, A's first, each profile's oldest first.
func (w *seqWorld) reviewItems(status string) ([]densemem.ReviewItem, error) {
	var out []densemem.ReviewItem
	for _, name := range seqProfiles {
		after := ""
		for {
			resp, err := w.e.client.ListReviewItems(w.e.ctx, w.actors[name], densemem.ListReviewItemsRequest{Status: status,
				Limit: 100, After: after})
			if err != nil {
				return nil, fmt.Errorf("ListReviewItems(%s, %s): %w", name, status, err)
			}
			out = append(out, resp.ReviewItems...)
			if after = resp.NextAfter; after == "" {
				break
			}
		}
	}
	return out, nil
}

// offered returns the choices of seqChoices an item offers (forget on every item about a
// relationship).
func offered(item densemem.ReviewItem) []seqChoice {
	actions := []string{}
	if item.Prompt != nil {
		for _, ch := range item.Prompt.Choices {
			actions = append(actions, ch.Action)
		}
	}
	if item.RelationshipID != "" {
		actions = append(actions, densemem.ActionForget)
	}
	var out []seqChoice
	for _, ch := range seqChoices {
		if slices.Contains(actions, ch.action) && (item.RelationshipID != "" || !(ch.evidence || ch.correction)) {
			out = append(out, ch)
		}
	}
	return out
}

// resolve: an open item is answered by its owner with one of the choices it offers, or, provoked,
// by another profile or with an action it does not offer.
func (w *seqWorld) resolve(s seqStep) seqCall {
	items, err := w.reviewItems(densemem.ReviewItemStatusOpen)
	if err != nil {
		return seqCall{desc: "resolve", err: err, answer: true}
	}
	if len(items) == 0 {
		return seqCall{desc: "resolve: no open item", skipped: true}
	}
	w.canonical.Pick = s.Pick % len(items)
	if s.Foreign { // the parity of Pick chooses the caller: the least Pick choosing both
		for p := s.Pick % len(items); p <= s.Pick; p += len(items) {
			if p%2 == s.Pick%2 {
				w.canonical.Pick = p
				break
			}
		}
	}
	return w.answer(s, items[s.Pick%len(items)], s.Choice)
}

// answer has item's owner (or another profile, when s.Foreign) answer it with the choice-th choice
// it offers.
func (w *seqWorld) answer(s seqStep, item densemem.ReviewItem, choice int) seqCall {
	owner := w.names[item.ProfileID]
	caller := owner
	if s.Foreign {
		caller = seqProfiles[(slices.Index(seqProfiles, owner)+1+s.Pick%2)%len(seqProfiles)]
	}
	c := seqCall{actor: caller, answer: true, allowed: isStale}
	choices := offered(item)
	if len(choices) == 0 {
		c.desc, c.skipped = fmt.Sprintf("resolve item %s: it offers no choice the sequence makes", w.name(item.ReviewID, "i")), true
		return c
	}
	ch := choices[choice%len(choices)]
	label := ch.name
	if s.Op == opResolve {
		w.canonical.Choice = choice % len(choices)
	}
	req := densemem.ResolveRequest{IngestID: item.IngestID, PlacementItemID: item.PlacementItemID, Action: ch.action,
		IdempotencyKey: nextKey()}
	var rel *densemem.RelationshipDetail
	if item.RelationshipID != "" {
		tr, err := w.e.client.Trace(w.e.ctx, w.actors[owner], densemem.TraceRequest{RelationshipID: item.RelationshipID})
		if err != nil {
			c.desc, c.err = fmt.Sprintf("resolve item %s: Trace of %s", w.name(item.ReviewID, "i"), w.rel(item.RelationshipID)), err
			c.allowed = nil
			return c
		}
		rel = &tr.Relationship
	}
	if err := w.build(&req, ch, s, rel); err != nil {
		w.t.Fatalf("resolve choice %s: %v", ch.name, err)
	}
	about := "-"
	if rel != nil {
		about = fmt.Sprintf("%s %s %s %s", w.rel(rel.RelationshipID), rel.Subject.Name, rel.Object.Name, rel.Status)
	}
	c.desc = fmt.Sprintf("%s resolve item %s of %s (%s) with %s", caller, w.name(item.ReviewID, "i"), owner, about, ch.name)
	switch {
	case s.Foreign:
		c.allowed, c.wantErr, c.wantErrRule, c.desc = isNotOwner, true, ruleOwnRowsOnly, c.desc+" [another profile's item]"
		label = "another profile's item"
	case s.Bad:
		req.Action, label = notOffered(item), "an action not offered"
		c.allowed, c.wantErr, c.wantErrRule = isValidation, true, ruleCallsSucceed
		c.desc = fmt.Sprintf("%s resolve item %s of %s (%s) with %s [not offered]", caller, w.name(item.ReviewID, "i"), owner,
			about, req.Action)
	default:
		c.allowed = func(err error) bool {
			return isStale(err) || (isValidation(err) && refusedOn(err, ch.refusable)) || (ch.restates && errors.Is(err, densemem.ErrErased))
		}
	}
	res, err := w.e.client.Resolve(w.e.ctx, w.actors[caller], req)
	if c.err = err; err != nil {
		w.count("resolve " + label + ": refused")
		return c
	}
	w.count("resolve " + label + ": done")
	w.fragments = append(w.fragments, res.FragmentIDs...)
	var changes []string
	for _, ch := range res.Changes {
		changes = append(changes, fmt.Sprintf("%s %s->%s", w.rel(ch.RelationshipID), cmp.Or(string(ch.Before.Status), "new"),
			ch.After.Status))
	}
	c.desc += " -> " + cmp.Or(strings.Join(changes, ", "), "no change")
	if res.Outcome != nil && res.Outcome.Review != nil {
		c.desc += " new item " + w.name(res.Outcome.Review.ReviewID, "i")
	}
	return c
}

// build fills req for choice ch of step s on the item's relationship rel.
func (w *seqWorld) build(req *densemem.ResolveRequest, ch seqChoice, s seqStep, rel *densemem.RelationshipDetail) error {
	if ch.decision != "" {
		from := date(cmp.Or(s.Since, "2025-02-01"))
		to := from.AddDate(0, 0, 30)
		if i := slices.Index(seqDates, s.Since); i >= 0 && i+1 < len(seqDates) {
			to = date(seqDates[i+1])
		}
		scope := "canary"
		if rel != nil && rel.Scope == scope {
			scope = "blue"
		}
		text := strings.NewReplacer("{from}", from.Format(time.RFC3339), "{to}", to.Format(time.RFC3339),
			"{scope}", scope).Replace(ch.decision)
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		req.Decision = &densemem.ResolveDecision{}
		if err := dec.Decode(req.Decision); err != nil {
			return fmt.Errorf("decision %s: %w", text, err)
		}
	}
	if ch.evidence && rel != nil {
		content := "The user confirmed: " + statementText(rel.Predicate, rel.Subject.Name, rel.Object.Name, rel.Polarity == "-", false)
		req.Evidence = []densemem.EvidenceInput{{Content: content, SourceType: "manual", SourceGroup: "user-resolution"}}
	}
	if ch.correction && rel != nil {
		objects, kind := seqBranches, "git_branch"
		if rel.Predicate == "works_on" {
			objects, kind = seqProjects, "project"
		}
		object := objects[0]
		if slices.Contains(objects, s.Object) {
			object = s.Object
		}
		content := "The user confirmed: " + statementText(rel.Predicate, rel.Subject.Name, object, false, false)
		var from *time.Time
		if s.Since != "" {
			d := date(s.Since)
			from, content = &d, "Since "+s.Since+" "+content
		}
		req.Evidence = []densemem.EvidenceInput{{Content: content, SourceType: "manual", SourceGroup: "user-resolution"}}
		req.Proposal = &densemem.Proposal{
			Entities: []densemem.ProposedEntity{
				{Ref: "s", Name: rel.Subject.Name, EntityKind: rel.Subject.Kind, KnownEntityID: rel.Subject.EntityID},
				{Ref: "o", Name: object, EntityKind: kind},
			},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "s", Predicate: rel.Predicate,
				ObjectRef: "o", Scope: rel.Scope, ValidFrom: from,
				Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}},
		}
	}
	return nil
}

// notOffered is an action the item does not offer.
func notOffered(item densemem.ReviewItem) string {
	have := map[string]bool{}
	for _, ch := range offered(item) {
		have[ch.action] = true
	}
	for _, ch := range seqChoices {
		if !have[ch.action] {
			return ch.action
		}
	}
	return "approve"
}

// resolveClosed: a closed item's owner answers it again; only ErrStaleDecision may come back.
func (w *seqWorld) resolveClosed(s seqStep) seqCall {
	var items []densemem.ReviewItem
	for _, status := range []string{densemem.ReviewItemStatusResolved, densemem.ReviewItemStatusSuperseded} {
		got, err := w.reviewItems(status)
		if err != nil {
			return seqCall{desc: "resolve a closed item", err: err, answer: true}
		}
		items = append(items, got...)
	}
	if len(items) == 0 {
		return seqCall{desc: "resolve a closed item: none", skipped: true}
	}
	item := items[s.Pick%len(items)]
	w.canonical.Pick = s.Pick % len(items)
	owner := w.names[item.ProfileID]
	c := seqCall{actor: owner, answer: true, allowed: isStale, wantErr: true, wantErrRule: ruleItemsAnswerable}
	action := densemem.ActionForget
	if choices := offered(item); len(choices) > 0 && item.RelationshipID == "" {
		action = choices[0].action
	}
	c.desc = fmt.Sprintf("%s resolve closed item %s (%s) with %s", owner, w.name(item.ReviewID, "i"), item.Status, action)
	_, c.err = w.e.client.Resolve(w.e.ctx, w.actors[owner], densemem.ResolveRequest{IngestID: item.IngestID,
		PlacementItemID: item.PlacementItemID, Action: action, IdempotencyKey: nextKey()})
	w.count("resolve a closed item")
	return c
}

// live reports whether a status is one of a relationship still in play.
func live(st densemem.Status) bool {
	return st == "active" || st == "needs_review" || st == "pending_evidence"
}

// ordered returns the stored relationships that keep, oldest first.
func (w *seqWorld) ordered(keep func(seqRel) bool) []seqRel {
	var out []seqRel
	for _, r := range w.rels {
		if keep(r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b seqRel) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
	return out
}

// forget: Who forgets one of its live relationships, or, provoked, another profile's.
func (w *seqWorld) forget(s seqStep) seqCall {
	me := w.actors[s.Who].ProfileID
	targets := w.ordered(func(r seqRel) bool { return live(r.Status) && (r.Owner == me) != s.Foreign })
	if len(targets) == 0 {
		return seqCall{desc: s.Who + " forget: nothing to forget", skipped: true}
	}
	r := targets[s.Pick%len(targets)]
	w.canonical.Pick = s.Pick % len(targets)
	c := seqCall{desc: fmt.Sprintf("%s forget %s (%s of %s)", s.Who, w.rel(r.ID), r.Status, w.names[r.Owner]), actor: s.Who}
	if s.Foreign {
		c.allowed, c.wantErr, c.wantErrRule = isNotOwner, true, ruleOwnRowsOnly
	}
	res, err := w.e.client.Forget(w.e.ctx, w.actors[s.Who], densemem.ForgetRequest{RelationshipID: r.ID, Reason: "sequence",
		IdempotencyKey: nextKey()})
	if c.err = err; err == nil {
		c.desc += fmt.Sprintf(" -> %s v%d", res.Status, res.Version)
	}
	w.count(fmt.Sprintf("forget (foreign %v)", s.Foreign))
	return c
}

// selection picks one or two of the listed observations (pick modulo twice their number decides).
func (w *seqWorld) selection(obs []densemem.MovableObservation, pick int) []string {
	w.canonical.Pick = pick % (2 * len(obs))
	if len(obs) == 1 {
		w.canonical.Pick = 0
	}
	start := pick % len(obs)
	out := []string{obs[start].ObservationID}
	if len(obs) > 1 && pick/len(obs)%2 == 1 {
		out = append(out, obs[(start+1)%len(obs)].ObservationID)
	}
	return out
}

// split: Who splits one or two of its observations on Subject off to a new entity (named apart, so
// later statements about Subject stay unambiguous).
func (w *seqWorld) split(s seqStep) seqCall {
	from, ok := w.entities[s.Subject]
	if !ok {
		return seqCall{desc: fmt.Sprintf("%s split %s: no such entity yet", s.Who, s.Subject), skipped: true}
	}
	p := w.actors[s.Who]
	c := seqCall{desc: fmt.Sprintf("%s split %s", s.Who, s.Subject), actor: s.Who}
	preview, err := w.e.client.PreviewSplit(w.e.ctx, p, densemem.SplitRequest{EntityID: from})
	if err != nil {
		c.err = err
		return c
	}
	if len(preview.Observations) == 0 {
		c.desc, c.skipped = c.desc+": none of its observations", true
		return c
	}
	name := fmt.Sprintf("%s east %d", s.Subject, w.splits+1)
	req := densemem.SplitRequest{EntityID: from, ObservationIDs: w.selection(preview.Observations, s.Pick), Name: name,
		IdentityContext: map[string]string{"site": "east"},
		Evidence: []densemem.EvidenceInput{{Content: fmt.Sprintf("The %s is a separate identity from %s.", name, s.Subject),
			SourceType: "manual"}},
		Reason: "sequence", IdempotencyKey: nextKey()}
	c.desc += fmt.Sprintf(" (%d of %d observations) to %q", len(req.ObservationIDs), len(preview.Observations), name)
	res, err := w.e.client.Split(w.e.ctx, p, req)
	if c.err = err; err != nil {
		return c
	}
	w.splits++
	w.entities[name] = res.ToEntityID
	w.fragments = append(w.fragments, res.FragmentIDs...)
	c.desc += " -> " + w.reassigned(res)
	w.count("split")
	return c
}

// merge: Who merges one or two of its observations on Subject into Into.
func (w *seqWorld) merge(s seqStep) seqCall {
	from, ok1 := w.entities[s.Subject]
	into, ok2 := w.entities[s.Into]
	if !ok1 || !ok2 {
		return seqCall{desc: fmt.Sprintf("%s merge %s into %s: no such entities yet", s.Who, s.Subject, s.Into), skipped: true}
	}
	p := w.actors[s.Who]
	c := seqCall{desc: fmt.Sprintf("%s merge %s into %s", s.Who, s.Subject, s.Into), actor: s.Who}
	preview, err := w.e.client.PreviewMerge(w.e.ctx, p, densemem.MergeRequest{FromEntityID: from, IntoEntityID: into})
	if err != nil {
		c.err = err
		return c
	}
	if len(preview.Observations) == 0 {
		c.desc, c.skipped = c.desc+": none of its observations", true
		return c
	}
	req := densemem.MergeRequest{FromEntityID: from, IntoEntityID: into, ObservationIDs: w.selection(preview.Observations, s.Pick),
		Evidence: []densemem.EvidenceInput{{Content: fmt.Sprintf("What was called %s is %s.", s.Subject, s.Into),
			SourceType: "manual"}},
		Reason: "sequence", IdempotencyKey: nextKey()}
	c.desc += fmt.Sprintf(" (%d of %d observations)", len(req.ObservationIDs), len(preview.Observations))
	res, err := w.e.client.Merge(w.e.ctx, p, req)
	if c.err = err; err != nil {
		return c
	}
	w.fragments = append(w.fragments, res.FragmentIDs...)
	c.desc += " -> " + w.reassigned(res)
	w.count("merge")
	return c
}

// reassigned describes a split's or merge's changes.
func (w *seqWorld) reassigned(res *densemem.ReassignResult) string {
	var out []string
	for _, ch := range res.Changes {
		out = append(out, fmt.Sprintf("%s %s->%s", w.rel(ch.RelationshipID), cmp.Or(string(ch.Before.Status), "new"), ch.After.Status))
	}
	return cmp.Or(strings.Join(out, ", "), "no change")
}

// erase: the profile with the erasure scope erases a fragment not erased yet.
func (w *seqWorld) erase(s seqStep) seqCall {
	var left []densemem.FragmentID
	for _, f := range w.fragments {
		if !w.erased[f] && !slices.Contains(left, f) {
			left = append(left, f)
		}
	}
	if len(left) == 0 {
		return seqCall{desc: "erase: no fragment", skipped: true}
	}
	f := left[s.Pick%len(left)]
	w.canonical.Pick = s.Pick % len(left)
	c := seqCall{desc: "eraser erase " + w.name(string(f), "f"), actor: "eraser", retires: true}
	_, c.err = w.e.client.Erase(w.e.ctx, w.actors["eraser"], densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{f},
		Reason: "sequence", IdempotencyKey: nextKey()})
	if c.err == nil {
		w.erased[f] = true
		w.count("erase")
	}
	return c
}

// nightly: the clock moves Days days and the nightly Conflict review runs; a case it fails to review
// breaks the calls' rule.
func (w *seqWorld) nightly(s seqStep) seqCall {
	w.e.clock.Advance(time.Duration(s.Days) * 24 * time.Hour)
	c := seqCall{review: true}
	rep, err := w.e.client.RunNightlyReview(w.e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{w.e.team},
		WorkerID: "sequence"})
	if c.err = err; err != nil {
		c.desc = fmt.Sprintf("nightly review after +%dd", s.Days)
		return c
	}
	c.desc = fmt.Sprintf("nightly review after +%dd: claimed %d, resolved %d, overdue %d, dismissed %d, kept open %d, failed %d",
		s.Days, rep.Claimed, rep.Resolved, rep.Overdue, rep.Dismissed, rep.KeptOpen, rep.Failed)
	w.count(fmt.Sprintf("nightly: resolved %d", rep.Resolved))
	if rep.Failed > 0 || rep.Unknown > 0 {
		c.note = &seqViolation{rule: ruleCallsSucceed, detail: fmt.Sprintf("the nightly review failed %d case(s): %+v",
			rep.Failed+rep.Unknown, rep)}
	}
	return c
}

// drain answers every open item in turn (at most 40 answers), the choice rotating from s.Choice,
// checking every rule after each answer. An item an answer leaves open is not answered again.
func (w *seqWorld) drain(n int, s seqStep) {
	tried := map[string]bool{}
	for k := range 40 {
		items, err := w.reviewItems(densemem.ReviewItemStatusOpen)
		if err != nil {
			w.after(n, seqCall{desc: "drain", err: err, answer: true})
			return
		}
		i := slices.IndexFunc(items, func(it densemem.ReviewItem) bool { return !tried[it.ReviewID] })
		if i < 0 {
			break
		}
		tried[items[i].ReviewID] = true
		c := w.answer(seqStep{Pick: s.Pick}, items[i], s.Choice+k)
		c.desc = "drain: " + c.desc
		w.after(n, c)
		if len(w.violations) > 0 {
			return
		}
	}
	w.log = append(w.log, fmt.Sprintf("%d. drain: done", n))
}

// ---- errors ----

func isStale(err error) bool    { return errors.Is(err, densemem.ErrStaleDecision) }
func isNotOwner(err error) bool { return errors.Is(err, densemem.ErrNotOwner) }

func isValidation(err error) bool {
	var ve *densemem.ValidationError
	return errors.As(err, &ve)
}

// refusedOn reports whether err is a *ValidationError naming one of paths.
func refusedOn(err error, paths []string) bool {
	var ve *densemem.ValidationError
	return errors.As(err, &ve) && slices.ContainsFunc(paths, ve.Has)
}

// ---- reading the state ----

// readState reads every relationship of the team and a fingerprint of every table through the
// superuser's window, in one statement (one snapshot): no public call lists a team's relationships
// with their lifecycle (Recall shows only current ones, Trace one at a time), and only the tables
// themselves show that a refused call wrote nothing at all. The rules are checked through Trace,
// Recall and ListReviewItems; this read only says which relationships to look at.
func (w *seqWorld) readState() {
	var rels []seqRel
	var prints map[string]string
	if err := w.e.pool.QueryRow(w.e.ctx, w.stateQuery, w.e.team).Scan(&rels, &prints); err != nil {
		w.t.Fatalf("read the state: %v", err)
	}
	w.rels = map[densemem.RelationshipID]seqRel{}
	for _, r := range rels {
		w.rels[r.ID] = r
	}
	w.prints = prints
}

// stateQuery builds readState's statement: the team's relationships as JSON rows of seqRel, and per
// table its row count and a hash of its rows (the team's rows, where a table has a team_id).
func stateQuery(tables, teamScoped []string) string {
	var prints []string
	for _, table := range tables {
		where := ""
		if slices.Contains(teamScoped, table) {
			where = " WHERE x.team_id = $1"
		}
		prints = append(prints, fmt.Sprintf(`'%s', (SELECT count(*)::text || ' ' ||
			md5(COALESCE(string_agg(x::text, E'\n' ORDER BY x::text), '')) FROM %s x%s)`, table,
			pgx.Identifier{table}.Sanitize(), where))
	}
	// A function takes at most 100 arguments: one object per 40 tables.
	var objects []string
	for chunk := range slices.Chunk(prints, 40) {
		objects = append(objects, "jsonb_build_object("+strings.Join(chunk, ",\n")+")")
	}
	return `SELECT
		(SELECT COALESCE(json_agg(json_build_object('ID', relationship_id, 'Owner', owner_profile_id,
			'Subject', subject_entity_id, 'Predicate', predicate_key, 'Scope', scope,
			'Object', COALESCE(object_entity_id, object_value_id, ''), 'Polarity', polarity, 'ValidFrom', valid_from,
			'ValidTo', valid_to, 'Status', status, 'Tier', tier, 'Version', version, 'CreatedAt', created_at)), '[]')
		 FROM relationships WHERE team_id = $1),
		` + strings.Join(objects, " || ")
}

// recallCurrent recalls the current view of every subject a relationship has, as the team's admin.
func (w *seqWorld) recallCurrent() (*densemem.RecallResponse, error) {
	subjects := map[densemem.EntityID]bool{}
	for _, r := range w.rels {
		subjects[r.Subject] = true
	}
	if len(subjects) == 0 {
		return &densemem.RecallResponse{}, nil
	}
	ids := slices.Sorted(maps.Keys(subjects))
	if len(ids) > densemem.MaxExpandEntities {
		ids = ids[:densemem.MaxExpandEntities]
	}
	return w.e.client.Recall(w.e.ctx, w.e.admin, densemem.RecallRequest{ExpandFromEntityIDs: ids, Limit: densemem.MaxRecallLimit})
}

// ---- the checks, one per rule ----

// checkCallsFailOnlyAsProvoked: a call fails only with a refusal its step may meet — a Resolve only
// with ErrStaleDecision or the *ValidationError the step provoked (rule 4: an item is answerable or
// stale, never an internal error) — and a provoked refusal is not accepted.
func (w *seqWorld) checkCallsFailOnlyAsProvoked(n int, c seqCall) {
	rule := ruleCallsSucceed
	if c.answer {
		rule = ruleItemsAnswerable
	}
	switch {
	case c.err != nil && (c.allowed == nil || !c.allowed(c.err)):
		w.violate(n, rule, "%s (an error this call may not return)", c.desc)
	case c.err == nil && c.wantErr:
		w.violate(n, c.wantErrRule, "%s: accepted, want it refused", c.desc)
	}
}

// checkRefusedCallChangedNothing: a call that returned an error left every table as it was.
func (w *seqWorld) checkRefusedCallChangedNothing(n int, c seqCall, before map[string]string) {
	if c.err == nil {
		return
	}
	var changed []string
	for _, table := range w.tables {
		if before[table] != w.prints[table] {
			changed = append(changed, fmt.Sprintf("%s (%s -> %s)", table, before[table], w.prints[table]))
		}
	}
	if len(changed) > 0 {
		w.violate(n, ruleRefusalWritesNothing, "%s, yet it changed %s", c.desc, strings.Join(changed, ", "))
	}
}

// checkNoCallChangesAnotherProfilesRelationship: a call creates only its caller's relationships
// and changes the status, tier, valid_to or version only of its caller's; Trace shows every other
// change made by the system: the nightly reviewer closing a losing member of a resolved case (and
// re-planning its owner's statements held against it), or the recomputation of supports a source
// revision or an erasure retired (invariant 13).
func (w *seqWorld) checkNoCallChangesAnotherProfilesRelationship(n int, c seqCall, before map[densemem.RelationshipID]seqRel) {
	for id, b := range before {
		if _, ok := w.rels[id]; !ok {
			w.violate(n, ruleOwnRowsOnly, "%s: relationship %s (%s's) disappeared", c.desc, w.rel(id), w.names[b.Owner])
		}
	}
	for _, a := range w.ordered(func(seqRel) bool { return true }) {
		b, existed := before[a.ID]
		owner := w.names[a.Owner]
		switch {
		case !existed && owner != c.actor:
			w.violate(n, ruleOwnRowsOnly, "%s created %s, owned by %s", cmp.Or(c.actor, "the nightly review"), w.rel(a.ID), owner)
		case !existed, owner == c.actor, b.lifecycle() == a.lifecycle():
		default:
			w.checkSystemChange(n, c, b, a)
		}
	}
}

// checkSystemChange checks, through Trace, that every transition of another profile's relationship
// since before is one the system may make in call c.
func (w *seqWorld) checkSystemChange(n int, c seqCall, b, a seqRel) {
	what := fmt.Sprintf("%s's %s %s -> %s", w.names[a.Owner], w.rel(a.ID), b.lifecycle(), a.lifecycle())
	tr, err := w.e.client.Trace(w.e.ctx, w.e.admin, densemem.TraceRequest{RelationshipID: a.ID, IncludeTransitions: true,
		Limit: 500})
	if err != nil {
		w.violate(n, ruleOwnRowsOnly, "%s: %s, and Trace failed: %v", c.desc, what, err)
		return
	}
	resolvedCase := slices.ContainsFunc(tr.Conflicts, func(cf densemem.TraceConflict) bool { return cf.Status == "resolved" })
	seen := false
	for _, x := range tr.Transitions {
		if x.ToVersion <= b.Version {
			continue
		}
		seen = true
		ok := false
		switch x.ActorKind {
		case "system_conflict_reviewer":
			ok = c.review && ((x.FromStatus == "active" && x.ToStatus == "superseded" && resolvedCase) || x.FromStatus == "needs_review")
		case "system":
			ok = c.retires
		}
		if !ok {
			w.violate(n, ruleOwnRowsOnly, "%s changed %s by %s transition %s->%s (%s, actor %s %s)", cmp.Or(c.actor, "the nightly review"),
				what, x.ActorKind, x.FromStatus, x.ToStatus, x.Reason, x.ActorKind, w.names[x.ActorProfileID])
		}
	}
	if !seen {
		w.violate(n, ruleOwnRowsOnly, "%s: %s with no transition in Trace", c.desc, what)
	}
}

// checkRecallShowsExactlyTheCurrentRelationships: Recall's current view returns only active
// relationships (rule 5: never a closed row), and, when nothing cut it, every active one whose
// validity has not ended, so the other checks of the view see all of them.
func (w *seqWorld) checkRecallShowsExactlyTheCurrentRelationships(n int, recall *densemem.RecallResponse) {
	shown := map[densemem.RelationshipID]bool{}
	for _, r := range recall.Results {
		id := r.Relationship.RelationshipID
		shown[id] = true
		if st := w.rels[id].Status; r.Relationship.Status != "active" || st != "active" {
			w.violate(n, ruleRecallCurrentOnly, "the current view returned %s (%s's) as %s; it is %s", w.rel(id),
				w.names[r.Relationship.OwnerProfileID], r.Relationship.Status, st)
		}
	}
	if recall.CandidatesTruncated || len(recall.Results) >= densemem.MaxRecallLimit {
		w.count("recall cut at the limit")
		return
	}
	now := w.e.clock.Now()
	for _, r := range w.ordered(func(r seqRel) bool {
		return r.Status == "active" && (r.ValidTo == nil || r.ValidTo.After(now)) && !shown[r.ID]
	}) {
		w.violate(n, ruleRecallCurrentOnly, "the current view misses %s's active %s", w.names[r.Owner], w.rel(r.ID))
	}
}

// checkHeldStatementsAskTheirQuestion: every held statement (needs_review) has exactly one open
// relationship_conflict item, and it names as related exactly its owner's current relationships it
// contradicts (DESIGN §6.7: a call that moves the question re-asks it in the same transaction); an open
// item of that kind is about a held statement. Read through ListReviewItems.
func (w *seqWorld) checkHeldStatementsAskTheirQuestion(n int) {
	items, err := w.reviewItems(densemem.ReviewItemStatusOpen)
	if err != nil {
		w.violate(n, ruleHeldAsksItsQuestion, "ListReviewItems failed: %v", err)
		return
	}
	asking := map[densemem.RelationshipID][]densemem.ReviewItem{}
	for _, it := range items {
		if it.Kind != "relationship_conflict" {
			continue
		}
		asking[it.RelationshipID] = append(asking[it.RelationshipID], it)
		if r, ok := w.rels[it.RelationshipID]; !ok || r.Status != densemem.Status("needs_review") {
			w.violate(n, ruleHeldAsksItsQuestion, "item %s is open about %s, which is %s", it.ReviewID,
				w.aliased(string(it.RelationshipID)), r.Status)
		}
	}
	for _, held := range w.ordered(func(r seqRel) bool { return r.Status == densemem.Status("needs_review") }) {
		got := asking[held.ID]
		if len(got) != 1 {
			w.violate(n, ruleHeldAsksItsQuestion, "held %s has %d open items", w.aliased(string(held.ID)), len(got))
			continue
		}
		var want []string
		for _, r := range w.ordered(func(r seqRel) bool {
			return r.Status == densemem.Status("active") && r.ID != held.ID && r.Owner == held.Owner && r.Subject == held.Subject &&
				r.Predicate == held.Predicate && r.Scope == held.Scope && contradicts(r, held)
		}) {
			want = append(want, string(r.ID))
		}
		var named []string
		for _, id := range got[0].RelatedRelationshipID {
			named = append(named, string(id))
		}
		slices.Sort(want)
		slices.Sort(named)
		if !slices.Equal(want, named) {
			w.violate(n, ruleHeldAsksItsQuestion, "held %s's item asks about %s, but what contradicts it now is %s",
				w.aliased(string(held.ID)), w.aliased(strings.Join(named, ", ")), w.aliased(strings.Join(want, ", ")))
		}
	}
}

// contradicts reports whether two statements of one cardinality-one key cannot both be current:
// overlapping in time, and different objects both positive or one object with opposite polarities.
func contradicts(a, b seqRel) bool {
	if !cardinalityOne[a.Predicate] || !overlaps(densemem.ValidityInterval{From: a.ValidFrom, To: a.ValidTo},
		densemem.ValidityInterval{From: b.ValidFrom, To: b.ValidTo}) {
		return false
	}
	if a.Object != b.Object {
		return a.Polarity == densemem.Polarity("+") && b.Polarity == densemem.Polarity("+")
	}
	return a.Polarity != b.Polarity
}

// checkOneCurrentValuePerOwnerAndKey: on a key of a cardinality-one predicate, the validity
// intervals of one owner's current relationships that are values of the key (positive, or about
// the same object) never overlap, as Recall's current view shows them.
func (w *seqWorld) checkOneCurrentValuePerOwnerAndKey(n int, recall *densemem.RecallResponse) {
	for _, problem := range currentValueOverlaps(recall.Results) {
		w.violate(n, ruleOneCurrentValue, "%s", w.aliased(problem))
	}
}

// aliased replaces the relationship IDs of a message by their aliases.
func (w *seqWorld) aliased(s string) string {
	for id, a := range w.alias {
		s = strings.ReplaceAll(s, id, a)
	}
	for id, name := range w.names {
		s = strings.ReplaceAll(s, string(id), name)
	}
	for name, id := range w.entities {
		s = strings.ReplaceAll(s, " ("+string(id)+")", " ("+name+")")
	}
	return s
}

// cardinalityOne are the registered predicates of cardinality one with the state kind.
var cardinalityOne = map[string]bool{"deploys_from": true, "owner_email": true}

// currentValueOverlaps lists, per owner and key (subject, cardinality-one predicate, scope), the
// pairs of current relationships whose validity intervals overlap and that are two values of the
// key: both positive (two objects, or the same one twice), or the same object with opposite
// polarities. A negative statement beside another object's positive one is not a second value.
func currentValueOverlaps(results []densemem.RecallResult) []string {
	byKey := map[string][]densemem.RecallResult{}
	var keys []string
	for _, r := range results {
		s := r.Relationship
		if s.Status != "active" || !cardinalityOne[s.Predicate] {
			continue
		}
		k := fmt.Sprintf("%s's %s %s %q", s.OwnerProfileID, s.Subject.Name, s.Predicate, s.Scope)
		k += " (" + string(s.Subject.EntityID) + ")"
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		rs := byKey[k]
		for i := range rs {
			for j := i + 1; j < len(rs); j++ {
				a, b := rs[i].Relationship, rs[j].Relationship
				sameObject := a.Object.EntityID+densemem.EntityID(a.Object.ValueID) == b.Object.EntityID+densemem.EntityID(b.Object.ValueID)
				if !(a.Polarity == "+" && b.Polarity == "+") && !sameObject {
					continue
				}
				if overlaps(rs[i].ValidDuring, rs[j].ValidDuring) {
					out = append(out, fmt.Sprintf("%s: %s %s%s [%s, %s) overlaps %s %s%s [%s, %s)", k,
						a.RelationshipID, a.Polarity, a.Object.Name, instant(rs[i].ValidDuring.From), instant(rs[i].ValidDuring.To),
						b.RelationshipID, b.Polarity, b.Object.Name, instant(rs[j].ValidDuring.From), instant(rs[j].ValidDuring.To)))
				}
			}
		}
	}
	return out
}

// overlaps reports whether two validity intervals [From, To) share an instant (a null From is since
// always, a null To until further notice; an empty interval shares none).
func overlaps(a, b densemem.ValidityInterval) bool {
	from := func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	}
	to := func(t *time.Time) time.Time {
		if t == nil {
			return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		return *t
	}
	start := from(a.From)
	if f := from(b.From); f.After(start) {
		start = f
	}
	end := to(a.To)
	if t := to(b.To); t.Before(end) {
		end = t
	}
	return start.Before(end)
}

// instant prints a bound of an interval ("-" when open).
func instant(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.DateOnly)
}

// checkCurrentRelationshipsHaveEffectiveEvidence: every active relationship shows, in Trace, a
// support whose fragment is not retired and whose verification granted support. A relationship is
// traced when it first becomes active at a version, and every active one after a call that retired
// fragments.
func (w *seqWorld) checkCurrentRelationshipsHaveEffectiveEvidence(n int, c seqCall) {
	for _, r := range w.ordered(func(r seqRel) bool { return r.Status == "active" }) {
		if !c.retires && w.evidenceChecked[r.ID] == r.Version {
			continue
		}
		w.evidenceChecked[r.ID] = r.Version
		tr, err := w.e.client.Trace(w.e.ctx, w.e.admin, densemem.TraceRequest{RelationshipID: r.ID, IncludeVerification: true,
			Limit: 500})
		if err != nil {
			w.violate(n, ruleEvidenceBehindCurrent, "Trace of %s's active %s failed: %v", w.names[r.Owner], w.rel(r.ID), err)
			continue
		}
		granted := map[string]bool{}
		for _, v := range tr.Verifications {
			granted[v.VerificationID] = v.SupportGranted
		}
		if !slices.ContainsFunc(tr.Evidence, func(ev densemem.TraceEvidence) bool {
			return ev.Retired == nil && !ev.Erased && granted[ev.VerificationID]
		}) {
			w.violate(n, ruleEvidenceBehindCurrent, "%s's active %s (%s) shows no effective support in Trace (%d supports)",
				w.names[r.Owner], w.rel(r.ID), r.lifecycle(), len(tr.Evidence))
		}
	}
}

// ---- the test ----

// seqConfig is the run's configuration from the environment.
type seqConfig struct {
	seeds        []uint64
	steps        int
	shrinkRuns   int
	shrinkBudget time.Duration
}

func sequenceConfig(t *testing.T) seqConfig {
	t.Helper()
	cfg := seqConfig{steps: 60, shrinkRuns: 150, shrinkBudget: 150 * time.Second}
	num := func(name string, def int) int {
		s := os.Getenv(name)
		if s == "" {
			return def
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			t.Fatalf("%s=%q: want a number >= 0", name, s)
		}
		return v
	}
	for i := range num("DENSEMEM_SEQUENCE_SEEDS", 12) {
		cfg.seeds = append(cfg.seeds, uint64(i+1))
	}
	if s := os.Getenv("DENSEMEM_SEQUENCE_SEED"); s != "" {
		cfg.seeds = []uint64{uint64(num("DENSEMEM_SEQUENCE_SEED", 0))}
	}
	cfg.steps = num("DENSEMEM_SEQUENCE_STEPS", cfg.steps)
	cfg.shrinkRuns = num("DENSEMEM_SEQUENCE_SHRINK", cfg.shrinkRuns)
	cfg.shrinkBudget = time.Duration(num("DENSEMEM_SEQUENCE_SHRINK_SECONDS", int(cfg.shrinkBudget/time.Second))) * time.Second
	return cfg
}

// seqSummary adds up what every seed's run did, for the test's closing log line.
type seqSummary struct {
	mu     sync.Mutex
	seeds  int
	failed []uint64
	stats  map[string]int
	// shrinking lets one seed shrink at a time, so the first failure is shrunk whole; shrinkUntil is
	// when shrinking must stop, across seeds.
	shrinking   sync.Mutex
	shrinkUntil time.Time
}

func (s *seqSummary) add(seed uint64, run *seqRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seeds++
	if run.brokenRule() != "" {
		s.failed = append(s.failed, seed)
	}
	for k, v := range run.stats {
		s.stats[k] += v
	}
}

func (s *seqSummary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.stats)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, s.stats[k]))
	}
	slices.Sort(s.failed)
	return fmt.Sprintf("%d seeds, %d failed %v\ncalls: %s", s.seeds, len(s.failed), s.failed, strings.Join(parts, ", "))
}

// TestSequences_RandomCallsKeepEveryRule applies, per seed, a generated sequence of public calls by
// three profiles and checks after every step that each owner has at most one current value per key,
// that no call changed another profile's relationship (but the system's documented ones), that a
// refused call changed nothing, that every open item is answerable or refused as stale, that
// Recall's current view holds exactly the current relationships, and that every current
// relationship has effective evidence in Trace. See the top of the file for long runs and replays.
//
// Slow (about 40 s alone under -race at load 9; skipped under -short): each seed is a fresh world
// and every step is followed by the checks of every rule, which read the whole ledger.
func TestSequences_RandomCallsKeepEveryRule(t *testing.T) {
	slow(t)
	t.Parallel()
	cfg := sequenceConfig(t)
	summary := &seqSummary{stats: map[string]int{}, shrinkUntil: time.Now().Add(cfg.shrinkBudget)}
	t.Cleanup(func() { t.Logf("summary: %s", summary) })
	for _, seed := range cfg.seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			steps := generateSequence(seed, cfg.steps)
			run := runSequence(t, steps)
			summary.add(seed, run)
			if run.brokenRule() == "" {
				t.Logf("seed %d: %d steps kept every rule", seed, len(steps))
				return
			}
			reportSequenceFailure(t, seed, steps, run, cfg, summary)
		})
	}
}

// reportSequenceFailure prints the failing seed, its run, and the step list shrunk to the fewest
// steps that still break the same rule, with the shrunk list's run on a fresh database.
func reportSequenceFailure(t *testing.T, seed uint64, steps []seqStep, run *seqRun, cfg seqConfig, summary *seqSummary) {
	v := run.violations[0]
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s\nreplay: DENSEMEM_SEQUENCE_SEED=%d go test -race -count=1 -run 'TestSequences_RandomCallsKeepEveryRule' -v .\n",
		seed, violationsText(run.violations), seed)
	fmt.Fprintf(&b, "run (%d of %d steps):\n  %s\n", v.step, len(steps), strings.Join(run.log, "\n  "))
	summary.shrinking.Lock()
	shrunk, runs := shrinkSequence(t, steps[:v.step], run, cfg.shrinkRuns, summary.shrinkUntil)
	summary.shrinking.Unlock()
	if runs == 0 {
		fmt.Fprintf(&b, "not shrunk (DENSEMEM_SEQUENCE_SHRINK=0, or the time for shrinking is spent); the failing prefix:\n\n%s",
			goSource(steps[:v.step]))
		t.Error(b.String())
		return
	}
	// The shrunk list with each Pick and Choice the index it used reads better; keep it if it
	// breaks the rule the same way on a fresh database.
	again := runSequence(t, shrunk)
	if canon := again.canon; len(canon) == len(shrunk) && again.brokenRule() == v.rule {
		if rerun := runSequence(t, canon); rerun.brokenRule() == v.rule {
			shrunk, again = canon, rerun
		}
	}
	fmt.Fprintf(&b, "shrunk to %d steps in %d runs; paste into a regression test:\n\n%s\nits run on a fresh database:\n  %s\n",
		len(shrunk), runs, goSource(shrunk), strings.Join(again.log, "\n  "))
	if again.brokenRule() != v.rule {
		fmt.Fprintf(&b, "  (on a fresh database it broke %q, not %q)\n", cmp.Or(again.brokenRule(), "no rule"), v.rule)
	} else {
		fmt.Fprintf(&b, "%s\n", violationsText(again.violations))
	}
	t.Error(b.String())
}

// shrinkSequence shortens steps, whose run broke a rule, by delta debugging: it runs the list with
// chunks of steps left out and keeps any shorter list that still breaks that rule, refining the
// chunks until no single step can go, or the runs or the time are spent. It first leaves out, in one
// run, every step that found nothing to act on. Each candidate runs on a fresh team of one database
// cloned for the shrinking: a team is as isolated as a database (every row and every query is the
// team's), and cloning one per candidate costs a second or more on a loaded machine. It returns the
// shortest list and the number of runs made (0: none was allowed).
func shrinkSequence(tb testing.TB, steps []seqStep, failed *seqRun, maxRuns int, until time.Time) ([]seqStep, int) {
	rule := failed.brokenRule()
	spent := func(runs int) bool { return runs >= maxRuns || time.Now().After(until) }
	if spent(0) {
		return steps, 0
	}
	scope := &scopedTB{TB: tb}
	defer scope.close()
	pool := testdb.New(scope)
	runs := 0
	fails := func(candidate []seqStep) bool {
		runs++
		return runSequenceOn(tb, pool, candidate).brokenRule() == rule
	}
	var acting []seqStep
	for i, s := range steps {
		if failed.acted[i+1] {
			acting = append(acting, s)
		}
	}
	if len(acting) < len(steps) && fails(acting) {
		steps = acting
	}
	chunks := 2
	for len(steps) > 1 && !spent(runs) {
		size := (len(steps) + chunks - 1) / chunks
		reduced := false
		for start := 0; start < len(steps) && !spent(runs); start += size {
			candidate := slices.Concat(steps[:start], steps[min(start+size, len(steps)):])
			if fails(candidate) {
				steps, reduced = candidate, true
				chunks = max(chunks-1, 2)
				break
			}
		}
		if !reduced {
			if chunks >= len(steps) {
				break
			}
			chunks = min(chunks*2, len(steps))
		}
	}
	return steps, runs
}

package densemem_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/densemem/densemem"
)

// I-26 as a property: a seeded random history of remember (undated, dated same-owner supersession,
// negative, evidence-less pending and its later support, restatements, evidence from versioned
// sources), source revisions (the owner's new revision retires the previous one's fragments,
// whoever stored them, and recomputes what they supported), forget, conflict responses (fresh and
// stale) and the nightly review by three profiles on a few conflict keys, on a strictly
// increasing clock (one minute per step; a nightly step also skips one to nine days). After every
// step the current view is recorded and checked against the stored rows; at the end Recall with
// known_at = each step's time (and just before the next step) must return exactly what was recorded
// then, results and conflicts alike, and valid_at combined with known_at must return exactly the
// active or superseded relationships of that moment whose validity contains valid_at. Responses to
// the full-text query are also checked against the ranking rule "ties broken by earlier creation".
// Privacy erasure steps (as a profile with the erasure scope, or the host) redact a supporting
// fragment: every replay must still match its recording, except that erased excerpts are blank and
// marked erased whatever the known_at (erased content is never shown), and that before the last
// erasure the full-text query may rank differently (its branch matched content that is gone).
//
// Seeds: DENSEMEM_KNOWNAT_SEEDS=1,2,3 (comma separated) replaces the default seeds;
// DENSEMEM_KNOWNAT_STEPS replaces the number of steps per seed. A failing seed prints its step log,
// with short aliases (rel3, cf1, frg7) for the IDs in the diffs.

const knownAtStepGap = time.Minute

// knownAtQueries match every relationship of the test: the first only through the entity-name branch
// (websearch_to_tsquery ANDs its words, so full text finds nothing), the second through both.
var knownAtQueries = []string{"production staging qa deploys", "production or staging or qa or deploys"}

func TestKnownAtReplaysEveryRecordedStep(t *testing.T) {
	slow(t)
	t.Parallel()
	seeds := []uint64{20260601, 7, 4242}
	if s := os.Getenv("DENSEMEM_KNOWNAT_SEEDS"); s != "" {
		seeds = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("DENSEMEM_KNOWNAT_SEEDS: %v", err)
			}
			seeds = append(seeds, n)
		}
	}
	steps := 40
	if s := os.Getenv("DENSEMEM_KNOWNAT_STEPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("DENSEMEM_KNOWNAT_STEPS: %q", s)
		}
		steps = n
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d, %d steps; reproduce with DENSEMEM_KNOWNAT_SEEDS=%d go test -race -count=1 -run 'KnownAtReplays/seed=%d$' -v .",
				seed, steps, seed, seed)
			w := newKnownAtWorld(t, seed)
			defer w.dumpOnFailure()
			w.record("initial state (setup only)", nil)
			for i := 1; i <= steps; i++ {
				w.e.clock.Advance(knownAtStepGap)
				w.step(i)
			}
			w.summary()
			w.replayKnownAt()
			w.replayValidAt()
		})
	}
}

// storedRelationship is one relationship row as stored after a step.
type storedRelationship struct {
	ID        densemem.RelationshipID
	Owner     densemem.ProfileID
	Subject   string
	Object    string
	Polarity  densemem.Polarity
	Status    densemem.Status
	Tier      densemem.Tier
	ValidFrom *time.Time
	ValidTo   *time.Time
	Version   int
	CreatedAt time.Time
}

// storedCaseState is one conflict case row as stored after a step.
type storedCaseState struct {
	ID      string
	Status  string
	Version int
}

// storedState is the stored state after a step: the truth at that step's time.
type storedState struct {
	rels     map[densemem.RelationshipID]storedRelationship
	cases    map[string]storedCaseState
	supports map[densemem.RelationshipID][]densemem.FragmentID // in created_at, support_id order
}

// recordedStep is one recorded step: its time, what it did, the Recall responses and the stored state.
type recordedStep struct {
	n      int
	at     time.Time
	desc   string
	err    error
	recall []*densemem.RecallResponse // one per knownAtQueries entry
	snap   storedState
}

// stepWriter is one of the writing profiles with its name in the step log.
type stepWriter struct {
	name string
	p    densemem.Principal
}

// knownAtWorld is one seed's random history: its env, random source, recorded steps and the aliases
// of the step log.
type knownAtWorld struct {
	t        *testing.T
	e        *env
	seed     uint64
	rng      *rand.Rand
	envs     []string
	branches []string
	profiles []stepWriter
	nextDate time.Time
	steps    []recordedStep
	alias    map[string]string
	aliasSeq map[string]int
	stats    map[string]int
	dumped   bool
	// eraser holds the erasure scope; erased are the fragments erased so far, with the time.
	eraser densemem.Principal
	erased map[densemem.FragmentID]time.Time
	// sources are the versioned sources the history states evidence from, by source key.
	sources map[string]*knownAtSource
}

// knownAtSource is one versioned source of the history: its owner (who stored its first fragment),
// its current revision and how many fragments of that revision are stored (not retired).
type knownAtSource struct {
	owner densemem.ProfileID
	rev   int
	live  int
}

// newKnownAtWorld starts the history of seed on a new env.
func newKnownAtWorld(t *testing.T, seed uint64) *knownAtWorld {
	e := newEnv(t)
	w := &knownAtWorld{t: t, e: e, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x6b6e6f776e5f6174)),
		branches: []string{"main", "release", "hotfix"}, nextDate: date("2026-01-05"),
		alias: map[string]string{}, aliasSeq: map[string]int{}, stats: map[string]int{}, erased: map[densemem.FragmentID]time.Time{},
		sources: map[string]*knownAtSource{"doc:alpha": {}, "doc:beta": {}}}
	w.eraser = e.mustProfile("eraser", "erasure")
	w.profiles = []stepWriter{{"A", e.A}, {"B", e.B}, {"C", e.C}}
	w.envs = []string{"production", "staging", "qa"}[:2+w.rng.IntN(2)]
	for _, p := range w.profiles {
		w.name(string(p.p.ProfileID), p.name)
	}
	t.Logf("environments %v, branches %v", w.envs, w.branches)
	return w
}

// name gives a long ID a short alias for the step log.
func (w *knownAtWorld) name(id, short string) string {
	if id == "" {
		return "-"
	}
	if a, ok := w.alias[id]; ok {
		return a
	}
	if short == "" {
		prefix, _, _ := strings.Cut(id, "_")
		w.aliasSeq[prefix]++
		short = fmt.Sprintf("%s%d", prefix, w.aliasSeq[prefix])
	}
	w.alias[id] = short
	return short
}

func (w *knownAtWorld) profileName(id densemem.ProfileID) string { return w.name(string(id), "") }

func (w *knownAtWorld) last() *recordedStep { return &w.steps[len(w.steps)-1] }

// step performs one random operation at the current clock time and records the result.
func (w *knownAtWorld) step(n int) {
	w.t.Helper()
	switch r := w.rng.IntN(100); {
	case r < 15 && w.forget(n):
	case r >= 15 && r < 23 && w.supportPending(n):
	case r >= 23 && r < 29 && w.nightly(n):
	case r >= 29 && r < 35 && w.adopt(n):
	case r >= 35 && r < 41 && w.erase(n):
	case r >= 41 && r < 48 && w.revise(n):
	case r >= 70 && w.respond(n):
	default:
		w.remember(n)
	}
}

// evidenceText builds evidence naming env and branch. Negative statements carry a negation cue; a
// pending statement names no branch, so the SpanVerifier finds it insufficient.
func (w *knownAtWorld) evidenceText(env, branch string, negative, pending bool, validFrom *time.Time) string {
	since := ""
	if validFrom != nil {
		since = "Since " + validFrom.Format(time.DateOnly) + " "
	}
	switch {
	case pending:
		return fmt.Sprintf("%sthe %s environment deploys from some branch.", since, env)
	case negative:
		return fmt.Sprintf([]string{"%sthe %s environment no longer deploys from the %s branch.",
			"%sthe %s environment does not deploy from the %s branch."}[w.rng.IntN(2)], since, env, branch)
	}
	return fmt.Sprintf([]string{"%sthe %s environment deploys from the %s branch.",
		"%s%s deploys from %s, per the runbook.",
		"Checked: %sthe %s environment deploys from the %s branch."}[w.rng.IntN(3)], since, env, branch)
}

// proposal builds a random single-relationship Remember about env and branch.
func (w *knownAtWorld) proposal(env, branch string) (densemem.RememberRequest, string) {
	negative := w.rng.IntN(100) < 15
	pending := !negative && w.rng.IntN(100) < 8
	var validFrom *time.Time
	if w.rng.IntN(100) < 40 {
		d := w.nextDate
		w.nextDate = w.nextDate.AddDate(0, 0, 1+w.rng.IntN(3))
		validFrom = &d
	}
	pol := densemem.Polarity("+")
	if negative {
		pol = "-"
	}
	f := fact{subject: env, subjectKind: "environment", predicate: "deploys_from", object: branch, objectKind: "git_branch",
		content: w.evidenceText(env, branch, negative, pending, validFrom), validFrom: validFrom, polarity: pol,
		sourceGroup: []string{"", "", "runbook", "chat", "ticket"}[w.rng.IntN(5)]}
	desc := fmt.Sprintf("%s deploys_from %s (%s)", env, branch, pol)
	if validFrom != nil {
		desc += " since " + validFrom.Format(time.DateOnly)
	}
	if pending {
		desc += " [evidence omits the branch]"
	}
	if f.sourceGroup != "" {
		desc += " group=" + f.sourceGroup
	}
	return f.request(nextKey()), desc
}

func (w *knownAtWorld) remember(n int) {
	w.t.Helper()
	who := w.profiles[w.rng.IntN(len(w.profiles))]
	env, branch := w.envs[w.rng.IntN(len(w.envs))], w.branches[w.rng.IntN(len(w.branches))]
	// Often restate one of the caller's current relationships, so relationships gather several
	// support links over time (and full-text scores tie between equally supported ones).
	if w.rng.IntN(100) < 35 {
		var own []storedRelationship
		for _, r := range inCreationOrder(w.last().snap.rels) {
			if r.Owner == who.p.ProfileID && r.Status == "active" && r.Polarity == "+" {
				own = append(own, r)
			}
		}
		if len(own) > 0 {
			r := own[w.rng.IntN(len(own))]
			env, branch = r.Subject, r.Object
		}
	}
	req, desc := w.proposal(env, branch)
	if w.rng.IntN(100) < 30 {
		desc += w.fromSource(&req, who.p.ProfileID)
	}
	pl, err := w.e.client.Remember(w.e.ctx, who.p, req)
	if err != nil {
		w.fatalf("step %d: %s remember %s: %v", n, who.name, desc, err)
	}
	w.count("remember: " + w.category(pl))
	w.record(fmt.Sprintf("%s remember %s -> %s", who.name, desc, w.outcome(pl)), nil)
}

// fromSource makes req's evidence a fragment of the current revision of a random source (whoever
// stores a source's first fragment owns it) and returns the step log's note.
func (w *knownAtWorld) fromSource(req *densemem.RememberRequest, by densemem.ProfileID) string {
	keys := slices.Sorted(maps.Keys(w.sources))
	key := keys[w.rng.IntN(len(keys))]
	src := w.sources[key]
	if src.owner == "" {
		src.owner = by
	}
	src.live++
	req.Evidence[0].SourceKey, req.Evidence[0].SourceRevision = key, fmt.Sprintf("r%d", src.rev)
	return fmt.Sprintf(" source=%s@r%d", key, src.rev)
}

// revise has a source's owner state a new revision of it, naming the one it replaces: every stored
// fragment of the previous revision retires, whoever stored it, and the relationships they
// supported are recomputed. It reports false when no source has a fragment of its revision.
func (w *knownAtWorld) revise(n int) bool {
	w.t.Helper()
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(w.sources)) {
		// An erasure retires its fragment too: what a revision retires is what is left unretired.
		w.sources[k].live = w.e.ledger().Int(`SELECT count(*) FROM evidence_fragments f WHERE f.source_key = $1
			AND f.source_revision = $2 AND NOT EXISTS (SELECT 1 FROM fragment_retirements r WHERE r.fragment_id = f.fragment_id)`,
			k, fmt.Sprintf("r%d", w.sources[k].rev))
		if w.sources[k].live > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return false
	}
	key := keys[w.rng.IntN(len(keys))]
	src := w.sources[key]
	var who stepWriter
	for _, p := range w.profiles {
		if p.p.ProfileID == src.owner {
			who = p
		}
	}
	env, branch := w.envs[w.rng.IntN(len(w.envs))], w.branches[w.rng.IntN(len(w.branches))]
	req, desc := w.proposal(env, branch)
	req.Evidence[0].SourceKey, req.Evidence[0].SourceRevision = key, fmt.Sprintf("r%d", src.rev+1)
	req.Evidence[0].PreviousSourceRevision = fmt.Sprintf("r%d", src.rev)
	pl, err := w.e.client.Remember(w.e.ctx, who.p, req)
	if err != nil {
		w.fatalf("step %d: %s revise %s r%d -> r%d with %s: %v", n, who.name, key, src.rev, src.rev+1, desc, err)
	}
	if len(pl.Retired) != src.live {
		w.t.Errorf("step %d: the revision of %s retired %d fragments, want the %d of r%d", n, key, len(pl.Retired), src.live, src.rev)
	}
	src.rev, src.live = src.rev+1, 1
	var recomputed []string
	for _, c := range pl.Recomputed {
		recomputed = append(recomputed, fmt.Sprintf("%s %s/%s->%s/%s", w.name(string(c.RelationshipID), ""), c.Before.Status,
			c.Before.Tier, c.After.Status, c.After.Tier))
	}
	w.count(fmt.Sprintf("revise: %d retired", len(pl.Retired)))
	w.record(fmt.Sprintf("%s revise %s to r%d (retired %d; recomputed %v) with %s -> %s", who.name, key, src.rev, len(pl.Retired),
		recomputed, desc, w.outcome(pl)), nil)
	return true
}

// supportPending gives one of a profile's pending_evidence relationships the evidence it lacked
// (same subject, object and polarity, sometimes dated), so an old row changes state at a later time.
// It reports false when no profile has a pending relationship.
func (w *knownAtWorld) supportPending(n int) bool {
	w.t.Helper()
	var pending []storedRelationship
	for _, r := range inCreationOrder(w.last().snap.rels) {
		if r.Status == "pending_evidence" {
			pending = append(pending, r)
		}
	}
	if len(pending) == 0 {
		return false
	}
	target := pending[w.rng.IntN(len(pending))]
	var who stepWriter
	for _, p := range w.profiles {
		if p.p.ProfileID == target.Owner {
			who = p
		}
	}
	var validFrom *time.Time
	if w.rng.IntN(100) < 40 {
		d := w.nextDate
		w.nextDate = w.nextDate.AddDate(0, 0, 1+w.rng.IntN(3))
		validFrom = &d
	}
	f := fact{subject: target.Subject, subjectKind: "environment", predicate: "deploys_from", object: target.Object,
		objectKind: "git_branch", content: w.evidenceText(target.Subject, target.Object, target.Polarity == "-", false, validFrom),
		validFrom: validFrom, polarity: target.Polarity}
	desc := fmt.Sprintf("%s support pending %s: %s deploys_from %s (%s)", who.name, w.name(string(target.ID), ""),
		target.Subject, target.Object, target.Polarity)
	if validFrom != nil {
		desc += " since " + validFrom.Format(time.DateOnly)
	}
	pl, err := w.e.client.Remember(w.e.ctx, who.p, f.request(nextKey()))
	if err != nil {
		w.fatalf("step %d: %s: %v", n, desc, err)
	}
	w.count("support pending: " + w.category(pl))
	w.record(desc+" -> "+w.outcome(pl), nil)
	return true
}

// adopt has a profile adopt a fragment supporting another profile's active relationship, stating the
// same relationship with it (DESIGN §13): a support that keeps the fragment's author and group, and
// adopts_evidence_from. It reports false when no profile has an active supported relationship.
func (w *knownAtWorld) adopt(n int) bool {
	w.t.Helper()
	var supported []storedRelationship
	for _, r := range inCreationOrder(w.last().snap.rels) {
		if r.Status == "active" && len(w.last().snap.supports[r.ID]) > 0 {
			supported = append(supported, r)
		}
	}
	if len(supported) == 0 {
		return false
	}
	target := supported[w.rng.IntN(len(supported))]
	var others []stepWriter
	for _, p := range w.profiles {
		if p.p.ProfileID != target.Owner {
			others = append(others, p)
		}
	}
	who := others[w.rng.IntN(len(others))]
	frags := w.last().snap.supports[target.ID]
	frag := frags[w.rng.IntN(len(frags))]
	content := w.e.ledger().Strings(`SELECT content FROM fragment_contents WHERE team_id = $1 AND fragment_id = $2`, w.e.team, frag)[0]
	f := fact{subject: target.Subject, subjectKind: "environment", predicate: "deploys_from", object: target.Object,
		objectKind: "git_branch", validFrom: target.ValidFrom, polarity: target.Polarity}
	desc := fmt.Sprintf("%s adopt %s of %s: %s deploys_from %s (%s)", who.name, w.name(string(frag), ""),
		w.name(string(target.ID), ""), target.Subject, target.Object, target.Polarity)
	pl, err := w.e.client.Remember(w.e.ctx, who.p, adopting(f, frag, content))
	if err != nil {
		w.fatalf("step %d: %s: %v", n, desc, err)
	}
	w.count("adopt: " + w.category(pl))
	w.record(desc+" -> "+w.outcome(pl), nil)
	return true
}

// nightly moves the clock on by one to nine days and runs the nightly Conflict review, which may
// resolve (superseding losers as the system reviewer), mark overdue, dismiss or keep cases open. It
// reports false when no case is live.
func (w *knownAtWorld) nightly(n int) bool {
	w.t.Helper()
	live := false
	for _, c := range w.last().snap.cases {
		live = live || c.Status == "open" || c.Status == "overdue"
	}
	if !live {
		return false
	}
	days := 1 + w.rng.IntN(9)
	w.e.clock.Advance(time.Duration(days) * 24 * time.Hour)
	rep, err := w.e.client.RunNightlyReview(w.e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{w.e.team},
		WorkerID: "knownat"})
	if err != nil {
		w.fatalf("step %d: nightly review after %d day(s): %v", n, days, err)
	}
	w.count(fmt.Sprintf("nightly: %d resolved, %d overdue, %d dismissed, %d kept open", rep.Resolved, rep.Overdue,
		rep.Dismissed, rep.KeptOpen))
	w.record(fmt.Sprintf("nightly review after +%dd: claimed %d, resolved %d, overdue %d, dismissed %d, kept open %d, failed %d",
		days, rep.Claimed, rep.Resolved, rep.Overdue, rep.Dismissed, rep.KeptOpen, rep.Failed), nil)
	if rep.Failed > 0 {
		w.t.Errorf("step %d: nightly review failed %d case(s)", n, rep.Failed)
	}
	return true
}

// category names a placement's outcome category for the coverage summary.
func (w *knownAtWorld) category(pl *densemem.Placement) string {
	if len(pl.RelationshipOutcomes) != 1 {
		return "?"
	}
	o := pl.RelationshipOutcomes[0]
	c := strings.TrimPrefix(string(o.Category), "relationship_")
	if o.Conflict != nil {
		c += " (case " + o.Conflict.Status + ")"
	}
	return c
}

func (w *knownAtWorld) count(what string) { w.stats[what]++ }

// summary logs how often each kind of step happened, so a reader can see what the seed covered.
func (w *knownAtWorld) summary() {
	keys := slices.Sorted(maps.Keys(w.stats))
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, w.stats[k]))
	}
	snap := w.last().snap
	byStatus := map[string]int{}
	for _, r := range snap.rels {
		byStatus[string(r.Status)]++
	}
	for _, c := range snap.cases {
		byStatus["case "+c.Status]++
	}
	var st []string
	for _, k := range slices.Sorted(maps.Keys(byStatus)) {
		st = append(st, fmt.Sprintf("%s: %d", k, byStatus[k]))
	}
	w.t.Logf("coverage: %s\nstored at the end: %s", strings.Join(parts, ", "), strings.Join(st, ", "))
}

// forget retracts one of a random profile's own relationships (usually an active one). It reports
// false when no profile has one.
func (w *knownAtWorld) forget(n int) bool {
	w.t.Helper()
	snap := w.last().snap
	who := w.profiles[w.rng.IntN(len(w.profiles))]
	anyStatus := w.rng.IntN(100) < 15
	var own []storedRelationship
	for _, r := range snap.rels {
		if r.Owner == who.p.ProfileID && (r.Status == "active" || (anyStatus && r.Status != "retracted")) {
			own = append(own, r)
		}
	}
	if len(own) == 0 {
		return false
	}
	own = inCreationOrder(own)
	target := own[w.rng.IntN(len(own))]
	res, err := w.e.client.Forget(w.e.ctx, who.p, densemem.ForgetRequest{RelationshipID: target.ID, Reason: "property test",
		IdempotencyKey: nextKey()})
	if err != nil {
		w.fatalf("step %d: %s forget %s: %v", n, who.name, w.name(string(target.ID), ""), err)
	}
	w.count("forget " + string(target.Status))
	desc := fmt.Sprintf("%s forget %s (%s %s, was %s v%d) -> %s v%d", who.name, w.name(string(target.ID), ""), target.Subject,
		target.Object, target.Status, target.Version, res.Status, res.Version)
	if res.Conflict != nil {
		desc += fmt.Sprintf(" case %s %s v%d", w.name(res.Conflict.ConflictID, ""), res.Conflict.Status, res.Conflict.Version)
	}
	w.record(desc, nil)
	return true
}

// respond answers a live case with a proposal carrying conflict_response. Usually the case comes
// from the latest Recall (its version must be current); sometimes from an older step's Recall, whose
// version may be stale. It reports false when no recorded Recall listed a case.
func (w *knownAtWorld) respond(n int) bool {
	w.t.Helper()
	from := len(w.steps) - 1
	if w.rng.IntN(100) < 30 {
		var older []int
		for i, s := range w.steps[:len(w.steps)-1] {
			if len(s.recall[0].Conflicts) > 0 {
				older = append(older, i)
			}
		}
		if len(older) > 0 {
			from = older[w.rng.IntN(len(older))]
		}
	}
	cfs := w.steps[from].recall[0].Conflicts
	if len(cfs) == 0 {
		return false
	}
	cf := cfs[w.rng.IntN(len(cfs))]
	objects := slices.Clone(w.branches)
	for _, p := range cf.Positions {
		objects = append(objects, p.Object.Name, p.Object.Name) // favour the case's alternatives
	}
	who := w.profiles[w.rng.IntN(len(w.profiles))]
	req, desc := w.proposal(cf.Subject.Name, objects[w.rng.IntN(len(objects))])
	req.Proposal.Relationships[0].ConflictResponse = &densemem.ConflictResponse{ConflictID: cf.ConflictID, ExpectedVersion: cf.Version}
	cur, inSnap := w.last().snap.cases[cf.ConflictID]
	fresh := inSnap && cur.Version == cf.Version && (cur.Status == "open" || cur.Status == "overdue")
	desc = fmt.Sprintf("%s respond to %s v%d (read at step %d; stored %s v%d) with %s", who.name, w.name(cf.ConflictID, ""),
		cf.Version, w.steps[from].n, cur.Status, cur.Version, desc)

	before := w.counts()
	pl, err := w.e.client.Remember(w.e.ctx, who.p, req)
	if err != nil {
		if d := cmp.Diff(before, w.counts()); d != "" {
			w.t.Errorf("step %d: %s failed with %v but wrote rows (-before +after):\n%s", n, desc, err, d)
		}
	}
	switch {
	case err == nil && fresh:
		w.count("respond: " + w.category(pl))
		w.record(desc+" -> "+w.outcome(pl), nil)
	case err == nil:
		w.t.Errorf("step %d: %s: a response at version %d was accepted although the case is stored at %s v%d; "+
			"want ErrStaleConflictVersion", n, desc, cf.Version, cur.Status, cur.Version)
		w.record(desc+" -> "+w.outcome(pl), nil)
	case errors.Is(err, densemem.ErrStaleConflictVersion) && !fresh:
		w.count("respond: stale version refused")
		w.record(desc+" -> ErrStaleConflictVersion (expected)", err)
	case errors.Is(err, densemem.ErrStaleConflictVersion):
		w.t.Errorf("step %d: %s: ErrStaleConflictVersion although Recall at this instant listed the case at version %d "+
			"and it is stored at %s v%d: %v", n, desc, cf.Version, cur.Status, cur.Version, err)
		w.record(desc+" -> unexpected "+err.Error(), err)
	default:
		w.fatalf("step %d: %s: %v", n, desc, err)
	}
	return true
}

// outcome describes a placement's only relationship outcome for the step log.
func (w *knownAtWorld) outcome(pl *densemem.Placement) string {
	if len(pl.RelationshipOutcomes) != 1 {
		return fmt.Sprintf("%d outcomes", len(pl.RelationshipOutcomes))
	}
	o := pl.RelationshipOutcomes[0]
	s := fmt.Sprintf("%s %s %s/%s", strings.TrimPrefix(string(o.Category), "relationship_"), w.name(string(o.RelationshipID), ""),
		o.Status, o.Tier)
	for _, id := range o.Related {
		s += " related=" + w.name(string(id), "")
	}
	for _, x := range o.CrossReferences {
		s += fmt.Sprintf(" %s->%s", x.Kind, w.name(string(x.ToRelationshipID), ""))
	}
	if o.Conflict != nil {
		s += fmt.Sprintf(" case %s %s v%d", w.name(o.Conflict.ConflictID, ""), o.Conflict.Status, o.Conflict.Version)
	}
	return s
}

// record stores the step: its time, a snapshot of the stored rows and the current-view Recall of
// every query, and checks that view against the snapshot.
func (w *knownAtWorld) record(desc string, stepErr error) {
	w.t.Helper()
	s := recordedStep{n: len(w.steps), at: w.e.clock.Now(), desc: desc, err: stepErr, snap: w.snapshot()}
	for _, q := range knownAtQueries {
		resp, err := w.e.client.Recall(w.e.ctx, w.e.C, densemem.RecallRequest{Query: q, Limit: densemem.MaxRecallLimit})
		if err != nil {
			w.fatalf("step %d: recall %q: %v", s.n, q, err)
		}
		s.recall = append(s.recall, resp)
	}
	w.steps = append(w.steps, s)
	cur := w.last()
	for _, r := range inCreationOrder(cur.snap.rels) {
		w.name(string(r.ID), "")
	}
	for qi, resp := range cur.recall {
		w.checkView(fmt.Sprintf("step %d current view, query %q", cur.n, knownAtQueries[qi]), resp, cur.snap, cur.at, nil)
	}
	w.checkTies(fmt.Sprintf("step %d current view, query %q", cur.n, knownAtQueries[1]), cur.recall[1], cur.snap, w.erased)
	if stepErr != nil && len(w.steps) > 1 {
		prev := &w.steps[len(w.steps)-2]
		for qi := range knownAtQueries {
			if d := recallDiffExceptKnownAt(prev.recall[qi], cur.recall[qi]); d != "" {
				w.t.Errorf("step %d failed with %v but Recall %q changed (-before +after):\n%s", cur.n, stepErr, knownAtQueries[qi], d)
			}
		}
	}
}

// refusedResponseTables are counted around each conflict response, to prove a refused one wrote nothing.
var refusedResponseTables = []string{"relationships", "relationship_transitions", "support_links", "evidence_fragments",
	"observations", "verification_events", "conflict_cases", "conflict_events", "conflict_position_members",
	"relationship_cross_references", "idempotency_records", "review_items", "entities", "entity_names"}

// counts returns the row counts of refusedResponseTables, read in one snapshot.
func (w *knownAtWorld) counts() map[string]int {
	w.t.Helper()
	return w.e.countsOf(refusedResponseTables)
}

// snapshot reads the stored relationships, cases and support links of the team, in one snapshot.
func (w *knownAtWorld) snapshot() storedState {
	w.t.Helper()
	e := w.e
	snap := storedState{rels: map[densemem.RelationshipID]storedRelationship{}, cases: map[string]storedCaseState{},
		supports: map[densemem.RelationshipID][]densemem.FragmentID{}}
	e.snapshot(func(l ledgerView) {
		rows, err := l.q.Query(l.ctx, `
			SELECT r.relationship_id, r.owner_profile_id, sn.name, onm.name, r.polarity, r.status, r.tier,
			       r.valid_from, r.valid_to, r.version, r.created_at
			FROM relationships r
			JOIN LATERAL (SELECT name FROM entity_names n WHERE n.team_id = r.team_id AND n.entity_id = r.subject_entity_id
			              ORDER BY n.created_at LIMIT 1) sn ON true
			JOIN LATERAL (SELECT name FROM entity_names n WHERE n.team_id = r.team_id AND n.entity_id = r.object_entity_id
			              ORDER BY n.created_at LIMIT 1) onm ON true
			WHERE r.team_id = $1`, e.team)
		if err != nil {
			w.fatalf("snapshot relationships: %v", err)
		}
		for rows.Next() {
			var r storedRelationship
			var pol, status, tier string
			if err := rows.Scan(&r.ID, &r.Owner, &r.Subject, &r.Object, &pol, &status, &tier, &r.ValidFrom, &r.ValidTo,
				&r.Version, &r.CreatedAt); err != nil {
				w.fatalf("snapshot relationships: %v", err)
			}
			r.Polarity, r.Status, r.Tier = densemem.Polarity(pol), densemem.Status(status), densemem.Tier(tier)
			snap.rels[r.ID] = r
		}
		if rows.Close(); rows.Err() != nil {
			w.fatalf("snapshot relationships: %v", rows.Err())
		}
		rows, err = l.q.Query(l.ctx, `SELECT conflict_id, status, version FROM conflict_cases WHERE team_id = $1`, e.team)
		if err != nil {
			w.fatalf("snapshot cases: %v", err)
		}
		for rows.Next() {
			var c storedCaseState
			if err := rows.Scan(&c.ID, &c.Status, &c.Version); err != nil {
				w.fatalf("snapshot cases: %v", err)
			}
			snap.cases[c.ID] = c
		}
		if rows.Close(); rows.Err() != nil {
			w.fatalf("snapshot cases: %v", rows.Err())
		}
		// Only effective supports: Recall leaves out the supports of retired fragments. In Trace's
		// order, as Recall shows them (decision 141); no relationship here has more than Recall shows.
		rows, err = l.q.Query(l.ctx, `SELECT relationship_id, fragment_id FROM support_links s WHERE team_id = $1
			AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = s.team_id AND fr.fragment_id = s.fragment_id)
			ORDER BY relationship_id, created_at, observation_id, verification_id, support_id`, e.team)
		if err != nil {
			w.fatalf("snapshot supports: %v", err)
		}
		for rows.Next() {
			var rel densemem.RelationshipID
			var frag densemem.FragmentID
			if err := rows.Scan(&rel, &frag); err != nil {
				w.fatalf("snapshot supports: %v", err)
			}
			snap.supports[rel] = append(snap.supports[rel], frag)
		}
		if rows.Close(); rows.Err() != nil {
			w.fatalf("snapshot supports: %v", rows.Err())
		}
	})
	return snap
}

// checkView checks one Recall response against the stored state of its instant: the results are
// exactly the relationships the view must show (every relationship matches the queries), each with
// its stored status, tier, validity and version and all its support links as evidence; every
// conflict listed is live at its stored version, and every result's conflict_id is listed.
func (w *knownAtWorld) checkView(what string, resp *densemem.RecallResponse, snap storedState, at time.Time, validAt *time.Time) {
	w.t.Helper()
	var want []string
	for _, r := range snap.rels {
		var visible bool
		if validAt == nil {
			visible = r.Status == "active" && (r.ValidTo == nil || r.ValidTo.After(at))
		} else {
			visible = (r.Status == "active" || r.Status == "superseded") &&
				(r.ValidFrom == nil || !r.ValidFrom.After(*validAt)) && (r.ValidTo == nil || r.ValidTo.After(*validAt))
		}
		if visible {
			want = append(want, string(r.ID))
		}
	}
	var got []string
	var problems []string
	listed := map[string]bool{}
	for _, c := range resp.Conflicts {
		listed[c.ConflictID] = true
		sc, ok := snap.cases[c.ConflictID]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("conflict %s did not exist yet", w.name(c.ConflictID, "")))
		case c.Status != sc.Status || c.Version != sc.Version:
			problems = append(problems, fmt.Sprintf("conflict %s is listed %s v%d, stored %s v%d",
				w.name(c.ConflictID, ""), c.Status, c.Version, sc.Status, sc.Version))
		case sc.Status != "open" && sc.Status != "overdue":
			problems = append(problems, fmt.Sprintf("conflict %s is listed but is %s", w.name(c.ConflictID, ""), sc.Status))
		}
	}
	for _, res := range resp.Results {
		s := res.Relationship
		got = append(got, string(s.RelationshipID))
		r, ok := snap.rels[s.RelationshipID]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s did not exist yet", w.name(string(s.RelationshipID), "")))
			continue
		}
		if s.Status != r.Status || s.Tier != r.Tier || s.Version != r.Version || !sameInstant(s.ValidTo, r.ValidTo) ||
			!sameInstant(s.ValidFrom, r.ValidFrom) {
			problems = append(problems, fmt.Sprintf("%s is %s/%s v%d valid [%s, %s), stored %s/%s v%d valid [%s, %s)",
				w.name(string(s.RelationshipID), ""), s.Status, s.Tier, s.Version, instantText(s.ValidFrom), instantText(s.ValidTo),
				r.Status, r.Tier, r.Version, instantText(r.ValidFrom), instantText(r.ValidTo)))
		}
		// What the result says about time, from the model: current is active and valid at the view's
		// known instant; every valid_at result held then.
		current := r.Status == "active" && (r.ValidFrom == nil || !r.ValidFrom.After(at)) && (r.ValidTo == nil || r.ValidTo.After(at))
		if !sameInstant(res.ValidDuring.From, r.ValidFrom) || !sameInstant(res.ValidDuring.To, r.ValidTo) || res.Current != current ||
			(validAt == nil) != (res.TrueAtValidAt == nil) || (res.TrueAtValidAt != nil && !*res.TrueAtValidAt) {
			problems = append(problems, fmt.Sprintf("%s says valid_during [%s, %s), current %v, true_at_valid_at %v; stored "+
				"[%s, %s), %s, so current %v and true at valid_at", w.name(string(s.RelationshipID), ""), instantText(res.ValidDuring.From),
				instantText(res.ValidDuring.To), res.Current, res.TrueAtValidAt, instantText(r.ValidFrom), instantText(r.ValidTo), r.Status, current))
		}
		var frags []densemem.FragmentID
		for _, ex := range res.Evidence {
			frags = append(frags, ex.FragmentID)
		}
		if !slices.Equal(frags, snap.supports[s.RelationshipID]) {
			problems = append(problems, fmt.Sprintf("%s shows evidence %v, its support links then were %v",
				w.name(string(s.RelationshipID), ""), w.names(frags), w.names(snap.supports[s.RelationshipID])))
		}
		if rc := res.ResolvedConflict; rc != nil {
			if sc, ok := snap.cases[rc.ConflictID]; !ok || sc.Status != "resolved" || sc.Version != rc.Version {
				problems = append(problems, fmt.Sprintf("%s names resolved conflict %s v%d, stored %s v%d",
					w.name(string(s.RelationshipID), ""), w.name(rc.ConflictID, ""), rc.Version, sc.Status, sc.Version))
			}
		}
		if res.ConflictID != "" && !listed[res.ConflictID] {
			problems = append(problems, fmt.Sprintf("%s names conflict %s which conflicts[] does not list",
				w.name(string(s.RelationshipID), ""), w.name(res.ConflictID, "")))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		problems = append(problems, fmt.Sprintf("results %v, want %v (missing %v, unexpected %v)",
			w.names(got), w.names(want), w.names(missingFrom(want, got)), w.names(missingFrom(got, want))))
	}
	if len(problems) > 0 {
		w.t.Errorf("%s:\n  %s", what, strings.Join(problems, "\n  "))
	}
}

// checkTies checks the ranking rule "ties broken by earlier creation then ID" (DESIGN §11) on a
// response to knownAtQueries[1]. Every fragment this test writes names exactly one environment and
// "deploys" once, so for that OR query each fragment ranks the same, and so does each subject
// name; two relationships with the same number of support links therefore tie in the full-text
// branch, they tie in the entity-name branch (one subject name each), and with the same tier they
// get the same boost. The one created first must then rank first, with a strictly higher score.
func (w *knownAtWorld) checkTies(what string, resp *densemem.RecallResponse, snap storedState,
	erased map[densemem.FragmentID]time.Time) {
	w.t.Helper()
	var problems []string
	// An erased fragment's content is empty: it no longer matches the full-text branch.
	live := func(id densemem.RelationshipID) int {
		n := 0
		for _, f := range snap.supports[id] {
			if _, ok := erased[f]; !ok {
				n++
			}
		}
		return n
	}
	for i, a := range resp.Results {
		ra := snap.rels[a.Relationship.RelationshipID]
		for _, b := range resp.Results[i+1:] {
			rb := snap.rels[b.Relationship.RelationshipID]
			if live(ra.ID) != live(rb.ID) || ra.Tier != rb.Tier {
				continue
			}
			earlier := ra.CreatedAt.Before(rb.CreatedAt) || (ra.CreatedAt.Equal(rb.CreatedAt) && ra.ID < rb.ID)
			if !earlier || a.Score <= b.Score {
				problems = append(problems, fmt.Sprintf("%s (created %s, score %.17g) ranks ahead of %s (created %s, score %.17g); "+
					"both have %d support link(s) and tier %s, so they tie and the earlier one must rank first with a higher score",
					w.name(string(ra.ID), ""), ra.CreatedAt.UTC().Format("01-02 15:04"), a.Score, w.name(string(rb.ID), ""),
					rb.CreatedAt.UTC().Format("01-02 15:04"), b.Score, len(snap.supports[ra.ID]), ra.Tier))
			}
		}
	}
	if len(problems) > 0 {
		w.t.Errorf("%s: the tie-break rule is broken:\n  %s", what, strings.Join(problems, "\n  "))
	}
}

// replayKnownAt asks, for every recorded step, what was known at its time (and just before the next
// step), and compares with what Recall returned then.
func (w *knownAtWorld) replayKnownAt() {
	w.t.Helper()
	mismatches := 0
	for i, s := range w.steps {
		instants := []time.Time{s.at}
		if i+1 < len(w.steps) {
			instants = append(instants, w.steps[i+1].at.Add(-time.Microsecond))
		}
		for _, at := range instants {
			for qi, q := range knownAtQueries {
				got, err := w.e.client.Recall(w.e.ctx, w.e.C, densemem.RecallRequest{Query: q, Limit: densemem.MaxRecallLimit, KnownAt: &at})
				if err != nil {
					w.fatalf("replay step %d known_at %s: %v", s.n, at.Format(time.RFC3339Nano), err)
				}
				if got.KnownAt == nil || !got.KnownAt.Equal(at) {
					w.t.Errorf("replay step %d: response known_at %s, want %s", s.n, instantText(got.KnownAt), at.Format(time.RFC3339Nano))
				}
				w.checkNoErasedContent(s.n, q, got)
				// Erased content is never shown: the recording is compared with its erased
				// excerpts blanked. Before the last erasure the full-text branch (query 1) matched
				// content that is gone now, so only its ranking (scores, order) may differ then.
				recorded, diffOf := redactErased(s.recall[qi], w.erased), recallDiffExceptKnownAt
				if qi == 1 && s.at.Before(w.lastErasure()) {
					diffOf = recallContentDiff
				}
				if d := diffOf(recorded, got); d != "" {
					mismatches++
					kind := "the content differs"
					if recallContentDiff(recorded, got) == "" {
						kind = "the same relationships, evidence and conflicts, but ranked differently (scores or order)"
					}
					if mismatches <= 6 {
						w.t.Errorf("step %d (%s): Recall %q with known_at=%s differs from what Recall returned at that "+
							"instant: %s (-recorded +replayed):\n%s", s.n, s.desc, q, at.Format(time.RFC3339Nano), kind, w.readable(d))
					} else {
						w.t.Errorf("step %d: Recall %q with known_at=%s differs from the recording: %s",
							s.n, q, at.Format(time.RFC3339Nano), kind)
					}
				}
				// The replay must also be right on its own terms, whatever was recorded.
				what := fmt.Sprintf("step %d replay known_at=%s, query %q", s.n, at.Format(time.RFC3339Nano), q)
				w.checkView(what, got, s.snap, at, nil)
				if qi == 1 {
					w.checkTies(what, got, s.snap, w.erased)
				}
			}
		}
	}
	if mismatches > 6 {
		w.t.Errorf("%d known_at replays differed in all; the first 6 are shown with their diffs", mismatches)
	}
}

// erase erases the content of one supporting fragment not erased yet, as the eraser profile or as
// the host. It reports false when there is none.
func (w *knownAtWorld) erase(n int) bool {
	w.t.Helper()
	snap := w.last().snap
	var frags []densemem.FragmentID
	for _, r := range inCreationOrder(snap.rels) {
		for _, f := range snap.supports[r.ID] {
			if _, ok := w.erased[f]; !ok && !slices.Contains(frags, f) {
				frags = append(frags, f)
			}
		}
	}
	if len(frags) == 0 {
		return false
	}
	f := frags[w.rng.IntN(len(frags))]
	who, p := "eraser", w.eraser
	if w.rng.IntN(2) == 0 {
		who, p = "host", densemem.HostPrincipal(w.e.team)
	}
	res, err := w.e.client.Erase(w.e.ctx, p, densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{f},
		Reason: "property test", IdempotencyKey: nextKey()})
	if err != nil || len(res.Tombstones) != 1 || res.Tombstones[0].AlreadyErased {
		w.fatalf("step %d: %s erase %s: %+v, %v", n, who, w.name(string(f), ""), res, err)
	}
	w.erased[f] = w.e.clock.Now()
	w.count("erase")
	w.record(fmt.Sprintf("%s erase %s", who, w.name(string(f), "")), nil)
	return true
}

// lastErasure is the time of the last erasure (zero when none).
func (w *knownAtWorld) lastErasure() time.Time {
	var last time.Time
	for _, at := range w.erased {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// checkNoErasedContent fails the test when a response shows an excerpt of an erased fragment or
// does not mark it erased.
func (w *knownAtWorld) checkNoErasedContent(step int, q string, resp *densemem.RecallResponse) {
	w.t.Helper()
	check := func(es []densemem.EvidenceExcerpt) {
		for _, ex := range es {
			if _, ok := w.erased[ex.FragmentID]; ok && (ex.Excerpt != "" || !ex.Erased) {
				w.t.Errorf("step %d: Recall %q shows erased fragment %s: %+v", step, q, w.name(string(ex.FragmentID), ""), ex)
			}
		}
	}
	for _, r := range resp.Results {
		check(r.Evidence)
	}
	for _, c := range resp.Conflicts {
		for _, p := range c.Positions {
			check(p.Evidence)
		}
	}
}

// redactErased returns a copy of resp in which every excerpt of an erased fragment is blank and
// marked erased, as Recall shows it after the erasure.
func redactErased(resp *densemem.RecallResponse, erased map[densemem.FragmentID]time.Time) *densemem.RecallResponse {
	redact := func(es []densemem.EvidenceExcerpt) []densemem.EvidenceExcerpt {
		out := slices.Clone(es)
		for i := range out {
			if _, ok := erased[out[i].FragmentID]; ok {
				out[i].Excerpt, out[i].ExcerptTruncated, out[i].Erased = "", false, true
			}
		}
		return out
	}
	out := *resp
	out.Results = slices.Clone(resp.Results)
	for i := range out.Results {
		out.Results[i].Evidence = redact(out.Results[i].Evidence)
	}
	out.Conflicts = slices.Clone(resp.Conflicts)
	for i := range out.Conflicts {
		out.Conflicts[i].Positions = slices.Clone(out.Conflicts[i].Positions)
		for j := range out.Conflicts[i].Positions {
			out.Conflicts[i].Positions[j].Evidence = redact(out.Conflicts[i].Positions[j].Evidence)
		}
	}
	return &out
}

// replayValidAt checks valid_at combined with known_at at a sample of steps, at instants around every
// valid_from then stored: exactly the active or superseded relationships of that step whose validity
// contains valid_at.
func (w *knownAtWorld) replayValidAt() {
	w.t.Helper()
	lastIdx := len(w.steps) - 1
	for i, s := range w.steps {
		if i%4 != 0 && i != lastIdx {
			continue
		}
		instants := []time.Time{date("2025-01-01"), s.at, date("2031-01-01")}
		for _, r := range s.snap.rels {
			if r.ValidFrom != nil {
				instants = append(instants, *r.ValidFrom, r.ValidFrom.Add(-time.Microsecond))
			}
			if r.ValidTo != nil {
				instants = append(instants, *r.ValidTo)
			}
		}
		slices.SortFunc(instants, time.Time.Compare)
		instants = slices.CompactFunc(instants, time.Time.Equal)
		if len(instants) > 10 {
			w.rng.Shuffle(len(instants), func(i, j int) { instants[i], instants[j] = instants[j], instants[i] })
			instants = instants[:10]
		}
		for _, v := range instants {
			known := s.at
			got, err := w.e.client.Recall(w.e.ctx, w.e.C, densemem.RecallRequest{Query: knownAtQueries[0], Limit: densemem.MaxRecallLimit,
				ValidAt: &v, KnownAt: &known})
			if err != nil {
				w.fatalf("step %d valid_at %s known_at %s: %v", s.n, v.Format(time.RFC3339Nano), known.Format(time.RFC3339Nano), err)
			}
			w.checkView(fmt.Sprintf("step %d valid_at=%s known_at=%s", s.n, v.Format(time.RFC3339Nano), known.Format(time.RFC3339Nano)),
				got, s.snap, known, &v)
			if i == lastIdx {
				// known_at = now answers like no known_at at all.
				now, err := w.e.client.Recall(w.e.ctx, w.e.C, densemem.RecallRequest{Query: knownAtQueries[0], Limit: densemem.MaxRecallLimit,
					ValidAt: &v})
				if err != nil {
					w.fatalf("valid_at %s: %v", v.Format(time.RFC3339Nano), err)
				}
				if d := recallDiffExceptKnownAt(now, got); d != "" {
					w.t.Errorf("valid_at=%s: known_at=now (%s) differs from no known_at (-no known_at +known_at now):\n%s",
						v.Format(time.RFC3339Nano), known.Format(time.RFC3339Nano), w.readable(d))
				}
			}
		}
	}
}

// recallDiffExceptKnownAt compares two Recall responses exactly, except for the echoed known_at.
func recallDiffExceptKnownAt(want, got *densemem.RecallResponse) string {
	return cmp.Diff(want, got, cmpopts.IgnoreFields(densemem.RecallResponse{}, "KnownAt"))
}

// recallContentDiff compares two Recall responses ignoring ranking: scores and the order of results
// and conflicts. It tells a ranking-only mismatch from a leak or a loss.
func recallContentDiff(want, got *densemem.RecallResponse) string {
	return cmp.Diff(want, got, cmpopts.IgnoreFields(densemem.RecallResponse{}, "KnownAt"),
		cmpopts.IgnoreFields(densemem.RecallResult{}, "Score"),
		cmpopts.SortSlices(func(a, b densemem.RecallResult) bool {
			return a.Relationship.RelationshipID < b.Relationship.RelationshipID
		}),
		cmpopts.SortSlices(func(a, b densemem.RecallConflict) bool { return a.ConflictID < b.ConflictID }))
}

// readable appends the alias of every long ID found in a diff, so it can be matched to the step log.
func (w *knownAtWorld) readable(d string) string {
	var legend []string
	for id, a := range w.alias {
		if strings.Contains(d, id) {
			legend = append(legend, a+"="+id)
		}
	}
	slices.Sort(legend)
	if len(legend) == 0 {
		return d
	}
	return d + "  (ids: " + strings.Join(legend, ", ") + ")"
}

func (w *knownAtWorld) names(ids any) []string {
	var out []string
	switch ids := ids.(type) {
	case []string:
		for _, id := range ids {
			out = append(out, w.name(id, ""))
		}
	case []densemem.FragmentID:
		for _, id := range ids {
			out = append(out, w.name(string(id), ""))
		}
	}
	return out
}

// fatalf stops the test after printing the step log.
func (w *knownAtWorld) fatalf(format string, args ...any) {
	w.t.Helper()
	w.dump()
	w.t.Fatalf(format, args...)
}

func (w *knownAtWorld) dumpOnFailure() {
	if w.t.Failed() {
		w.dump()
	}
}

// dump logs every step with its time and the relationships and cases stored after it.
func (w *knownAtWorld) dump() {
	if w.dumped {
		return
	}
	w.dumped = true
	var b strings.Builder
	fmt.Fprintf(&b, "step log of seed %d (environments %v):\n", w.seed, w.envs)
	for _, s := range w.steps {
		fmt.Fprintf(&b, "  step %2d  %s  %s\n", s.n, s.at.Format("01-02 15:04"), s.desc)
	}
	if len(w.steps) > 0 {
		fmt.Fprintf(&b, "relationships after the last step:\n")
		snap := w.last().snap
		for _, r := range inCreationOrder(snap.rels) {
			fmt.Fprintf(&b, "  %-4s %s owner %s: %s deploys_from %s (%s) %s/%s v%d valid [%s, %s) created %s\n",
				w.name(string(r.ID), ""), r.ID, w.profileName(r.Owner), r.Subject, r.Object, r.Polarity, r.Status, r.Tier,
				r.Version, instantText(r.ValidFrom), instantText(r.ValidTo), r.CreatedAt.UTC().Format("01-02 15:04"))
		}
		cases := slices.Collect(maps.Values(snap.cases))
		slices.SortFunc(cases, func(a, b storedCaseState) int { return strings.Compare(a.ID, b.ID) })
		for _, c := range cases {
			fmt.Fprintf(&b, "  case %s %s %s v%d\n", w.name(c.ID, ""), c.ID, c.Status, c.Version)
		}
	}
	w.t.Log(b.String())
}

// inCreationOrder returns relationships in creation order (then ID), so random choices replay per seed.
func inCreationOrder[C map[densemem.RelationshipID]storedRelationship | []storedRelationship](rels C) []storedRelationship {
	var out []storedRelationship
	switch rels := any(rels).(type) {
	case map[densemem.RelationshipID]storedRelationship:
		out = slices.Collect(maps.Values(rels))
	case []storedRelationship:
		out = slices.Clone(rels)
	}
	slices.SortFunc(out, func(a, b storedRelationship) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
	return out
}

// sameInstant reports whether a and b are both nil or the same instant.
func sameInstant(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// instantText formats an instant for the step log: a date at midnight, "-" for nil.
func instantText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	if t.Equal(t.Truncate(24 * time.Hour)) {
		return t.UTC().Format(time.DateOnly)
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// missingFrom returns the elements of a not in b.
func missingFrom(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

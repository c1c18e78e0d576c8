package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Bad input of the administrative calls and of the nightly review (issue 20 items 6 and 7): a value
// outside its bound or a name that is not one is refused with a *ValidationError naming the field and
// saying what is allowed, and nothing is written; the values at each edge are accepted.

// validationAt requires err to be a *ValidationError with a problem at path whose message contains
// each of words, and returns the message.
func validationAt(t *testing.T, err error, path string, words ...string) string {
	t.Helper()
	var ve *densemem.ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("err = %v, want a *ValidationError at %s", err, path)
		return ""
	}
	for _, p := range ve.Problems {
		if p.Path != path {
			continue
		}
		for _, w := range words {
			if !strings.Contains(p.Message, w) {
				t.Errorf("problem at %s: %q does not say %q", path, p.Message, w)
			}
		}
		return p.Message
	}
	t.Errorf("err = %v, want a problem at %s", err, path)
	return ""
}

// policyWith is the team's policy in force with edit applied.
func (e *env) policyWith(edit func(*densemem.TeamPolicy)) densemem.TeamPolicy {
	e.t.Helper()
	pol, err := e.client.TeamPolicy(e.ctx, e.admin)
	if err != nil {
		e.t.Fatal(err)
	}
	edit(&pol)
	return pol
}

// TestBadInput_PolicyTimeZoneMustBeIANA: SetTeamPolicy takes only IANA zone names. "Local" and
// "localtime" (each machine's own zone, so run dates would differ between replicas), the system
// database's own files and copies ("posixrules", "posix/…", "right/…"), POSIX-like and misspelt names
// and names with empty or relative parts are refused at time_zone with what is allowed, and nothing is
// written; IANA names, "UTC" among them, are stored as given, and "" stores UTC.
func TestBadInput_PolicyTimeZoneMustBeIANA(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, zone := range []string{"Local", "localtime", "posixrules", "posix/Europe/Berlin", "right/UTC", "UTC+2", "GMT+2:00",
		"europe/berlin", "Europe/Berlin/", "Europe//Berlin", "./UTC", "../UTC", "/etc/localtime", "Mars/Olympus_Mons",
		"zone.tab", " UTC", "Europe/Berlin\x00"} {
		before := e.allCounts()
		pol := e.policyWith(func(p *densemem.TeamPolicy) { p.TimeZone = zone })
		_, err := e.client.SetTeamPolicy(e.ctx, e.admin, pol)
		validationAt(t, err, "time_zone", "IANA", "UTC, Europe/Berlin")
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("zone %q: the refused policy wrote rows: %s", zone, d)
		}
		if got := e.policyWith(func(*densemem.TeamPolicy) {}); got.Version != pol.Version || got.TimeZone != "UTC" {
			t.Errorf("zone %q: policy in force v%d in %q, want v%d in UTC", zone, got.Version, got.TimeZone, pol.Version)
		}
	}
	for _, c := range []struct{ zone, stored string }{
		{"Europe/Berlin", "Europe/Berlin"}, {"America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"},
		{"Etc/GMT+2", "Etc/GMT+2"}, {"Asia/Kolkata", "Asia/Kolkata"}, {"UTC", "UTC"}, {"", "UTC"},
	} {
		set, err := e.client.SetTeamPolicy(e.ctx, e.admin, e.policyWith(func(p *densemem.TeamPolicy) { p.TimeZone = c.zone }))
		if err != nil {
			t.Errorf("zone %q: %v", c.zone, err)
			continue
		}
		if got := e.policyWith(func(*densemem.TeamPolicy) {}); got.Version != set.Version || got.TimeZone != c.stored {
			t.Errorf("zone %q: policy in force v%d in %q, want v%d in %q", c.zone, got.Version, got.TimeZone, set.Version, c.stored)
		}
	}
}

// TestBadInput_PolicyReviewTTLBounds: the review TTL of a team policy is 1..30 days (DESIGN §14), both
// ends included: a nanosecond outside either end, a zero and a negative TTL are refused at
// review_ttl with the bounds and write nothing; 1 day and 30 days exactly are stored and read back.
// Config.ReviewTTL, a new team's first TTL, has the same bounds at New (0 there means the default).
func TestBadInput_PolicyReviewTTLBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const day = 24 * time.Hour
	for _, ttl := range []time.Duration{day - time.Nanosecond, day - time.Second, 30*day + time.Nanosecond, 30*day + time.Second,
		31 * day, 0, -day} {
		before := e.allCounts()
		pol := e.policyWith(func(p *densemem.TeamPolicy) { p.ReviewTTL = ttl })
		_, err := e.client.SetTeamPolicy(e.ctx, e.admin, pol)
		validationAt(t, err, "review_ttl", "1..30 days")
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("TTL %v: the refused policy wrote rows: %s", ttl, d)
		}
	}
	for _, ttl := range []time.Duration{day, 30 * day} {
		set, err := e.client.SetTeamPolicy(e.ctx, e.admin, e.policyWith(func(p *densemem.TeamPolicy) { p.ReviewTTL = ttl }))
		if err != nil {
			t.Errorf("TTL %v: %v", ttl, err)
			continue
		}
		if got := e.policyWith(func(*densemem.TeamPolicy) {}); got.Version != set.Version || got.ReviewTTL != ttl {
			t.Errorf("TTL %v: policy in force v%d with TTL %v, want v%d with %v", ttl, got.Version, got.ReviewTTL, set.Version, ttl)
		}
	}
	for _, c := range []struct {
		ttl time.Duration
		ok  bool
	}{{day - time.Nanosecond, false}, {30*day + time.Nanosecond, false}, {-day, false}, {day, true}, {30 * day, true}, {0, true}} {
		_, err := densemem.New(e.store, &densemem.Config{ReviewTTL: c.ttl})
		if c.ok {
			if err != nil {
				t.Errorf("New with ReviewTTL %v: %v", c.ttl, err)
			}
			continue
		}
		validationAt(t, err, "config.review_ttl", "1..30 days")
	}
}

// TestBadInput_NightlyConfigBounds: New refuses a nightly batch outside 1..10000, a lease outside
// 10 s..1 h and max attempts outside 1..20, each at its own path with its bounds, every one in one
// error; 0 keeps the default. A client at each edge runs the real nightly review: a batch of 1 claims
// both due cases of the team in two batches.
func TestBadInput_NightlyConfigBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		cfg   densemem.NightlyConfig
		paths []string
		words string
	}{
		{densemem.NightlyConfig{Batch: 10001}, []string{"config.nightly.batch"}, "1..10000"},
		{densemem.NightlyConfig{Batch: -1}, []string{"config.nightly.batch"}, "1..10000"},
		{densemem.NightlyConfig{Lease: 10*time.Second - time.Nanosecond}, []string{"config.nightly.lease"}, "10s..1h0m0s"},
		{densemem.NightlyConfig{Lease: time.Hour + time.Nanosecond}, []string{"config.nightly.lease"}, "10s..1h0m0s"},
		{densemem.NightlyConfig{Lease: -time.Minute}, []string{"config.nightly.lease"}, "10s..1h0m0s"},
		{densemem.NightlyConfig{MaxAttempts: 21}, []string{"config.nightly.max_attempts"}, "1..20"},
		{densemem.NightlyConfig{MaxAttempts: -1}, []string{"config.nightly.max_attempts"}, "1..20"},
		{densemem.NightlyConfig{Batch: 10001, Lease: time.Hour + time.Nanosecond, MaxAttempts: 21},
			[]string{"config.nightly.batch", "config.nightly.lease", "config.nightly.max_attempts"}, ""},
	} {
		_, err := densemem.New(e.store, &densemem.Config{Nightly: c.cfg})
		for _, path := range c.paths {
			validationAt(t, err, path, c.words)
		}
	}

	// Two due cases, on two keys.
	for _, env := range []string{"production", "staging"} {
		e.step()
		e.rememberAccepted(e.A, deploy(env, "main"))
		e.step()
		if out := e.rememberAccepted(e.B, deploy(env, "release").since(releaseCutoff)); out.Conflict == nil {
			t.Fatalf("%s: B's correction opened no case", env)
		}
	}
	for i, cfg := range []densemem.NightlyConfig{{Batch: 1}, {Batch: 10000}, {Lease: 10 * time.Second}, {Lease: time.Hour},
		{MaxAttempts: 1}, {MaxAttempts: 20}, {}} {
		cfg.Store = e.reviewStore
		client, err := densemem.New(e.store, &densemem.Config{Clock: e.clock.Now, Nightly: cfg})
		if err != nil {
			t.Errorf("New with %+v: %v", cfg, err)
			continue
		}
		if i > 0 {
			e.clock.Advance(24 * time.Hour) // the next run date: both cases are due again, still before their deadline
		}
		rep, err := client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}})
		if err != nil || rep.Claimed != 2 || rep.KeptOpen != 2 {
			t.Errorf("nightly review with %+v: %+v, %v; want both cases claimed and kept open", cfg, rep, err)
		}
	}
}

// TestBadInput_NightlyRequestBounds: RunNightlyReview refuses a negative max_cases (0 is no bound) and
// a worker_id that is not valid UTF-8 or is longer than Limits.MaxTextBytes, each at its path, before
// reserving or claiming anything; max_cases 1 claims one case and a worker_id of exactly the limit is
// taken.
func TestBadInput_NightlyRequestBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, env := range []string{"production", "staging"} {
		e.step()
		e.rememberAccepted(e.A, deploy(env, "main"))
		e.step()
		e.rememberAccepted(e.B, deploy(env, "release").since(releaseCutoff))
	}
	team := []densemem.TeamID{e.team}
	before := e.allCounts()
	var cases []string
	e.snapshot(func(l ledgerView) { cases = l.Rows("conflict_cases") })
	for _, c := range []struct {
		req  densemem.NightlyReviewRequest
		path string
	}{
		{densemem.NightlyReviewRequest{TeamIDs: team, MaxCases: -1}, "max_cases"},
		{densemem.NightlyReviewRequest{TeamIDs: team, WorkerID: "w\xff"}, "worker_id"},
		{densemem.NightlyReviewRequest{TeamIDs: team, WorkerID: strings.Repeat("w", densemem.DefaultMaxTextBytes+1)}, "worker_id"},
	} {
		rep, err := e.client.RunNightlyReview(e.ctx, c.req)
		validationAt(t, err, c.path)
		if rep != nil {
			t.Errorf("a refused run reported %+v", rep)
		}
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("refused runs wrote rows: %s", d)
	}
	var after []string
	e.snapshot(func(l ledgerView) { after = l.Rows("conflict_cases") })
	if d := diff(cases, after); d != "" {
		t.Errorf("refused runs changed cases (-before +after):\n%s", d)
	}
	rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: team, MaxCases: 1,
		WorkerID: strings.Repeat("w", densemem.DefaultMaxTextBytes)})
	if err != nil || rep.Claimed != 1 {
		t.Errorf("max_cases 1: %+v, %v; want one case claimed", rep, err)
	}
}

// TestBadInput_PredicateAliasCollides: RegisterPredicate refuses a phrase that would not name the new
// predicate alone, after the normalisation phrase matching uses: an alias equal to another
// predicate's key or alias (registered earlier, or in the test vocabulary), a key equal to another
// predicate's alias, and two aliases of one definition alike. Each is refused at the offending path
// (key, aliases[i]) naming the other predicate, and nothing is written: the phrase still resolves to
// the predicate that had it. A new version of a key may keep its own aliases, and an alias may spell
// out its own key.
func TestBadInput_PredicateAliasCollides(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.client.RegisterPredicate(e.ctx, e.admin, densemem.PredicateDefinition{Key: "runs_on", RelationshipKind: "state",
		CurrentCardinality: "one", Aliases: []string{"hosted on"}, SubjectKinds: []string{"environment"},
		ObjectKinds: []string{"git_branch"}}); err != nil {
		t.Fatal(err)
	}
	def := func(key string, aliases ...string) densemem.PredicateDefinition {
		return densemem.PredicateDefinition{Key: key, RelationshipKind: "state", CurrentCardinality: "many", Aliases: aliases}
	}
	for _, c := range []struct {
		name  string
		def   densemem.PredicateDefinition
		paths map[string]string // path -> the phrase's other owner named in the message
	}{
		{"an alias equal to another key", def("owns", "Works-On"), map[string]string{"aliases[0]": "works_on"}},
		{"an alias equal to another alias registered earlier", def("owns", "maintains", "hosted  on"),
			map[string]string{"aliases[1]": "runs_on"}},
		{"an alias equal to a vocabulary alias", def("owns", "Deploys From"), map[string]string{"aliases[0]": "deploys_from"}},
		{"a key equal to another alias", def("Hosted-On"), map[string]string{"key": "runs_on"}},
		{"a new version taking another's alias", def("works_on", "works on", "hosted on"), map[string]string{"aliases[1]": "runs_on"}},
		{"two aliases alike", def("owns", "owner of", "Owner-Of"), map[string]string{"aliases[1]": "aliases[0]"}},
		{"every clash with the registered at once", def("hosted_on", "deployed", "x", "runs on"),
			map[string]string{"key": "runs_on", "aliases[0]": "deployed", "aliases[2]": "runs_on"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.allCounts()
			_, err := e.client.RegisterPredicate(e.ctx, e.admin, c.def)
			var ve *densemem.ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != len(c.paths) {
				t.Errorf("err = %v, want a *ValidationError with %d problems", err, len(c.paths))
			}
			for path, other := range c.paths {
				validationAt(t, err, path, other)
			}
			if d := countsDiff(before, e.allCounts()); d != "" {
				t.Errorf("the refused definition wrote rows: %s", d)
			}
		})
	}
	// Nothing changed: each phrase still names the predicate it named.
	for phrase, key := range map[string]string{"hosted on": "runs_on", "works on": "works_on", "deploys from": "deploys_from"} {
		out := e.remember(e.A, fact{subject: "production", subjectKind: "environment", predicate: phrase, object: "main",
			objectKind: "git_branch", content: "The production environment deploys from the main branch."})
		if got := e.trace(e.A, out.RelationshipID).Relationship.Predicate; out.RelationshipID == "" || got != key {
			t.Errorf("phrase %q: outcome %s (%s) on predicate %q, want %q", phrase, out.Category, out.Reason, got, key)
		}
	}

	// Allowed: new versions keeping their own aliases, and an alias spelling out its own key.
	for _, d := range []densemem.PredicateDefinition{
		{Key: "runs_on", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"hosted on", "runs on"}},
		{Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from", "ships from"},
			SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"}},
		def("owns", "owns", "owner of"),
	} {
		if _, err := e.client.RegisterPredicate(e.ctx, e.admin, d); err != nil {
			t.Errorf("register %s %v: %v", d.Key, d.Aliases, err)
		}
	}
}

// appendBarrier holds every PredicateAppend until all the registrations of a test have called it, so
// each has read and checked whatever it reads and checks before it appends, before any of them appends.
type appendBarrier struct {
	store.Store
	arrived sync.WaitGroup
}

func (b *appendBarrier) PredicateAppend(ctx context.Context, p store.PredicateAppendParams) (relationship.Predicate, error) {
	b.arrived.Done()
	b.arrived.Wait()
	return b.Store.PredicateAppend(ctx, p)
}

// TestBadInput_ConcurrentRegistrationsTakeAPhraseOnce: registrations racing for one alias under
// different keys cannot both take it, even when every one of them has done all it does before its
// append by the time the first appends (appendBarrier): the phrase check runs under the lock that
// orders the team's registrations, so exactly one succeeds and every other is refused at aliases[0].
func TestBadInput_ConcurrentRegistrationsTakeAPhraseOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 4
	barrier := &appendBarrier{Store: e.store}
	barrier.arrived.Add(n)
	client, err := densemem.New(barrier, &densemem.Config{Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	runTogether(n, func(i int) {
		_, errs[i] = client.RegisterPredicate(e.ctx, e.admin, densemem.PredicateDefinition{Key: fmt.Sprintf("racer_%d", i),
			RelationshipKind: "state", CurrentCardinality: "many", Aliases: []string{"shared phrase"}})
	})
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		validationAt(t, err, "aliases[0]", "shared_phrase")
	}
	if won != 1 {
		t.Errorf("%d registrations took the alias, want exactly 1: %v", won, errs)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM predicate_definitions WHERE 'shared_phrase' = ANY(aliases)`); n != 1 {
		t.Errorf("%d stored definitions hold the alias, want 1", n)
	}
}

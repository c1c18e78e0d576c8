package densemem_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem"
)

// Host-level administration: the host principal, and team policy changes fenced by version.

func TestHostAdministersATeamWithoutAVocabularyProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A team with no profile at all: the host sets it up alone.
	team := e.mustTeam("initech")
	host := densemem.HostPrincipal(team)

	def, err := e.client.RegisterPredicate(e.ctx, host, densemem.PredicateDefinition{Key: "deploys from",
		RelationshipKind: "state", CurrentCardinality: "one", SubjectKinds: []string{"environment"},
		ObjectKinds: []string{"git_branch"}})
	if err != nil {
		t.Fatalf("host registers a predicate: %v", err)
	}
	if def.Key != "deploys_from" || def.Version != 1 {
		t.Errorf("registered %s v%d, want deploys_from v1", def.Key, def.Version)
	}
	pol, err := e.client.TeamPolicy(e.ctx, host)
	if err != nil {
		t.Fatalf("host reads the policy: %v", err)
	}
	pol.ReviewTTL, pol.TimeZone = 3*24*time.Hour, "Europe/Berlin"
	set, err := e.client.SetTeamPolicy(e.ctx, host, pol)
	if err != nil {
		t.Fatalf("host sets the policy: %v", err)
	}
	if set.Version != 2 || set.ReviewTTL != 3*24*time.Hour || set.TimeZone != "Europe/Berlin" {
		t.Errorf("policy = %+v, want version 2 with the new TTL and zone", set)
	}
	if got := e.ledger().Strings(`SELECT created_by FROM predicate_definitions WHERE team_id = $1
		UNION ALL SELECT created_by FROM team_policies WHERE team_id = $1 AND version = 2`, team); !cmp.Equal(got, []string{"host", "host"}) {
		t.Errorf("created_by of the host's rows = %v, want host", got)
	}

	// Profiles: the host creates an agent with the vocabulary scope and a writer, and disables one.
	vocab, err := e.client.CreateProfile(e.ctx, team, densemem.CreateProfileRequest{Name: "curator", Scopes: []densemem.Scope{"read", "vocabulary"}})
	if err != nil {
		t.Fatal(err)
	}
	writerID, err := e.client.CreateProfile(e.ctx, team, densemem.CreateProfileRequest{Name: "writer", Scopes: []densemem.Scope{"read", "write"}})
	if err != nil {
		t.Fatal(err)
	}
	writer := densemem.Principal{TeamID: team, ProfileID: writerID}
	// Profile-scoped vocabulary changes stay available to agents with the scope, and only to them.
	curator := densemem.Principal{TeamID: team, ProfileID: vocab}
	if d, err := e.client.RegisterPredicate(e.ctx, curator, densemem.PredicateDefinition{Key: "works_on",
		RelationshipKind: "state", CurrentCardinality: "many"}); err != nil || d.Version != 1 {
		t.Errorf("the curator registers works_on: v%d, %v", d.Version, err)
	}
	if _, err := e.client.RegisterPredicate(e.ctx, writer, densemem.PredicateDefinition{Key: "owns",
		RelationshipKind: "state", CurrentCardinality: "one"}); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("the writer registers a predicate: err = %v, want ErrForbidden", err)
	}
	if got := e.ledger().Strings(`SELECT created_by FROM predicate_definitions WHERE team_id = $1 AND predicate_key = 'works_on'`, team); !cmp.Equal(got, []string{string(vocab)}) {
		t.Errorf("works_on created_by = %v, want the curator", got)
	}

	// The writer remembers with the host's predicate; the host cannot remember or forget.
	out := e.remember(writer, deploy("production", "main"))
	if out.Category != densemem.CategoryAccepted {
		t.Fatalf("writer's remember: %s (%s)", out.Category, out.Reason)
	}
	before := e.countsOf(writtenTables)
	_, err = e.client.Remember(e.ctx, host, deploy("production", "release").request(nextKey()))
	if !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("host remembers: err = %v, want ErrForbidden", err)
	}
	_, err = e.client.Forget(e.ctx, host, densemem.ForgetRequest{RelationshipID: out.RelationshipID, IdempotencyKey: nextKey()})
	if !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("host forgets: err = %v, want ErrForbidden", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("the host's refused calls wrote: %s", d)
	}
	// The host reads like a reader.
	if r, err := e.client.Recall(e.ctx, host, densemem.RecallRequest{Query: "production"}); err != nil || len(r.Results) != 1 {
		t.Errorf("host recall: %v, %v", r, err)
	}
	if _, err := e.client.Trace(e.ctx, host, densemem.TraceRequest{RelationshipID: out.RelationshipID}); err != nil {
		t.Errorf("host trace: %v", err)
	}

	if err := e.client.DisableProfile(e.ctx, team, writerID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Remember(e.ctx, writer, deploy("staging", "main").request(nextKey())); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("disabled writer remembers: err = %v, want ErrForbidden", err)
	}

	// A host principal of a team that does not exist, one that names a profile, and one read from JSON.
	if _, err := e.client.TeamPolicy(e.ctx, densemem.HostPrincipal("tm_missing")); !errors.Is(err, densemem.ErrNotFound) {
		t.Errorf("host of a missing team: err = %v, want ErrNotFound", err)
	}
	named := densemem.HostPrincipal(team)
	named.ProfileID = vocab
	if _, err := e.client.TeamPolicy(e.ctx, named); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("host principal naming a profile: err = %v, want ErrForbidden", err)
	}
	var decoded densemem.Principal
	if err := json.Unmarshal([]byte(`{"team_id":"`+string(team)+`","profile_id":"","Host":true,"host":true}`), &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Host {
		t.Fatal("a principal decoded from JSON is a host principal")
	}
	if _, err := e.client.TeamPolicy(e.ctx, decoded); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("principal from JSON without a profile: err = %v, want ErrForbidden", err)
	}
	if b, _ := json.Marshal(host); string(b) != `{"team_id":"`+string(team)+`","profile_id":""}` {
		t.Errorf("host principal as JSON = %s", b)
	}

	// The host of one team administers nothing of another.
	if _, err := e.client.RegisterPredicate(e.ctx, host, densemem.PredicateDefinition{Key: "owns",
		RelationshipKind: "state", CurrentCardinality: "one"}); err != nil {
		t.Fatal(err)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM predicate_definitions WHERE team_id = $1 AND predicate_key = 'owns'`, e.team); n != 0 {
		t.Errorf("the host of %s registered a predicate in %s", team, e.team)
	}
}

func TestSetTeamPolicyValidatesTheExpectedVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pol, err := e.client.TeamPolicy(e.ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{0, -1, 1 << 40} {
		p := pol
		p.Version = v
		var ve *densemem.ValidationError
		if _, err := e.client.SetTeamPolicy(e.ctx, e.admin, p); !errors.As(err, &ve) || !ve.Has("version") {
			t.Errorf("version %d: err = %v, want a ValidationError at version", v, err)
		}
	}
	if _, err := e.client.SetTeamPolicy(e.ctx, e.admin, pol); err != nil {
		t.Fatal(err)
	}
	// The same change again, from the version that is no longer in force.
	if _, err := e.client.SetTeamPolicy(e.ctx, e.admin, pol); !errors.Is(err, densemem.ErrStaleVersion) {
		t.Errorf("from a replaced version: err = %v, want ErrStaleVersion", err)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM team_policies WHERE team_id = $1`, e.team); n != 2 {
		t.Errorf("%d policy versions, want 2", n)
	}
}

// TestSetTeamPolicyRacingUpdates changes the policy from the same version in two goroutines at
// once: exactly one change is appended, the other caller is told ErrStaleVersion.
func TestSetTeamPolicyRacingUpdates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	host := densemem.HostPrincipal(e.team)
	pol, err := e.client.TeamPolicy(e.ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	changes := []densemem.TeamPolicy{pol, pol}
	changes[0].ReviewTTL, changes[1].ReviewTTL = 2*24*time.Hour, 3*24*time.Hour
	principals := []densemem.Principal{host, e.admin}
	results := make([]densemem.TeamPolicy, 2)
	errs := make([]error, 2)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range changes {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			results[i], errs[i] = e.client.SetTeamPolicy(e.ctx, principals[i], changes[i])
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()

	won := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("both changes from version %d succeeded: %+v and %+v", pol.Version, results[won], results[i])
			}
			won = i
		case !errors.Is(err, densemem.ErrStaleVersion):
			t.Errorf("change %d: err = %v, want nil or ErrStaleVersion", i, err)
		}
	}
	if won < 0 {
		t.Fatalf("neither change succeeded: %v", errs)
	}
	if results[won].Version != pol.Version+1 {
		t.Errorf("the winner's version = %d, want %d", results[won].Version, pol.Version+1)
	}
	if got := e.ledger().Strings(`SELECT version || ':' || review_ttl_seconds FROM team_policies WHERE team_id = $1 ORDER BY version`, e.team); len(got) != pol.Version+1 {
		t.Errorf("policy history %v, want exactly one new version", got)
	}
	now, err := e.client.TeamPolicy(e.ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(results[won], now); d != "" {
		t.Errorf("policy in force is not the winner's (-winner +in force):\n%s", d)
	}
}

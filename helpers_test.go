package densemem_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/densememtest"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/store/postgres"
)

// testClock is an injected clock: it moves only when a test says so.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is one test's isolated world: its own database, a client, a team with three writers (A, B, C)
// and a vocabulary admin, and a small registered vocabulary.
type env struct {
	t   testing.TB
	ctx context.Context
	// pool is a superuser's: tests read and arrange rows through it, beyond row-level security.
	pool *pgxpool.Pool
	// runtime and reviewer are the pools the client's stores use, as those roles.
	runtime, reviewer *pgxpool.Pool
	// bindingKey is the database's binding key, which the client's stores hold (migration 25).
	bindingKey []byte
	// reviewStore is the store of the client's nightly review (the reviewer role's).
	reviewStore *postgres.Store
	store       *postgres.Store
	client      *densemem.Client
	clock       *testClock
	team        densemem.TeamID
	admin       densemem.Principal
	A, B        densemem.Principal
	C           densemem.Principal
}

// envOption adjusts the client config of a new env.
type envOption func(*densemem.Config)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	pool := testdb.New(t)
	return newEnvOnPool(t, pool, opts...)
}

// newEnvOnPool builds an env on the database behind pool. pool (a superuser's) stays the test's
// window onto every row; the client connects as the runtime role and runs the nightly review as the
// reviewer role, under row-level security and their privileges, as in production.
func newEnvOnPool(t testing.TB, pool *pgxpool.Pool, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), pool: pool, clock: newTestClock()}
	cfg := &densemem.Config{Clock: e.clock.Now}
	for _, o := range opts {
		o(cfg)
	}
	// The same set-up densememtest gives a host's tests.
	db := densememtest.Open(t, pool, cfg)
	e.client, e.store, e.reviewStore, e.runtime, e.reviewer = db.Client, db.Store, db.ReviewStore, db.Runtime, db.Reviewer
	e.bindingKey = db.BindingKey
	return e.populate()
}

// populate creates e's team, its profiles and its vocabulary through e.client.
func (e *env) populate() *env {
	e.team = e.mustTeam("acme")
	e.admin = e.mustProfile("admin", densemem.Scope("read"), densemem.Scope("vocabulary"))
	e.A = e.mustProfile("A", "read", "write")
	e.B = e.mustProfile("B", "read", "write")
	e.C = e.mustProfile("C", "read", "write")
	e.registerVocabulary(e.admin)
	return e
}

// teamSQL opens a raw transaction of a team as the store does: densemem.team, its binding
// (bindArgs) and the schema as search_path.
const teamSQL = "SELECT set_config('densemem.team', $1, true), set_config('densemem.binding', $2, true), " +
	"set_config('search_path', 'densemem', true)"

// bindArgs are teamSQL's arguments for team on tx's connection, bound with key.
func bindArgs(tx pgx.Tx, key []byte, team densemem.TeamID) []any {
	return []any{string(team), postgres.SessionBinding(key, team, "", tx.Conn().PgConn().PID())}
}

func (e *env) mustTeam(name string) densemem.TeamID {
	e.t.Helper()
	id, err := e.client.CreateTeam(e.ctx, densemem.CreateTeamRequest{Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *env) mustProfile(name string, scopes ...densemem.Scope) densemem.Principal {
	e.t.Helper()
	id, err := e.client.CreateProfile(e.ctx, e.team, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
	if err != nil {
		e.t.Fatal(err)
	}
	return densemem.Principal{TeamID: e.team, ProfileID: id}
}

// registerVocabulary registers the predicates the tests use:
//
//	deploys_from  state, one   environment -> git_branch
//	works_on      state, many  person -> project
//	deployed      event, one   environment -> git_branch
//	owner_email   state, one   project -> value
func (e *env) registerVocabulary(p densemem.Principal) {
	e.t.Helper()
	for _, def := range []densemem.PredicateDefinition{
		{Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one", Aliases: []string{"deploys from"},
			SubjectKinds: []string{"environment"}, ObjectKinds: []string{"git_branch"}, Description: "the branch an environment deploys from"},
		{Key: "works_on", RelationshipKind: "state", CurrentCardinality: "many", Description: "a person works on a project"},
		{Key: "deployed", RelationshipKind: "event", CurrentCardinality: "one", Description: "a deployment happened"},
		{Key: "owner_email", RelationshipKind: "state", CurrentCardinality: "one", ValueObject: true, Description: "contact address"},
	} {
		if _, err := e.client.RegisterPredicate(e.ctx, p, def); err != nil {
			e.t.Fatal(err)
		}
	}
}

// fact describes one single-relationship Remember: "<subject> <predicate> <object>" cited from content.
type fact struct {
	subject, subjectKind string
	predicate            string
	object, objectKind   string
	content              string
	validFrom            *time.Time
	polarity             densemem.Polarity
	modality             densemem.Modality
	scope                string
	sourceGroup          string
	authority            densemem.Authority
}

// deploy is the common fact "<env> deploys_from <branch>" with content naming both.
func deploy(env, branch string) fact {
	return fact{subject: env, subjectKind: "environment", predicate: "deploys_from", object: branch, objectKind: "git_branch",
		content: fmt.Sprintf("The %s environment deploys from the %s branch.", env, branch)}
}

func (f fact) since(t time.Time) fact {
	f.validFrom = &t
	f.content = fmt.Sprintf("Since %s the %s environment deploys from the %s branch.", t.Format(time.DateOnly), f.subject, f.object)
	return f
}

func (f fact) request(key string) densemem.RememberRequest {
	return densemem.RememberRequest{
		IdempotencyKey: key,
		Evidence: []densemem.EvidenceInput{{Content: f.content, SourceType: "manual", SourceGroup: f.sourceGroup,
			Authority: f.authority}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{
				{Ref: "s", Name: f.subject, EntityKind: f.subjectKind},
				{Ref: "o", Name: f.object, EntityKind: f.objectKind},
			},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "s", Predicate: f.predicate,
				ObjectRef: "o", Polarity: f.polarity, Modality: f.modality, Scope: f.scope, ValidFrom: f.validFrom,
				Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(f.content)}}}},
		},
	}
}

var keySeq struct {
	sync.Mutex
	n int
}

func nextKey() string {
	keySeq.Lock()
	defer keySeq.Unlock()
	keySeq.n++
	return fmt.Sprintf("key-%d", keySeq.n)
}

// remember stores f for p and returns its only relationship outcome.
func (e *env) remember(p densemem.Principal, f fact) densemem.RelationshipOutcome {
	e.t.Helper()
	pl, err := e.client.Remember(e.ctx, p, f.request(nextKey()))
	if err != nil {
		e.t.Fatalf("remember %s %s %s: %v", f.subject, f.predicate, f.object, err)
	}
	if len(pl.RelationshipOutcomes) != 1 {
		e.t.Fatalf("want 1 outcome, got %d", len(pl.RelationshipOutcomes))
	}
	return pl.RelationshipOutcomes[0]
}

// trace traces a relationship for p with everything included and fails the test on error.
func (e *env) trace(p densemem.Principal, id densemem.RelationshipID) *densemem.TraceResult {
	e.t.Helper()
	tr, err := e.client.Trace(e.ctx, p, densemem.TraceRequest{RelationshipID: id, IncludeEvidenceContent: true,
		IncludeVerification: true, IncludeTransitions: true})
	if err != nil {
		e.t.Fatalf("trace %s: %v", id, err)
	}
	return tr
}

// relationshipState reads a relationship's current status, tier, valid_to and version through Trace,
// as the team's admin.
func (e *env) relationshipState(id densemem.RelationshipID) (status, tier string, validTo *time.Time, version int) {
	e.t.Helper()
	r := e.trace(e.admin, id).Relationship
	return string(r.Status), string(r.Tier), r.ValidTo, r.Version
}

// transitions returns "from->to:reason" for each transition of a relationship, in version order,
// read through Trace as the team's admin.
func (e *env) transitions(id densemem.RelationshipID) []string {
	e.t.Helper()
	tr := e.trace(e.admin, id)
	for _, cut := range tr.Truncated {
		if cut.List == densemem.TraceListTransitions {
			e.t.Fatalf("relationship %s has more transitions than one trace page", id)
		}
	}
	var out []string
	for _, x := range tr.Transitions {
		out = append(out, string(x.FromStatus)+"->"+string(x.ToStatus)+":"+x.Reason)
	}
	return out
}

func date(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// rememberReq calls Remember and fails the test on error.
func (e *env) rememberReq(p densemem.Principal, req densemem.RememberRequest) *densemem.Placement {
	e.t.Helper()
	pl, err := e.client.Remember(e.ctx, p, req)
	if err != nil {
		e.t.Fatalf("remember %s: %v", req.IdempotencyKey, err)
	}
	return pl
}

// only returns the single relationship outcome of a placement.
func only(t testing.TB, pl *densemem.Placement) densemem.RelationshipOutcome {
	t.Helper()
	if len(pl.RelationshipOutcomes) != 1 {
		t.Fatalf("want 1 relationship outcome, got %d: %+v", len(pl.RelationshipOutcomes), pl.RelationshipOutcomes)
	}
	return pl.RelationshipOutcomes[0]
}

// profileIn creates a profile in another team than the env's.
func (e *env) profileIn(team densemem.TeamID, name string, scopes ...densemem.Scope) densemem.Principal {
	e.t.Helper()
	id, err := e.client.CreateProfile(e.ctx, team, densemem.CreateProfileRequest{Name: name, Scopes: scopes})
	if err != nil {
		e.t.Fatal(err)
	}
	return densemem.Principal{TeamID: team, ProfileID: id}
}

// withContent replaces a fact's content (cited whole).
func withContent(f fact, content string) fact {
	f.content = content
	return f
}

// diff is cmp.Diff that also compares the unexported fields of the tests' expectation structs.
func diff(want, got any, opts ...cmp.Option) string {
	return cmp.Diff(want, got, append(opts, cmp.Exporter(func(reflect.Type) bool { return true }))...)
}

// step advances the env clock by a minute and returns the new time, so every call of a test
// records a distinct, known time.
func (e *env) step() time.Time {
	e.clock.Advance(time.Minute)
	return e.clock.Now()
}

// entityID returns the entity a placement resolved ref to.
func entityID(t testing.TB, pl *densemem.Placement, ref string) densemem.EntityID {
	t.Helper()
	for _, en := range pl.Entities {
		if en.Ref == ref {
			return en.EntityID
		}
	}
	t.Fatalf("placement has no entity outcome for ref %q: %+v", ref, pl.Entities)
	return ""
}

// rememberOne calls Remember and fails the test on error or unless it placed exactly one relationship.
func (e *env) rememberOne(p densemem.Principal, req densemem.RememberRequest) *densemem.Placement {
	e.t.Helper()
	pl, err := e.client.Remember(e.ctx, p, req)
	if err != nil {
		e.t.Fatalf("remember %s: %v", req.IdempotencyKey, err)
	}
	if len(pl.RelationshipOutcomes) != 1 {
		e.t.Fatalf("remember %s: want 1 outcome, got %d", req.IdempotencyKey, len(pl.RelationshipOutcomes))
	}
	return pl
}

// responding is f's request carrying a conflict response.
func responding(f fact, conflictID string, version int) densemem.RememberRequest {
	req := f.request(nextKey())
	req.Proposal.Relationships[0].ConflictResponse = &densemem.ConflictResponse{ConflictID: conflictID, ExpectedVersion: version}
	return req
}

// correcting is f's request naming the relationship it corrects.
func correcting(f fact, id densemem.RelationshipID) densemem.RememberRequest {
	req := f.request(nextKey())
	req.Proposal.Relationships[0].CorrectsRelationshipID = id
	return req
}

// recallIDs returns the relationship IDs of a recall, sorted.
func recallIDs(r *densemem.RecallResponse) []densemem.RelationshipID {
	out := []densemem.RelationshipID{}
	for _, x := range r.Results {
		out = append(out, x.Relationship.RelationshipID)
	}
	slices.Sort(out)
	return out
}

// sortedIDs returns ids sorted, in a new slice.
func sortedIDs(ids ...densemem.RelationshipID) []densemem.RelationshipID {
	out := append([]densemem.RelationshipID{}, ids...)
	slices.Sort(out)
	return out
}

// byID returns req with every entity named by its known_entity_id instead of by name, so the
// call takes no entity-name lock and only the conflict-key lock (DESIGN §5 step 9b) orders it against
// other writers of the key. Every entity must exist.
func byID(t *testing.T, e *env, req densemem.RememberRequest) densemem.RememberRequest {
	t.Helper()
	ents := slices.Clone(req.Proposal.Entities)
	for i := range ents {
		ids := e.ledger().Entities(e.team, ents[i].EntityKind, ents[i].Name)
		if len(ids) != 1 {
			t.Fatalf("%s %s: entities %v, want exactly one", ents[i].EntityKind, ents[i].Name, ids)
		}
		ents[i].KnownEntityID = densemem.EntityID(ids[0])
	}
	req.Proposal.Entities = ents
	return req
}

// runTogether runs fn(i) for i in 0..n-1 on n goroutines that start together: each waits on a closed
// channel, so the calls reach the library as close together as the scheduler allows. It returns when
// every call has returned.
func runTogether(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// recall recalls query at the given instants (nil: the current view).
func (e *env) recall(p densemem.Principal, query string, validAt, knownAt *time.Time) *densemem.RecallResponse {
	e.t.Helper()
	r, err := e.client.Recall(e.ctx, p, densemem.RecallRequest{Query: query, ValidAt: validAt, KnownAt: knownAt, Limit: 50})
	if err != nil {
		e.t.Fatalf("recall %q: %v", query, err)
	}
	return r
}

// resultFor returns the recall result of id, or nil.
func resultFor(r *densemem.RecallResponse, id densemem.RelationshipID) *densemem.RecallResult {
	for i := range r.Results {
		if r.Results[i].Relationship.RelationshipID == id {
			return &r.Results[i]
		}
	}
	return nil
}

// nextMidnightUTC is the start of the UTC day after t: the next run date of a UTC team.
func nextMidnightUTC(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
}

// quiet silences the reviewer's warnings in tests that make it fail on purpose.
func quiet(c *densemem.Config) { c.Logger = slog.New(slog.DiscardHandler) }

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// ---- requests of several statements and literal values ----

// mergeRequests combines single-statement requests into one request under key: evidence items are
// concatenated, refs and proposal IDs prefixed per request so they stay unique.
func mergeRequests(key string, reqs ...densemem.RememberRequest) densemem.RememberRequest {
	out := densemem.RememberRequest{IdempotencyKey: key}
	for i, r := range reqs {
		base := len(out.Evidence)
		out.Evidence = append(out.Evidence, r.Evidence...)
		prefix := fmt.Sprintf("r%d_", i)
		for _, en := range r.Proposal.Entities {
			en.Ref = prefix + en.Ref
			out.Proposal.Entities = append(out.Proposal.Entities, en)
		}
		for _, rel := range r.Proposal.Relationships {
			rel.ProposalID = prefix + rel.ProposalID
			rel.SubjectRef = prefix + rel.SubjectRef
			if rel.ObjectRef != "" {
				rel.ObjectRef = prefix + rel.ObjectRef
			}
			cites := slices.Clone(rel.Evidence)
			for j := range cites {
				cites[j].EvidenceIndex += base
			}
			rel.Evidence = cites
			out.Proposal.Relationships = append(out.Proposal.Relationships, rel)
		}
	}
	return out
}

// ownerEmail is "<project> owner_email <address>" with a literal value object.
func ownerEmail(project, address string) densemem.RememberRequest {
	content := fmt.Sprintf("The %s project owner email is %s.", project, address)
	return densemem.RememberRequest{
		Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{{Ref: "s", Name: project, EntityKind: "project"}},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "s", Predicate: "owner_email",
				ObjectValue: &densemem.ObjectValue{Type: densemem.ValueString, Value: address},
				Evidence:    []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}},
		},
	}
}

// denseMemEmail is the Dense-Mem project's owner_email fact with address, under a fresh key.
func denseMemEmail(address string) densemem.RememberRequest {
	req := ownerEmail("Dense-Mem", address)
	req.IdempotencyKey = nextKey()
	return req
}

package densemem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/internal/testsupport/testdb"
)

// TestRecallExcerptsOfMultiByteEvidence: evidence longer than the excerpt limit whose limit falls
// inside a character (accented, CJK, emoji, combining marks, at every offset of the cut within a
// character) is recalled with a valid excerpt of at most 600 bytes that is a prefix of the cited span,
// and traced with the whole span. (Before the fix such evidence made every recall touching it fail
// with SQLSTATE 22021.)
func TestRecallExcerptsOfMultiByteEvidence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	units := map[string]string{
		"accented":  "déploiement évalué à Zürich, ",
		"cjk":       "生产环境从发布分支部署。",
		"emoji":     "🚀👩🏽‍💻🇫🇷 ",
		"combining": "cafe\u0301 nai\u0308ve ",
	}
	for name, unit := range units {
		for pad := 0; pad < 12; pad++ {
			subject := fmt.Sprintf("svc-%s-%d", name, pad)
			head := fmt.Sprintf("The %s environment deploys from the main branch. %s", subject, strings.Repeat("x", pad))
			content := head + strings.Repeat(unit, 1+(evidence.MaxExcerptBytes+100)/len(unit))
			f := deploy(subject, "main")
			f.content = content
			out := e.remember(e.A, f)
			if out.Category != densemem.CategoryAccepted {
				t.Fatalf("%s: %s (%s)", subject, out.Category, out.Reason)
			}
			rc, err := e.client.Recall(e.ctx, e.C, densemem.RecallRequest{Query: subject})
			if err != nil {
				t.Fatalf("recall %s: %v", subject, err)
			}
			found := false
			for _, r := range rc.Results {
				if r.Relationship.RelationshipID != out.RelationshipID {
					continue
				}
				found = true
				for _, ex := range r.Evidence {
					switch {
					case !utf8.ValidString(ex.Excerpt):
						t.Errorf("%s: excerpt is not valid UTF-8", subject)
					case len(ex.Excerpt) > evidence.MaxExcerptBytes:
						t.Errorf("%s: excerpt of %d bytes", subject, len(ex.Excerpt))
					case !strings.HasPrefix(content, ex.Excerpt) || !ex.ExcerptTruncated:
						t.Errorf("%s: excerpt %q is not a truncated prefix of the span (truncated %v)", subject, ex.Excerpt, ex.ExcerptTruncated)
					case len(ex.Excerpt) < evidence.MaxExcerptBytes*3/4-32:
						t.Errorf("%s: excerpt of %d bytes, far below the limit", subject, len(ex.Excerpt))
					}
				}
			}
			if !found {
				t.Fatalf("%s: recall did not return the relationship", subject)
			}
			tr, err := e.client.Trace(e.ctx, e.C, densemem.TraceRequest{RelationshipID: out.RelationshipID, IncludeEvidenceContent: true})
			if err != nil {
				t.Fatalf("trace %s: %v", subject, err)
			}
			if len(tr.Evidence) != 1 || tr.Evidence[0].Excerpt != content || tr.Evidence[0].Content != content {
				t.Errorf("%s: trace does not show the whole cited span", subject)
			}
		}
	}
}

// TestUnexpectedStoreFailureIsErrInternal: a database failure the library does not expect reaches the
// caller as ErrInternal with the driver's error in the chain, never as an untyped string; a table or
// column the library needs but the schema lacks is ErrNotMigrated (run the migrations).
func TestUnexpectedStoreFailureIsErrInternal(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	out := e.remember(e.A, deploy("production", "main"))
	// A column the recall statement needs is gone: the schema is not what the library expects.
	if _, err := e.pool.Exec(e.ctx, `ALTER TABLE support_links RENAME COLUMN span_end TO span_end_gone`); err != nil {
		t.Fatal(err)
	}
	_, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "production"})
	var pgErr *pgconn.PgError
	if !errors.Is(err, densemem.ErrNotMigrated) || !errors.As(err, &pgErr) || pgErr.Code != "42703" {
		t.Fatalf("recall over a missing column: %v (%T), want ErrNotMigrated wrapping SQLSTATE 42703", err, err)
	}
	if strings.Count(err.Error(), "densemem:") != 1 || !strings.HasPrefix(err.Error(), "densemem: ") {
		t.Errorf("message %q does not start with one densemem: prefix", err)
	}
	if _, err := e.pool.Exec(e.ctx, `ALTER TABLE support_links RENAME COLUMN span_end_gone TO span_end`); err != nil {
		t.Fatal(err)
	}
	// A value the library cannot read: a trigger function that fails with an error of its own.
	if _, err := e.pool.Exec(e.ctx, `CREATE FUNCTION densemem.broken() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'something unexpected' USING ERRCODE = 'XX999'; END $$;
		CREATE TRIGGER broken BEFORE INSERT ON densemem.fragment_contents FOR EACH ROW EXECUTE FUNCTION densemem.broken()`); err != nil {
		t.Fatal(err)
	}
	_, err = e.client.Remember(e.ctx, e.A, deploy("staging", "main").request(nextKey()))
	if !errors.Is(err, densemem.ErrInternal) || !errors.As(err, &pgErr) || pgErr.Code != "XX999" {
		t.Fatalf("remember through a failing trigger: %v, want ErrInternal wrapping SQLSTATE XX999", err)
	}
	if _, err = e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: out.RelationshipID}); err != nil {
		t.Fatalf("trace: %v", err)
	}
}

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOverLimitRequestsAllocateLittle: a request far over a count limit is refused on its counts
// alone (one problem, a few kilobytes allocated, nothing written, before the principal is loaded),
// and a request within the limits but full of problems lists MaxProblems of them and counts the rest,
// allocating a small multiple of its own size. (Before: 1,000,000 empty relationships produced
// 6,000,001 problems and allocated 2.96 GB.) Not parallel: the allocation counter is the process's,
// and a sequential test runs while every parallel test of the package is paused.
func TestOverLimitRequestsAllocateLittle(t *testing.T) {
	e := newEnv(t)
	before := e.counts()

	huge := densemem.RememberRequest{IdempotencyKey: "k", Evidence: []densemem.EvidenceInput{{Content: "x", SourceType: "manual"}},
		Proposal: densemem.Proposal{Relationships: make([]densemem.ProposedRelationship, 1_000_000)}}
	var err error
	bytes := allocated(func() { _, err = e.client.Remember(e.ctx, e.A, huge) })
	var verr *densemem.ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 1 || !verr.Has("proposal.relationships") {
		t.Fatalf("1,000,000 relationships: %v, want one count problem", err)
	}
	if bytes > 64<<10 {
		t.Errorf("1,000,000 relationships: %d bytes allocated, want at most 64 KiB", bytes)
	}

	// Within the limits, every citation wrong: 200 relationships × 20 citations.
	many := densemem.RememberRequest{IdempotencyKey: "k", Evidence: []densemem.EvidenceInput{{Content: "x", SourceType: "manual"}}}
	many.Proposal.Entities = []densemem.ProposedEntity{{Ref: "s", Name: "s", EntityKind: "environment"}}
	for i := range densemem.DefaultMaxRelationships {
		r := densemem.ProposedRelationship{ProposalID: fmt.Sprint(i), SubjectRef: "s", Predicate: "deploys from", ObjectRef: "s"}
		for range densemem.DefaultMaxCitations {
			r.Evidence = append(r.Evidence, densemem.Citation{EvidenceIndex: 7, Start: 0, End: 1})
		}
		many.Proposal.Relationships = append(many.Proposal.Relationships, r)
	}
	size, _ := json.Marshal(many)
	hugeBytes := bytes
	bytes = allocated(func() { _, err = e.client.Remember(e.ctx, e.A, many) })
	if !errors.As(err, &verr) || len(verr.Problems) != densemem.MaxProblems || verr.Omitted == 0 {
		t.Fatalf("4000 bad citations: %v, want %d problems and the rest counted", err, densemem.MaxProblems)
	}
	if want := densemem.DefaultMaxRelationships*densemem.DefaultMaxCitations + 1 - densemem.MaxProblems; verr.Omitted != want {
		t.Errorf("omitted %d problems, want %d", verr.Omitted, want)
	}
	if bytes > 8*uint64(len(size)) {
		t.Errorf("4000 bad citations: %d bytes allocated for a %d-byte request, want at most 8x", bytes, len(size))
	}
	t.Logf("1,000,000 relationships: %d bytes allocated; 4000 problems: %d bytes for a %d-byte request", hugeBytes, bytes, len(size))
	if d := countsDiff(before, e.counts()); d != "" {
		t.Errorf("rejected requests wrote rows: %s", d)
	}
}

// TestRecallBoundsQueryTermsAndCandidates: a long query is searched by its first MaxQueryTerms words
// and says how many it left out; a word matching more rows than MaxRecallHits makes the ranking see
// only that many per source and the response says so.
func TestRecallBoundsQueryTermsAndCandidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *densemem.Config) { c.Limits.MaxRecallHits = 5; c.Limits.MaxQueryTerms = 4 })
	for i := range 12 {
		e.remember(e.A, deploy(fmt.Sprintf("svc%d", i), "hubbranch"))
	}
	words := make([]string, 60)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	rc, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "svc3 or " + strings.Join(words, " or ")})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*len(words) + 1 - 4; rc.QueryTermsDropped != want {
		t.Errorf("query terms dropped: %d, want %d", rc.QueryTermsDropped, want)
	}
	if len(rc.Results) == 0 || rc.Results[0].Relationship.Subject.Name != "svc3" {
		t.Errorf("the first words still search: %+v", rc.Results)
	}
	rc, err = e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "hubbranch", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !rc.CandidatesTruncated {
		t.Errorf("12 matches with MaxRecallHits 5: candidates_truncated not reported")
	}
	if len(rc.Results) == 0 || len(rc.Results) > 12 {
		t.Errorf("%d results", len(rc.Results))
	}
	rc, err = e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "svc7"})
	if err != nil || rc.CandidatesTruncated || rc.QueryTermsDropped != 0 {
		t.Errorf("a narrow query: %+v, %v; want nothing truncated", rc, err)
	}
}

// TestStatementTimeoutIsErrTimeout: a store call whose statement runs past Limits.StatementTimeout
// (here: waiting on locks the test holds) fails with ErrTimeout and writes nothing. The client runs on
// one connection that has prepared its statements already, so the waits happen while statements
// execute, under the transaction's timeout (see decision 46 for statement preparation).
func TestStatementTimeoutIsErrTimeout(t *testing.T) {
	slow(t)
	t.Parallel()
	url := testdb.NewURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// Long enough that the warm-up below never times out on a loaded machine (it did at 200ms, with
	// CI's race run beside it); the blocked calls below wait for it in full.
	e := newEnvOnPool(t, pool, func(c *densemem.Config) { c.Limits.StatementTimeout = time.Second })
	// Warm the connection: every statement of Remember and Recall is prepared on it.
	e.remember(e.A, deploy("production", "main"))
	e.remember(e.A, deploy("production", "release"))
	if _, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "production"}); err != nil {
		t.Fatal(err)
	}
	before := e.counts()

	other, err := pgx.Connect(e.ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(e.ctx)
	tx, err := other.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	if _, err := tx.Exec(e.ctx, `LOCK TABLE relationships IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_, err = e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "production"})
	var pgErr *pgconn.PgError
	if !errors.Is(err, densemem.ErrTimeout) || !errors.As(err, &pgErr) {
		t.Errorf("recall against a locked table: %v, want ErrTimeout with the driver error in the chain", err)
	}
	_, err = e.client.Remember(e.ctx, e.A, deploy("production", "develop").request(nextKey()))
	if !errors.Is(err, densemem.ErrTimeout) {
		t.Errorf("remember against a locked table: %v, want ErrTimeout", err)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if d := countsDiff(before, e.counts()); d != "" {
		t.Errorf("a timed-out call wrote rows: %s", d)
	}
	if _, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "production"}); err != nil {
		t.Errorf("recall after the lock is gone: %v", err)
	}
}

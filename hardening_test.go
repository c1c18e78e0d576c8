package densemem_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/evidence"
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
// caller as ErrInternal with the driver's error in the chain, never as an untyped string.
func TestUnexpectedStoreFailureIsErrInternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.remember(e.A, deploy("production", "main"))
	// Break the evidence read on purpose: a column the recall statement needs is gone.
	if _, err := e.pool.Exec(e.ctx, `ALTER TABLE support_links RENAME COLUMN span_end TO span_end_gone`); err != nil {
		t.Fatal(err)
	}
	_, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{ExpandFromEntityIDs: []densemem.EntityID{"x"}, Query: "production"})
	var pgErr *pgconn.PgError
	if !errors.Is(err, densemem.ErrInternal) || !errors.As(err, &pgErr) || pgErr.Code != "42703" {
		t.Fatalf("recall over a broken schema: %v (%T), want ErrInternal wrapping SQLSTATE 42703", err, err)
	}
	_, err = e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: out.RelationshipID})
	if !errors.Is(err, densemem.ErrInternal) || !errors.As(err, &pgErr) {
		t.Fatalf("trace over a broken schema: %v, want ErrInternal", err)
	}
}

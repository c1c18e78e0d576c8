package densemem_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
)

// hookVerifier is the span verifier that runs hook once, on its first call: between a Remember's
// read before its transaction and its write, where a concurrent writer can change what the read saw.
type hookVerifier struct {
	evidence.SpanVerifier
	done atomic.Bool
	hook func(ctx context.Context)
}

func (v *hookVerifier) Verify(ctx context.Context, req evidence.VerifyRequest) ([]evidence.Result, error) {
	if v.done.CompareAndSwap(false, true) {
		v.hook(ctx) // the hook's own Remember calls Verify again, which runs no hook
	}
	return v.SpanVerifier.Verify(ctx, req)
}

// lockedBuffer is a log sink safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// fallbackLog is the debug message of a Remember whose optimistic write failed its fence and was
// placed under the locks instead.
const fallbackLog = "densemem: remember placed under locks"

// placementShape is a placement with its IDs replaced by their roles: the entities of the other
// writer's call, or new ones.
type placementShape struct {
	Entities []string
	Outcomes []string
}

func shapeOf(pl *densemem.Placement, roles map[densemem.EntityID]string) placementShape {
	var s placementShape
	for _, e := range pl.Entities {
		role, ok := roles[e.EntityID]
		if !ok {
			role = "new"
		}
		var cands []string
		for _, c := range e.Candidates {
			cands = append(cands, roles[c.EntityID])
		}
		s.Entities = append(s.Entities, e.Ref+":"+string(e.Decision)+":"+role+":"+strings.Join(cands, ","))
	}
	for _, o := range pl.RelationshipOutcomes {
		conflict := ""
		if o.Conflict != nil {
			conflict = o.Conflict.Status
		}
		var xrefs []string
		for _, x := range o.CrossReferences {
			xrefs = append(xrefs, string(x.Kind))
		}
		s.Outcomes = append(s.Outcomes, string(o.Category)+":"+conflict+":"+strings.Join(xrefs, ",")+
			":"+strings.Repeat("r", len(o.Related)))
	}
	return s
}

// racedRemember runs A's Remember of mine on a new env while B's Remember of theirs runs inside A's
// verifier call, after A's read and before its write; locked makes A's client place under its locks
// only. It returns the env, both placements and how many Remembers fell back to the locks.
func racedRemember(t *testing.T, mine, theirs fact, locked bool) (e *env, pl, other *densemem.Placement, fellBack int) {
	t.Helper()
	logs := &lockedBuffer{}
	v := &hookVerifier{hook: func(ctx context.Context) {
		var err error
		if other, err = e.client.Remember(ctx, e.B, theirs.request("theirs")); err != nil {
			t.Errorf("the concurrent writer: %v", err)
		}
	}}
	e = newEnv(t, func(c *densemem.Config) {
		c.Verifier = v
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if locked {
		densemem.PlaceUnderLocksOnly(e.client)
	}
	pl, err := e.client.Remember(e.ctx, e.A, mine.request("mine"))
	if err != nil {
		t.Fatal(err)
	}
	if other == nil {
		t.Fatal("the concurrent writer did not run")
	}
	e.checkLedger()
	return e, pl, other, logs.count(fallbackLog)
}

// TestConcurrentWriterFailsRememberFence: a Remember plans its rows from the read before its
// transaction and writes them in one round trip behind a fence (decision 118). When another writer
// creates an entity whose name has the same confusable skeleton between that read and the write, the
// fence fails, nothing of the optimistic attempt remains, and the Remember is placed under the locks:
// with exactly the placement and the rows of the same race run with the locked path alone.
func TestConcurrentWriterFailsRememberFence(t *testing.T) {
	slow(t)
	t.Parallel()
	for _, tc := range []struct{ name, other string }{
		{"same name", "production"},
		{"look-alike name", "prоduction"}, // Cyrillic о: the same skeleton, another name
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if a, b := identity.NormalizeName("production"), identity.NormalizeName(tc.other); identity.Skeleton(a) != identity.Skeleton(b) {
				t.Fatalf("%q and %q do not share a skeleton", "production", tc.other)
			}
			mine, theirs := deploy("production", "release"), deploy(tc.other, "main")
			e, raced, other, fellBack := racedRemember(t, mine, theirs, false)
			if fellBack != 1 {
				t.Errorf("%d Remembers placed under the locks after a failed fence, want 1 (the raced one)", fellBack)
			}
			ref, locked, otherRef, _ := racedRemember(t, mine, theirs, true)

			roles := func(pl *densemem.Placement) map[densemem.EntityID]string {
				return map[densemem.EntityID]string{pl.Entities[0].EntityID: "their subject", pl.Entities[1].EntityID: "their object"}
			}
			if d := diff(shapeOf(locked, roles(otherRef)), shapeOf(raced, roles(other))); d != "" {
				t.Errorf("placement (-locked path +optimistic then fallback):\n%s", d)
			}
			if d := countsDiff(ref.counts(), e.counts()); d != "" {
				t.Errorf("rows: locked path against optimistic then fallback: %s", d)
			}
		})
	}
}

// TestConcurrentDisableFailsRememberFence: a profile disabled between a Remember's read and its write
// fails the fence (the profile is re-read FOR SHARE under the locks), and the locked path refuses the
// call with ErrForbidden, writing nothing, as it does when it runs alone.
func TestConcurrentDisableFailsRememberFence(t *testing.T) {
	slow(t)
	t.Parallel()
	for _, locked := range []bool{false, true} {
		logs := &lockedBuffer{}
		var e *env
		v := &hookVerifier{hook: func(ctx context.Context) {
			if err := e.client.DisableProfile(ctx, e.team, e.A.ProfileID); err != nil {
				t.Errorf("disable: %v", err)
			}
		}}
		e = newEnv(t, func(c *densemem.Config) {
			c.Verifier = v
			c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		if locked {
			densemem.PlaceUnderLocksOnly(e.client)
		}
		before := e.counts()
		pl, err := e.client.Remember(e.ctx, e.A, deploy("production", "main").request("mine"))
		if !errors.Is(err, densemem.ErrForbidden) {
			t.Fatalf("locked path only %v: placement %+v, err %v; want ErrForbidden", locked, pl, err)
		}
		if d := countsDiff(before, e.counts()); d != "" {
			t.Errorf("locked path only %v: wrote %s", locked, d)
		}
		if n, want := logs.count(fallbackLog), map[bool]int{false: 1, true: 0}[locked]; n != want {
			t.Errorf("locked path only %v: %d fallbacks, want %d", locked, n, want)
		}
	}
}

package densemem_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

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

// relationshipStates lists every relationship of e's team as owner, subject, predicate, object,
// status, tier and version, sorted: what two runs of one story must agree on, whatever their IDs.
func relationshipStates(e *env) []string {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `
		SELECT p.name || ' ' || sn.name || ' ' || r.predicate_key || ' ' || COALESCE(obn.name, v.value_text, '') || ' ' ||
		       r.status || ' ' || r.tier || ' v' || r.version || ' supports ' ||
		       (SELECT count(*) FROM support_links s WHERE s.team_id = r.team_id AND s.relationship_id = r.relationship_id)
		FROM relationships r
		JOIN profiles p ON p.team_id = r.team_id AND p.profile_id = r.owner_profile_id
		JOIN entity_names sn ON sn.team_id = r.team_id AND sn.entity_id = r.subject_entity_id AND sn.name_kind = 'canonical'
		LEFT JOIN entity_names obn ON obn.team_id = r.team_id AND obn.entity_id = r.object_entity_id AND obn.name_kind = 'canonical'
		LEFT JOIN literal_values v ON v.team_id = r.team_id AND v.value_id = r.object_value_id
		WHERE r.team_id = $1`, e.team)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// racedOnKey runs setup on a new env, then A's Remember of mine while who's Remember of theirs runs
// inside A's verifier call, after A's read (its keys' live state included) and before its write;
// locked makes A's client place under its locks only. It returns the env, A's placement and how many
// Remembers fell back to the locks.
func racedOnKey(t *testing.T, setup func(e *env), mine fact, who func(e *env) densemem.Principal, theirs fact,
	locked bool) (e *env, pl *densemem.Placement, fellBack int) {
	t.Helper()
	logs := &lockedBuffer{}
	ran := false
	v := &hookVerifier{hook: func(ctx context.Context) {
		if _, err := e.client.Remember(ctx, who(e), theirs.request("theirs")); err != nil {
			t.Errorf("the concurrent writer: %v", err)
		}
		ran = true
	}}
	v.done.Store(true) // the setup's Remembers run no hook
	e = newEnv(t, func(c *densemem.Config) {
		c.Verifier = v
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	setup(e)
	if locked {
		densemem.PlaceUnderLocksOnly(e.client)
	}
	before := logs.count(fallbackLog)
	v.done.Store(false)
	pl, err := e.client.Remember(e.ctx, e.A, mine.request("mine"))
	if err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the concurrent writer did not run")
	}
	e.checkLedger()
	return e, pl, logs.count(fallbackLog) - before
}

// TestConcurrentWriterFailsRememberKeysFence: a Remember about an existing entity plans from its
// keys' live state read before its transaction and writes behind a fence of each key (decision 153).
// When another writer changes what the plan read between the read and the write — a new statement
// about the same object, a support of the caller's statement, a supersession, a held statement, a
// case — the fence fails, nothing of the optimistic attempt remains, and the Remember is placed
// under the locks, with exactly the placement and the relationships of the same race run with the
// locked path alone.
func TestConcurrentWriterFailsRememberKeysFence(t *testing.T) {
	t.Parallel()
	day := newTestClock().Now().AddDate(0, 0, -30)
	a := func(e *env) densemem.Principal { return e.A }
	b := func(e *env) densemem.Principal { return e.B }
	for _, tc := range []struct {
		name   string
		setup  func(e *env)
		mine   fact
		who    func(e *env) densemem.Principal
		theirs fact
	}{
		{"another owner's statement about the same object",
			func(e *env) {
				e.remember(e.A, worksOnFact("procyon", "atlas"))
				e.remember(e.C, worksOnFact("sirius", "vega")) // vega exists: no name of A's is created
			},
			worksOnFact("procyon", "vega"), b, worksOnFact("procyon", "vega")},
		{"a support of the caller's own statement",
			func(e *env) { e.remember(e.A, worksOnFact("procyon", "atlas")) },
			worksOnFact("procyon", "atlas"), a, worksOnFact("procyon", "atlas")},
		{"a supersession of the version the caller supersedes",
			func(e *env) { e.remember(e.A, deploy("staging", "main").since(day)) },
			deploy("staging", "release").since(day.AddDate(0, 0, 2)), a, deploy("staging", "hotfix").since(day.AddDate(0, 0, 1))},
		{"a held statement on the key",
			func(e *env) { e.remember(e.A, deploy("production", "main")) },
			deploy("production", "release").since(day), a, deploy("production", "hotfix")},
		{"a case opened on the key",
			func(e *env) { e.remember(e.A, deploy("production", "main")) },
			deploy("production", "release"), b, deploy("production", "hotfix")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, raced, fellBack := racedOnKey(t, tc.setup, tc.mine, tc.who, tc.theirs, false)
			if fellBack != 1 {
				t.Errorf("%d Remembers placed under the locks after a failed fence, want 1 (the raced one)", fellBack)
			}
			ref, locked, _ := racedOnKey(t, tc.setup, tc.mine, tc.who, tc.theirs, true)
			if d := diff(shapeOf(locked, nil), shapeOf(raced, nil)); d != "" {
				t.Errorf("placement (-locked path +optimistic then fallback):\n%s", d)
			}
			if d := diff(relationshipStates(ref), relationshipStates(e)); d != "" {
				t.Errorf("relationships (-locked path +optimistic then fallback):\n%s", d)
			}
			if d := countsDiff(ref.counts(), e.counts()); d != "" {
				t.Errorf("rows: locked path against optimistic then fallback: %s", d)
			}
		})
	}
}

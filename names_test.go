package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/identity"
)

// place is a fact about an environment named name (the subject), so name variants can be tried.
func place(name, branch string) fact {
	f := deploy(name, branch)
	f.content = fmt.Sprintf("%s deploys from %s.", name, branch)
	return f
}

// TestEntityNameVariantsResolveToOneEntity: every Unicode variant of a name (NFD, full width,
// zero-width characters, case) resolves to the entity its NFC spelling created, an NFC query recalls
// an entity named in NFD, a name of invisible characters is refused, and a mixed-script look-alike is
// an identity question, not a second entity.
func TestEntityNameVariantsResolveToOneEntity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.remember(e.A, place("café", "main"))
	pl, err := e.client.Remember(e.ctx, e.A, place("café", "main").request(nextKey()))
	if err != nil {
		t.Fatal(err)
	}
	cafe := pl.Entities[0].EntityID
	for _, variant := range []string{"cafe\u0301", "CAFÉ", "ｃａｆé", "ca\u200bfé", "\ufeffCafe\u0301", "caf\u00adé"} {
		pl, err := e.client.Remember(e.ctx, e.B, place(variant, "main").request(nextKey()))
		if err != nil {
			t.Fatalf("%+q: %v", variant, err)
		}
		if got := pl.Entities[0]; got.Decision != identity.DecisionReused || got.EntityID != cafe {
			t.Errorf("%+q resolved %s to %s, want reuse of %s", variant, got.Decision, got.EntityID, cafe)
		}
	}
	if n := e.ledger().Int(`SELECT count(*) FROM entities WHERE entity_kind = 'environment'`); n != 1 {
		t.Errorf("%d environment entities, want 1", n)
	}

	// An NFD name is found by an NFC query.
	nfd := e.remember(e.A, place("Zu\u0308rich", "release"))
	rc, err := e.client.Recall(e.ctx, e.C, densemem.RecallRequest{Query: "Zürich"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Results) == 0 || rc.Results[0].Relationship.RelationshipID != nfd.RelationshipID {
		t.Errorf("NFC query for an NFD name: %+v", rc.Results)
	}

	// Names made only of invisible characters, or with control characters, are refused.
	for _, bad := range []string{"\u200b\u200d", "\u3164", "\ufe0f", "prod\u0007"} {
		req := place("x", "main").request(nextKey())
		req.Proposal.Entities[0].Name = bad
		_, err := e.client.Remember(e.ctx, e.A, req)
		var verr *densemem.ValidationError
		if !errors.As(err, &verr) || !verr.Has("proposal.entities[0].name") {
			t.Errorf("name %+q: %v, want a validation problem at proposal.entities[0].name", bad, err)
		}
		req = place("prod", "main").request(nextKey())
		req.Proposal.Entities[1].Aliases = []string{bad}
		if _, err := e.client.Remember(e.ctx, e.A, req); !errors.As(err, &verr) || !verr.Has("proposal.entities[1].aliases[0]") {
			t.Errorf("alias %+q: %v, want a validation problem at proposal.entities[1].aliases[0]", bad, err)
		}
	}

	// A Cyrillic look-alike of an existing Latin name asks which entity it is.
	prod := e.remember(e.A, place("production", "main"))
	pl, err = e.client.Remember(e.ctx, e.B, place("pr\u043eduction", "main").request(nextKey()))
	if err != nil {
		t.Fatal(err)
	}
	out := pl.RelationshipOutcomes[0]
	if out.Category != densemem.CategoryIdentityReview || out.Review == nil || len(out.Review.EntityCandidates) != 1 ||
		pl.Entities[0].Decision != identity.DecisionAmbiguous {
		t.Fatalf("look-alike: %s %+v, want identity_needs_review with the Latin entity as candidate", out.Category, pl.Entities[0])
	}
	if got, want := out.Review.EntityCandidates[0].Name, "production"; got != want {
		t.Errorf("look-alike candidate %q, want %q", got, want)
	}
	if !strings.Contains(out.Reason, "looks like") {
		t.Errorf("look-alike reason %q does not say it looks like another name", out.Reason)
	}
	_ = first
	_ = prod
}

// TestSameOwnerHoldThroughNameVariant: one profile's "café deploys from main" and "cafe\u0301 deploys
// from develop" are the same subject, so the undated second one is held for review instead of
// becoming a second active current value (before, the NFD spelling was a second entity and both
// were active).
func TestSameOwnerHoldThroughNameVariant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.remember(e.A, place("café", "main"))
	second := e.remember(e.A, place("cafe\u0301", "develop"))
	if first.Category != densemem.CategoryAccepted || second.Category != densemem.CategoryNeedsReview {
		t.Fatalf("outcomes %s, %s; want accepted then needs_review", first.Category, second.Category)
	}
	if len(second.Related) != 1 || second.Related[0] != first.RelationshipID {
		t.Errorf("held against %v, want %s", second.Related, first.RelationshipID)
	}
	if n := e.count("semantic_edges"); n != 1 {
		t.Errorf("%d active edges, want 1", n)
	}
}

// TestAliasAndNameLimits: aliases per entity and names per request are bounded in Config with a
// validation error naming the field, and the database refuses a 257th name of one entity whatever the
// configuration.
func TestAliasAndNameLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	aliases := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("alias-%d", i)
		}
		return out
	}
	req := place("prod", "main").request(nextKey())
	req.Proposal.Entities[0].Aliases = aliases(densemem.DefaultMaxAliasesPerEntity + 1)
	_, err := e.client.Remember(e.ctx, e.A, req)
	var verr *densemem.ValidationError
	if !errors.As(err, &verr) || !verr.Has("proposal.entities[0].aliases") {
		t.Errorf("%d aliases: %v, want a problem at proposal.entities[0].aliases", densemem.DefaultMaxAliasesPerEntity+1, err)
	}
	// Names across entities: 9 entities with 31 aliases and 1 with some more pass the per-entity limit
	// but not the per-request one.
	req = place("prod", "main").request(nextKey())
	for i := range 9 {
		req.Proposal.Entities = append(req.Proposal.Entities, densemem.ProposedEntity{Ref: fmt.Sprint("x", i),
			Name: fmt.Sprint("extra ", i), EntityKind: "environment", Aliases: aliases(densemem.DefaultMaxAliasesPerEntity - 1)})
	}
	if _, err := e.client.Remember(e.ctx, e.A, req); !errors.As(err, &verr) || !verr.Has("proposal.entities") {
		t.Errorf("%d names: %v, want a problem at proposal.entities", 9*densemem.DefaultMaxAliasesPerEntity+2, err)
	}
	// At the limit it is accepted.
	req = place("prod", "main").request(nextKey())
	req.Proposal.Entities[0].Aliases = aliases(densemem.DefaultMaxAliasesPerEntity)
	pl, err := e.client.Remember(e.ctx, e.A, req)
	if err != nil {
		t.Fatalf("%d aliases: %v", densemem.DefaultMaxAliasesPerEntity, err)
	}
	// The database bound: 256 names per entity.
	entity := entityID(t, pl, "s")
	_, err = e.pool.Exec(e.ctx, `INSERT INTO entity_names (team_id, entity_id, name, normalized_name, skeleton, name_kind, created_at)
		SELECT $1, $2, 'x' || i, 'x' || i, 'x' || i, 'alias', now() FROM generate_series(1, 256) i`, e.team, entity)
	if err == nil || !strings.Contains(err.Error(), "DM001") {
		t.Errorf("257th name of one entity: %v, want DM001", err)
	}
}

// TestAdvisoryLocksBounded: a transaction takes at most MaxAdvisoryLocks advisory locks per class
// (plus the idempotency lock and the class's team lock); a request with more names takes the team's
// name lock exclusively instead and still succeeds. The locks are counted on the writer's backend
// while it waits on a profile row the test holds.
func TestAdvisoryLocksBounded(t *testing.T) {
	t.Parallel()
	const max = 8
	e := newEnv(t, func(c *densemem.Config) { c.Limits.MaxAdvisoryLocks = max })
	for _, n := range []int{3, max, max + 1, 40} {
		req := place("prod", "main").request(nextKey())
		for i := range n - 2 {
			req.Proposal.Entities = append(req.Proposal.Entities, densemem.ProposedEntity{Ref: fmt.Sprint("x", i),
				Name: fmt.Sprintf("extra-%d-%d", n, i), EntityKind: "environment"})
		}
		// Two names already: the subject and the branch; n names in all, none known yet.
		req.Proposal.Entities[0].Name = fmt.Sprintf("prod-%d", n)
		req.Evidence[0].Content = fmt.Sprintf("prod-%d deploys from main.", n)
		req.Proposal.Relationships[0].Evidence[0].End = len(req.Evidence[0].Content)
		held := countLocksWhileBlocked(t, e, func(ctx context.Context) error {
			_, err := e.client.Remember(ctx, e.A, req)
			return err
		})
		want := 1 + 1 + n // idempotency, the team's name lock (shared), one per name
		if n > max {
			want = 1 + 1 // idempotency, the team's name lock (exclusive)
		}
		if held != want {
			t.Errorf("%d names: %d advisory locks held, want %d", n, held, want)
		}
	}
}

// countLocksWhileBlocked runs call while the test holds A's profile row, so the call's intake blocks
// after its advisory locks; it returns how many advisory locks the call's backend held then.
func countLocksWhileBlocked(t *testing.T, e *env, call func(context.Context) error) int {
	t.Helper()
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	var holder int
	if err := tx.QueryRow(e.ctx, `SELECT pg_backend_pid() FROM profiles WHERE profile_id = $1 FOR UPDATE`, e.A.ProfileID).
		Scan(&holder); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- call(e.ctx) }()
	held := -1
	deadline := time.Now().Add(30 * time.Second)
	for held < 0 && time.Now().Before(deadline) {
		// The writer is blocked once its backend waits for the test's transaction (the profile row).
		// pg_locks is one snapshot, read apart from pg_blocking_pids: the waiting lock must be in it
		// too, or the snapshot may predate the writer's advisory locks.
		err := e.pool.QueryRow(e.ctx, `SELECT count(*) FILTER (WHERE l.locktype = 'advisory' AND l.granted)
			FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
			WHERE $1 = ANY(pg_blocking_pids(a.pid))
			GROUP BY a.pid HAVING bool_or(NOT l.granted)`, holder).Scan(&held)
		if err != nil {
			held = -1
			time.Sleep(5 * time.Millisecond) // polling for the writer to reach the wait, not a timing assumption
		}
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("blocked call: %v", err)
	}
	return held
}

// TestConcurrentNameLocksAcrossTheBound: writers that lock one name one by one and a writer with more
// names than MaxAdvisoryLocks (which takes the team's name lock exclusively instead) still exclude
// each other, so the name gets one entity; and writers of two look-alike spellings (Latin and
// Cyrillic) serialise on the shared skeleton, so one creates and the other is asked which entity it
// means.
func TestConcurrentNameLocksAcrossTheBound(t *testing.T) {
	t.Parallel()
	const n, max = 12, 4
	e := newEnv(t, func(c *densemem.Config) { c.Limits.MaxAdvisoryLocks = max })
	results := rememberConcurrently(t, e, e.A, n, func(i int) densemem.RememberRequest {
		req := place("shared", fmt.Sprintf("branch-%d", i)).request(fmt.Sprintf("shared-%d", i))
		if i%2 == 0 {
			for j := range max + 2 { // past the bound: the team's name lock, exclusive
				req.Proposal.Entities = append(req.Proposal.Entities, densemem.ProposedEntity{Ref: fmt.Sprint("x", j),
					Name: fmt.Sprintf("extra-%d-%d", i, j), EntityKind: "environment"})
			}
		}
		return req
	})
	for i, r := range results {
		onlyOutcome(t, fmt.Sprintf("call %d", i), r)
	}
	if ids := e.ledger().Entities(e.team, "environment", "shared"); len(ids) != 1 {
		t.Errorf("environment shared: entities %v, want exactly one", ids)
	}

	results = rememberConcurrently(t, e, e.B, 2, func(i int) densemem.RememberRequest {
		return place([]string{"production", "pr\u043eduction"}[i], "main").request(fmt.Sprintf("look-alike-%d", i))
	})
	created, asked := 0, 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("look-alike call %d: %v", i, r.err)
		}
		switch r.pl.Entities[0].Decision {
		case identity.DecisionCreated:
			created++
		case identity.DecisionAmbiguous:
			asked++
		}
	}
	if created != 1 || asked != 1 {
		t.Errorf("look-alikes written at once: %d created and %d asked, want 1 and 1", created, asked)
	}
}

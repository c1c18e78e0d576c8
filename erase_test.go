package densemem_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/evidence"
)

// erasedWord is the word only erased content holds: a test searches every response, and every row of
// the database, for it (lower case: the full-text index holds it folded).
const erasedWord = "zorblaxquintavern"

// secretContent is evidence for "production deploys_from main" that also names the erased word.
const secretContent = "The production environment deploys from the main branch, as Zorblaxquintavern said."

// mustErase erases fragments as p and fails the test on error.
func (e *env) mustErase(p densemem.Principal, ids ...densemem.FragmentID) *densemem.EraseResult {
	e.t.Helper()
	res, err := e.client.Erase(e.ctx, p, densemem.EraseRequest{FragmentIDs: ids, Reason: "data subject request",
		IdempotencyKey: nextKey()})
	if err != nil {
		e.t.Fatalf("erase %v: %v", ids, err)
	}
	return res
}

// showsErased reports whether v, as JSON, holds the erased word in any case.
func showsErased(t *testing.T, v any) bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(strings.ToLower(string(b)), erasedWord)
}

// fragmentOf reads the fragment an ingest stored as evidence[0] (as the superuser).
func (e *env) fragmentOf(ingest string) densemem.FragmentID {
	e.t.Helper()
	return densemem.FragmentID(e.ledger().Strings(`SELECT fragment_id FROM evidence_fragments WHERE ingest_id = $1
		ORDER BY evidence_index LIMIT 1`, ingest)[0])
}

// TestEraseLeavesNoReadPathWithTheContent: after a profile with the erasure scope erases two
// fragments (one supporting an active relationship in a team case, one behind an open predicate
// review item), no response holds their bytes — Trace with content, Recall (current, known_at
// before the erasure, valid_at, and a search for the erased word), ListConflicts, ListReviewItems,
// the replay of the original Remember and of the erasure — Resolve refuses to cite the erased
// fragment again, and no row of any table of the database holds them. Every reference stays.
func TestEraseLeavesNoReadPathWithTheContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	eraser := e.mustProfile("privacy officer", "erasure")
	req := withContent(deploy("production", "main"), secretContent).request(nextKey())
	pl := e.rememberReq(e.A, req)
	rel := only(t, pl).RelationshipID
	if b := e.remember(e.B, deploy("production", "release")); b.Conflict == nil {
		t.Fatalf("no case opened: %+v", b)
	}
	held := deploy("production", "main")
	held.predicate, held.content = "builds from", "The production environment builds from main, says Zorblaxquintavern."
	hpl := e.rememberReq(e.A, held.request(nextKey()))
	item := only(t, hpl)
	if item.Category != densemem.CategoryPredicateReview {
		t.Fatalf("builds from: %s, want a predicate review item", item.Category)
	}
	before := e.step()
	if !showsErased(t, e.trace(e.A, rel)) || !showsErased(t, e.recall(e.A, "production", nil, nil)) {
		t.Fatal("Trace and Recall do not show the content before the erasure: the checks below would prove nothing")
	}
	e.step()

	frags := []densemem.FragmentID{pl.Fragments[0].FragmentID, e.fragmentOf(hpl.IngestID)}
	res := e.mustErase(eraser, frags...)
	if len(res.Tombstones) != 2 || res.Replayed {
		t.Fatalf("erasure %+v, want two tombstones", res)
	}
	for _, ts := range res.Tombstones {
		if ts.FragmentID == frags[0] && (ts.ContentSHA256 != evidence.ContentHash(secretContent) || ts.ContentLength != len(secretContent)) {
			t.Errorf("tombstone %+v, want the content's SHA-256 and length %d", ts, len(secretContent))
		}
		if ts.ErasureID != res.ErasureID || ts.AlreadyErased || !ts.ErasedAt.Equal(e.clock.Now()) {
			t.Errorf("tombstone %+v of erasure %s at %s", ts, res.ErasureID, e.clock.Now())
		}
	}

	tr := e.trace(e.A, rel)
	if len(tr.Evidence) != 1 || !tr.Evidence[0].Erased || tr.Evidence[0].FragmentID != frags[0] || tr.Evidence[0].ContentOmitted {
		t.Errorf("trace evidence %+v, want the erased fragment still referenced, marked erased", tr.Evidence)
	}
	replay, err := e.client.Remember(e.ctx, e.A, req)
	if err != nil || !replay.Replayed {
		t.Fatalf("replay of the original Remember: %+v, %v", replay, err)
	}
	again, err := e.client.Erase(e.ctx, eraser, densemem.EraseRequest{FragmentIDs: frags, Reason: "data subject request",
		IdempotencyKey: "unused"})
	if err != nil || again.Tombstones[0].ErasureID != res.ErasureID || !again.Tombstones[0].AlreadyErased {
		t.Fatalf("erasing again: %+v, %v; want the first erasure's tombstones", again, err)
	}
	// Its only support erased, the relationship left current state (pending_evidence), and the case
	// it was in lost its disagreement.
	current := e.recall(e.A, "production", nil, nil)
	if r := resultFor(current, rel); r != nil {
		t.Errorf("recall still returns %s, whose only support was erased: %+v", rel, r)
	}
	if tr.Relationship.Status != "pending_evidence" || tr.Evidence[0].Retired == nil || tr.Evidence[0].Retired.Cause != "erasure" {
		t.Errorf("after the erasure %s is %s, evidence %+v; want pending_evidence, its support retired by erasure",
			rel, tr.Relationship.Status, tr.Evidence[0])
	}
	conflicts, err := e.client.ListConflicts(e.ctx, e.admin, densemem.ListConflictsRequest{
		Status: []string{"open", "overdue", "resolved", "dismissed"}})
	if err != nil || len(conflicts.Conflicts) != 1 || conflicts.Conflicts[0].Status != "dismissed" {
		t.Fatalf("conflicts %+v, %v; want the case dismissed", conflicts, err)
	}
	items, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{Status: densemem.ReviewItemStatusOpen})
	if err != nil {
		t.Fatal(err)
	}
	validAt := date("2026-06-01")
	for name, v := range map[string]any{
		"trace":                 tr,
		"recall":                current,
		"recall known_at":       e.recall(e.A, "production", nil, &before),
		"recall valid_at":       e.recall(e.A, "production main", &validAt, nil),
		"recall the word":       e.recall(e.A, erasedWord, nil, nil),
		"list conflicts":        conflicts,
		"list review items":     items,
		"remember replay":       replay,
		"erasure":               res,
		"erasure of the erased": again,
	} {
		if showsErased(t, v) {
			t.Errorf("%s shows erased content: %+v", name, v)
		}
	}
	if r := e.recall(e.A, erasedWord, nil, nil); len(r.Results) != 0 {
		t.Errorf("a search for the erased word found %+v", r.Results)
	}

	n := e.counts()
	rr := densemem.ResolveRequest{IngestID: hpl.IngestID, PlacementItemID: item.PlacementItemID,
		Action: densemem.ActionSelectPredicate, Decision: &densemem.ResolveDecision{PredicateKey: "deploys_from"},
		IdempotencyKey: nextKey()}
	if _, err := e.client.Resolve(e.ctx, e.A, rr); !errors.Is(err, densemem.ErrErased) {
		t.Errorf("select_predicate on an item whose evidence was erased: %v, want ErrErased", err)
	}
	if d := diff(n, e.counts()); d != "" {
		t.Errorf("a refused Resolve wrote rows:\n%s", d)
	}

	for table, rows := range e.snapshotAll() {
		for _, row := range rows {
			if strings.Contains(strings.ToLower(row), erasedWord) {
				t.Errorf("table %s still holds the erased content: %s", table, row)
			}
		}
	}
	if got := e.ledger().Int(`SELECT count(*) FROM support_links WHERE fragment_id = ANY($1)`, frags); got != 1 {
		t.Errorf("%d support links name the erased fragments, want the 1 there was", got)
	}
}

// TestEraseValidationAndAuthorisation: a request with bad fields is one *ValidationError naming
// them; a profile without the erasure scope, or disabled, is ErrForbidden; a fragment the team does
// not hold is ErrNotFound and erases none of the others; the host may erase. Nothing is written on
// any error.
func TestEraseValidationAndAuthorisation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	eraser := e.mustProfile("privacy officer", "erasure")
	pl := e.rememberReq(e.A, withContent(deploy("production", "main"), secretContent).request(nextKey()))
	frag := pl.Fragments[0].FragmentID
	other := e.newTeamFragment()
	n := e.countsOf(e.ledger().Tables())

	many := make([]densemem.FragmentID, densemem.MaxEraseFragments+1)
	for i := range many {
		many[i] = densemem.FragmentID("frg_" + strings.Repeat("x", i+1))
	}
	for _, tc := range []struct {
		name  string
		req   densemem.EraseRequest
		paths []string
	}{
		{"empty", densemem.EraseRequest{}, []string{"fragment_ids", "reason", "idempotency_key"}},
		{"repeated and empty IDs", densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{frag, "", frag}, Reason: "r",
			IdempotencyKey: "k"}, []string{"fragment_ids[1]", "fragment_ids[2]"}},
		{"too many", densemem.EraseRequest{FragmentIDs: many, Reason: "r", IdempotencyKey: "k"}, []string{"fragment_ids"}},
		{"bad text", densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{frag}, Reason: "a\x00b", IdempotencyKey: "\xff"},
			[]string{"reason", "idempotency_key"}},
	} {
		_, err := e.client.Erase(e.ctx, eraser, tc.req)
		for _, p := range tc.paths {
			if !isFieldProblem(err, p) {
				t.Errorf("%s: %v, want a problem at %s", tc.name, err, p)
			}
		}
	}
	ok := densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{frag}, Reason: "request", IdempotencyKey: nextKey()}
	if _, err := e.client.Erase(e.ctx, e.A, ok); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("a writer without the erasure scope: %v, want ErrForbidden", err)
	}
	for _, ids := range [][]densemem.FragmentID{{frag, "frg_missing"}, {other, frag}} {
		req := ok
		req.FragmentIDs = ids
		if _, err := e.client.Erase(e.ctx, eraser, req); !errors.Is(err, densemem.ErrNotFound) {
			t.Errorf("erase %v: %v, want ErrNotFound", ids, err)
		}
	}
	disabled := e.mustProfile("former officer", "erasure")
	if err := e.client.DisableProfile(e.ctx, e.team, disabled.ProfileID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Erase(e.ctx, disabled, ok); !errors.Is(err, densemem.ErrForbidden) {
		t.Errorf("a disabled profile: %v, want ErrForbidden", err)
	}
	delete(n, "profiles")
	after := e.countsOf(e.ledger().Tables())
	delete(after, "profiles")
	if d := diff(n, after); d != "" {
		t.Errorf("refused erasures wrote rows:\n%s", d)
	}
	if tr := e.trace(e.A, only(t, pl).RelationshipID); tr.Evidence[0].Content != secretContent {
		t.Errorf("content after refused erasures: %q", tr.Evidence[0].Content)
	}

	res, err := e.client.Erase(e.ctx, densemem.HostPrincipal(e.team), ok)
	if err != nil || len(res.Tombstones) != 1 {
		t.Fatalf("host erasure: %+v, %v", res, err)
	}
	row := e.ledger().Strings(`SELECT concat_ws('|', actor_kind, actor_profile_id, reason) FROM privacy_erasures`)
	if d := diff([]string{"host|request"}, row); d != "" {
		t.Errorf("erasure ledger (-want +got):\n%s", d)
	}
}

// newTeamFragment stores a fragment in a team of its own and returns its ID.
func (e *env) newTeamFragment() densemem.FragmentID {
	e.t.Helper()
	team := e.mustTeam("elsewhere")
	p := e.profileIn(team, "writer", "read", "write")
	e.registerVocabulary(densemem.HostPrincipal(team))
	pl := e.rememberReq(p, deploy("staging", "main").request(nextKey()))
	return pl.Fragments[0].FragmentID
}

// TestEraseReplaysAndSerialises: a retry with the same key and request replays the first result,
// another request under it is ErrIdempotencyConflict, and keys are the actor's own. Concurrent
// erasures of one fragment under different keys erase it exactly once (the others report the
// tombstone); concurrent calls under one key record one erasure and all return it.
func TestEraseReplaysAndSerialises(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	eraser := e.mustProfile("privacy officer", "erasure")
	frag := func() densemem.FragmentID {
		return e.rememberReq(e.A, deploy("production", "main").request(nextKey())).Fragments[0].FragmentID
	}
	req := densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{frag()}, Reason: "request", IdempotencyKey: nextKey()}
	first, err := e.client.Erase(e.ctx, eraser, req)
	if err != nil {
		t.Fatal(err)
	}
	e.step()
	replay, err := e.client.Erase(e.ctx, eraser, req)
	if err != nil || !replay.Replayed {
		t.Fatalf("replay: %+v, %v", replay, err)
	}
	replay.Replayed = false
	if d := diff(first, replay); d != "" {
		t.Errorf("replay differs (-first +replay):\n%s", d)
	}
	other := req
	other.Reason = "another"
	if _, err := e.client.Erase(e.ctx, eraser, other); !errors.Is(err, densemem.ErrIdempotencyConflict) {
		t.Errorf("another request under the key: %v, want ErrIdempotencyConflict", err)
	}
	host, err := e.client.Erase(e.ctx, densemem.HostPrincipal(e.team), req)
	if err != nil || host.Replayed || host.ErasureID == first.ErasureID || !host.Tombstones[0].AlreadyErased ||
		host.Tombstones[0].ErasureID != first.ErasureID {
		t.Errorf("the host under the profile's key: %+v, %v; want its own erasure reporting the first", host, err)
	}

	const n = 6
	f := frag()
	results := make([]*densemem.EraseResult, n)
	errs := make([]error, n)
	runTogether(n, func(i int) {
		results[i], errs[i] = e.client.Erase(e.ctx, eraser, densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{f},
			Reason: "request", IdempotencyKey: nextKey()})
	})
	erased := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("concurrent erasure %d: %v", i, errs[i])
		}
		if !r.Tombstones[0].AlreadyErased {
			erased++
		}
	}
	if erased != 1 {
		t.Errorf("%d concurrent erasures erased the fragment, want exactly 1", erased)
	}

	same := densemem.EraseRequest{FragmentIDs: []densemem.FragmentID{frag()}, Reason: "request", IdempotencyKey: nextKey()}
	runTogether(n, func(i int) { results[i], errs[i] = e.client.Erase(e.ctx, eraser, same) })
	for i := range results {
		if errs[i] != nil || results[i].ErasureID != results[0].ErasureID {
			t.Errorf("concurrent call %d under one key: %+v, %v", i, results[i], errs[i])
		}
	}
	if got := e.ledger().Int(`SELECT count(*) FROM privacy_erasures WHERE idempotency_key = $1`, same.IdempotencyKey); got != 1 {
		t.Errorf("%d erasures recorded under one key, want 1", got)
	}
}

// inTx runs stmt in a transaction of team on pool, first as role when it is not empty (SET LOCAL
// ROLE), committing when it succeeds, and returns the error's SQLSTATE ("" for none).
func inTx(ctx context.Context, pool *pgxpool.Pool, key []byte, team densemem.TeamID, role, stmt string, args ...any) (string, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, teamSQL, bindArgs(tx, key, team)...); err != nil {
		return "", err
	}
	if role != "" {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
			return "", err
		}
	}
	_, err = tx.Exec(ctx, stmt, args...)
	if err == nil {
		err = tx.Commit(ctx)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, err
	}
	return "", err
}

// TestEraseIsTheOnlyPathThatChangesContent: the runtime role cannot update content, write the
// erasure ledger, or call the erasure function for another team or as a profile without the
// erasure scope; the reviewer cannot call it at all; and the owner and the superuser, though they may
// write every table, cannot rewrite, delete or redact content outside an erasure recorded in the
// same transaction, forge a tombstone, restore erased content, or change the erasure ledger.
// Nothing a refused statement tried remains.
func TestEraseIsTheOnlyPathThatChangesContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	eraser := e.mustProfile("privacy officer", "erasure")
	kept := e.rememberReq(e.A, deploy("production", "main").request(nextKey())).Fragments[0].FragmentID
	gone := e.rememberReq(e.A, deploy("staging", "main").request(nextKey())).Fragments[0].FragmentID
	e.mustErase(eraser, gone)
	before := e.snapshotAll()

	erase := func(team, actorKind, profile string) string {
		return "SELECT * FROM densemem_erase('" + team + "', 'ers_forged', '" + actorKind + "', " + profile +
			", 'r', 'k-forged', 'h', ARRAY['" + string(kept) + "'], now())"
	}
	forgeHeader := "INSERT INTO privacy_erasures VALUES ('" + string(e.team) + "', 'ers_x', 'host', NULL, 'r', 'k-x', 'h', now())"
	forgeTomb := func(hash string) string {
		return forgeHeader + "; INSERT INTO fragment_erasures SELECT team_id, fragment_id, 'ers_x', " + hash +
			", content_length, '1', now() FROM evidence_fragments WHERE fragment_id = '" + string(kept) + "'"
	}
	type attempt struct {
		name, stmt string
		codes      []string
	}
	runtime := []attempt{
		{"update content", "UPDATE fragment_contents SET content = ''", []string{"42501"}},
		{"delete content", "DELETE FROM fragment_contents", []string{"42501"}},
		{"write a tombstone", "INSERT INTO fragment_erasures SELECT * FROM fragment_erasures", []string{"42501"}},
		{"write an erasure", "INSERT INTO privacy_erasures SELECT * FROM privacy_erasures", []string{"42501"}},
		{"delete a tombstone", "DELETE FROM fragment_erasures", []string{"42501"}},
		{"erase in another team", erase("tm_other", "host", "NULL"), []string{"42501"}},
		{"erase as a profile without the scope", erase(string(e.team), "profile", "'"+string(e.A.ProfileID)+"'"),
			[]string{"DME03"}},
	}
	for _, a := range runtime {
		if code, err := inTx(e.ctx, e.runtime, e.bindingKey, e.team, "", a.stmt); !contains(a.codes, code) {
			t.Errorf("runtime: %s: %v (SQLSTATE %q), want %v", a.name, err, code, a.codes)
		}
	}
	if code, err := inTx(e.ctx, e.reviewer, e.bindingKey, e.team, "", erase(string(e.team), "host", "NULL")); code != "42501" {
		t.Errorf("reviewer: erase: %v (SQLSTATE %q), want 42501", err, code)
	}
	owner := []attempt{
		{"rewrite content", "UPDATE fragment_contents SET content = 'rewritten' WHERE fragment_id = '" + string(kept) + "'", []string{"DM001"}},
		{"redact without a tombstone", "UPDATE fragment_contents SET content = '' WHERE fragment_id = '" + string(kept) + "'", []string{"DM001"}},
		{"restore erased content", "UPDATE fragment_contents SET content = 'back' WHERE fragment_id = '" + string(gone) + "'", []string{"DM001"}},
		{"delete content", "DELETE FROM fragment_contents", []string{"DM001"}},
		{"truncate content", "TRUNCATE fragment_contents CASCADE", []string{"DM001"}},
		{"forge a tombstone", forgeTomb("'forged'"), []string{"DM001"}},
		{"change a tombstone", "UPDATE fragment_erasures SET content_length = content_length", []string{"DM001"}},
		{"delete a tombstone", "DELETE FROM fragment_erasures", []string{"DM001"}},
		{"change an erasure", "UPDATE privacy_erasures SET reason = 'other'", []string{"DM001"}},
		{"delete an erasure", "DELETE FROM privacy_erasures", []string{"DM001"}},
		{"erase without the team", "SELECT set_config('densemem.team', '', true); " + erase(string(e.team), "host", "NULL"), []string{"42501"}},
	}
	for _, role := range []string{"densemem_owner", ""} {
		for _, a := range owner {
			if code, err := inTx(e.ctx, e.pool, e.bindingKey, e.team, role, a.stmt); !contains(a.codes, code) {
				t.Errorf("%s: %s: %v (SQLSTATE %q), want %v", roleName(role), a.name, err, code, a.codes)
			}
		}
	}
	if d := diff(before, e.snapshotAll()); d != "" {
		t.Errorf("a refused statement changed rows (-before +after):\n%s", d)
	}
	// A tombstone recorded in an earlier transaction does not open a later redaction.
	if code, err := inTx(e.ctx, e.pool, e.bindingKey, e.team, "densemem_owner", forgeTomb("content_sha256")); code != "" {
		t.Fatalf("owner records a true tombstone: %v (SQLSTATE %q)", err, code)
	}
	stmt := "UPDATE fragment_contents SET content = '' WHERE fragment_id = '" + string(kept) + "'"
	if code, err := inTx(e.ctx, e.pool, e.bindingKey, e.team, "densemem_owner", stmt); code != "DM001" {
		t.Errorf("owner redacts in a later transaction: %v (SQLSTATE %q), want DM001", err, code)
	}
}

func contains(codes []string, code string) bool {
	for _, c := range codes {
		if c == code {
			return true
		}
	}
	return false
}

func roleName(role string) string {
	if role == "" {
		return "superuser"
	}
	return role
}

// TestErasureDropsSupportToPendingEvidence: a relationship whose only support was erased drops to
// pending_evidence by a system transition in the erasure's transaction; one with another source
// keeps its status, its tier recomputed; Trace shows the retirement, cause erasure.
func TestErasureDropsSupportToPendingEvidence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	eraser := e.mustProfile("privacy officer", "erasure")
	pl := e.rememberReq(e.A, deploy("production", "main").request(nextKey()))
	rel := only(t, pl).RelationshipID
	two := e.rememberReq(e.A, deploy("staging", "main").request(nextKey()))
	f := deploy("staging", "main")
	f.content, f.sourceGroup = "Staging deploys from main, says the runbook.", "runbook"
	e.rememberReq(e.A, f.request(nextKey()))
	e.mustErase(eraser, pl.Fragments[0].FragmentID, two.Fragments[0].FragmentID)
	if st, tier, _, _ := e.relationshipState(rel); st != "pending_evidence" || tier != "candidate" {
		t.Errorf("relationship whose only support was erased: %s %s, want pending_evidence candidate", st, tier)
	}
	if st, _, _, _ := e.relationshipState(only(t, two).RelationshipID); st != "active" {
		t.Errorf("relationship with another support: %s, want active", st)
	}
}

// TestErasureIsBounded: an erasure whose fragments support more relationships than
// Limits.MaxRevisionRelationships is refused at fragment_ids and writes nothing; within the bound
// it erases.
func TestErasureIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *densemem.Config) { c.Limits.MaxRevisionRelationships = 1 })
	eraser := e.mustProfile("privacy officer", "erasure")
	one := e.rememberReq(e.A, deploy("production", "main").request(nextKey()))
	two := e.rememberReq(e.A, deploy("staging", "main").request(nextKey()))
	before := e.allCounts()
	_, err := e.client.Erase(e.ctx, eraser, densemem.EraseRequest{Reason: "data subject request", IdempotencyKey: nextKey(),
		FragmentIDs: []densemem.FragmentID{one.Fragments[0].FragmentID, two.Fragments[0].FragmentID}})
	if !isFieldProblem(err, "fragment_ids") {
		t.Fatalf("erasing fragments supporting two relationships past a bound of one: %v, want a validation error", err)
	}
	for table, n := range countDelta(before, e.allCounts()) {
		if n != 0 {
			t.Errorf("%s grew by %d after a refused erasure", table, n)
		}
	}
	e.mustErase(eraser, one.Fragments[0].FragmentID)
}

package densemem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/store/failpoint"
)

// The acceptance invariants of the specification ("Conflicts And Corrections") and of DESIGN §16, one
// test each. Every test owns an isolated database (newEnv) and asserts what could actually go wrong.

// ---- Invariant 1 ----

func TestInvariant1_ConflictPreservesOldAndNewEvidence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Contents with non-ASCII text, inner double spaces and a trailing newline: "byte for byte" must
	// survive trimming, normalisation and encoding.
	contents := []string{
		"The production environment deploys from the main branch.  Confirmed by Zoë — ✓\n",
		"Ops chat: the production environment deploys from the release branch now (née “rc”).\t\n",
		"Since 2026-05-01 the production environment deploys from the release branch.  Ticket #42 ✔\n",
	}
	priorReq := withContent(deploy("production", "main"), contents[0]).request(nextKey())
	prior := e.rememberReq(e.A, priorReq)
	e.step()
	heldReq := withContent(deploy("production", "release"), contents[1]).request(nextKey())
	held := e.rememberReq(e.A, heldReq)
	e.step()
	dated := deploy("production", "release").since(date("2026-05-01"))
	datedReq := withContent(dated, contents[2]).request(nextKey())
	next := e.rememberReq(e.A, datedReq)

	outcomes := []densemem.RelationshipOutcome{only(t, prior), only(t, held), only(t, next)}
	if c := outcomes[0].Category; c != densemem.CategoryAccepted {
		t.Fatalf("prior: category %s, want accepted", c)
	}
	if c := outcomes[1].Category; c != densemem.CategoryNeedsReview {
		t.Fatalf("undated conflicting: category %s, want needs_review", c)
	}
	if c := outcomes[2].Category; c != densemem.CategorySupersededPrior {
		t.Fatalf("dated conflicting: category %s, want superseded_prior", c)
	}
	if st, _, _, _ := e.relationshipState(outcomes[0].RelationshipID); st != "superseded" {
		t.Fatalf("prior status %s, want superseded", st)
	}

	for i, pl := range []*densemem.Placement{prior, held, next} {
		if len(pl.Fragments) != 1 {
			t.Fatalf("placement %d: %d fragments", i, len(pl.Fragments))
		}
		fid := pl.Fragments[0].FragmentID
		var stored []string
		var length int
		e.snapshot(func(l ledgerView) {
			stored = l.Strings(`SELECT content FROM fragment_contents WHERE fragment_id = $1`, fid)
			length = l.Int(`SELECT content_length FROM evidence_fragments WHERE fragment_id = $1`, fid)
		})
		if len(stored) != 1 || stored[0] != contents[i] || length != len(contents[i]) {
			t.Errorf("fragment %d stored %q (%d bytes), want %q (%d bytes)", i, stored, length, contents[i], len(contents[i]))
		}

		// Trace of each relationship, whatever its status, returns its own evidence verbatim.
		tr := e.trace(e.A, outcomes[i].RelationshipID)
		found := false
		for _, ev := range tr.Evidence {
			if ev.FragmentID != fid {
				continue
			}
			found = true
			if ev.Content != contents[i] {
				t.Errorf("trace %d content %q, want %q", i, ev.Content, contents[i])
			}
			if want := contents[i][ev.Start:ev.End]; ev.Excerpt != want || ev.Start != 0 || ev.End != len(contents[i]) {
				t.Errorf("trace %d excerpt [%d,%d) %q, want the whole cited span %q", i, ev.Start, ev.End, ev.Excerpt, want)
			}
		}
		if !found {
			t.Errorf("trace of %s (%s) does not list fragment %s: %+v", outcomes[i].RelationshipID, tr.Relationship.Status, fid, tr.Evidence)
		}
		if len(tr.Observations) == 0 || len(tr.Verifications) == 0 {
			t.Errorf("trace %d lost its observation or verification: %d observations, %d verifications",
				i, len(tr.Observations), len(tr.Verifications))
		}
	}
	if n := e.count("evidence_fragments"); n != 3 {
		t.Errorf("evidence_fragments = %d, want 3", n)
	}
}

// ---- Invariant 2 ----

func TestInvariant2_UnresolvedIdentityOrPredicateCreatesNoActiveEdge(t *testing.T) {
	t.Parallel()

	t.Run("unknown predicate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		f := fact{subject: "production", subjectKind: "environment", predicate: "is hosted on", object: "eu-west",
			objectKind: "region", content: "The production environment is hosted on eu-west."}
		pl := e.rememberReq(e.A, f.request(nextKey()))
		out := only(t, pl)
		if out.Category != densemem.CategoryPredicateReview {
			t.Fatalf("category %s, want predicate_needs_review: %+v", out.Category, out)
		}
		if out.RelationshipID != "" || out.Status != "" {
			t.Errorf("outcome names relationship %q status %q; want none", out.RelationshipID, out.Status)
		}
		if out.Review == nil || out.Review.Kind != "predicate" {
			t.Fatalf("review = %+v, want a predicate review", out.Review)
		}
		var keys []string
		for _, o := range out.Review.PredicateOptions {
			keys = append(keys, o.Key)
		}
		slices.Sort(keys)
		if d := diff([]string{"deployed", "deploys_from", "owner_email", "works_on"}, keys); d != "" {
			t.Errorf("predicate options (-want +got):\n%s", d)
		}
		// The observation is not a relationship's, so no trace shows it: "phrase|key|version".
		obs := e.ledger().Strings(`SELECT concat_ws('|', predicate_phrase, COALESCE(predicate_key, '<null>'),
			COALESCE(predicate_version::text, '<null>')) FROM observations WHERE observation_id = $1`, out.ObservationID)
		if d := diff([]string{"is hosted on|<null>|<null>"}, obs); d != "" {
			t.Errorf("observation phrase|key|version (-want +got); want the phrase kept and a NULL predicate:\n%s", d)
		}
		for table, want := range map[string]int{"relationships": 0, "semantic_edges": 0, "support_links": 0,
			"verification_events": 0, "relationship_transitions": 0, "observations": 1, "review_items": 1} {
			if got := e.count(table); got != want {
				t.Errorf("%s = %d, want %d", table, got, want)
			}
		}
	})

	t.Run("predicate that does not accept the subject kind", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		f := fact{subject: "Mark", subjectKind: "person", predicate: "deploys from", object: "main", objectKind: "git_branch",
			content: "Mark deploys from the main branch."}
		out := e.remember(e.A, f)
		if out.Category != densemem.CategoryPredicateReview || out.RelationshipID != "" {
			t.Fatalf("outcome %+v, want predicate_needs_review without a relationship", out)
		}
		for table, want := range map[string]int{"relationships": 0, "semantic_edges": 0, "support_links": 0,
			"relationship_transitions": 0, "observations": 1} {
			if got := e.count(table); got != want {
				t.Errorf("%s = %d, want %d", table, got, want)
			}
		}
	})

	t.Run("ambiguous identity", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		withCtx := func(f fact, repo string) densemem.RememberRequest {
			req := f.request(nextKey())
			if repo != "" {
				req.Proposal.Entities[1].IdentityContext = map[string]string{"repository": repo}
			}
			return req
		}
		a := e.rememberReq(e.A, withCtx(deploy("production", "main"), "a"))
		b := e.rememberReq(e.A, withCtx(deploy("staging", "main"), "b"))
		mainA, mainB := entityID(t, a, "o"), entityID(t, b, "o")
		if mainA == mainB {
			t.Fatalf("contradicting identity contexts resolved to one entity %s", mainA)
		}
		before := e.counts()
		edgesBefore := e.count("semantic_edges")

		pl := e.rememberReq(e.A, withCtx(deploy("production", "main"), ""))
		out := only(t, pl)
		if out.Category != densemem.CategoryIdentityReview {
			t.Fatalf("category %s, want identity_needs_review: %+v", out.Category, out)
		}
		if out.RelationshipID != "" {
			t.Errorf("identity review names relationship %s", out.RelationshipID)
		}
		want := []densemem.EntityID{mainA, mainB}
		slices.Sort(want)
		if out.Review == nil {
			t.Fatal("no review prompt")
		}
		var got []densemem.EntityID
		for _, c := range out.Review.EntityCandidates {
			got = append(got, c.EntityID)
			if c.Name != "main" || c.EntityKind != "git_branch" {
				t.Errorf("candidate %+v: want name main, kind git_branch", c)
			}
		}
		slices.Sort(got)
		if d := diff(want, got); d != "" {
			t.Errorf("review candidates (-want +got):\n%s", d)
		}
		var ent *densemem.EntityOutcome
		for i := range pl.Entities {
			if pl.Entities[i].Ref == "o" {
				ent = &pl.Entities[i]
			}
		}
		if ent == nil || ent.Decision != "ambiguous" || ent.EntityID != "" {
			t.Fatalf("entity outcome for main = %+v, want ambiguous without an ID", ent)
		}
		got = nil
		for _, c := range ent.Candidates {
			got = append(got, c.EntityID)
		}
		slices.Sort(got)
		if d := diff(want, got); d != "" {
			t.Errorf("entity outcome candidates (-want +got):\n%s", d)
		}
		// The ambiguous event's candidates, sorted and comma-joined, one entry per event.
		cands := e.ledger().Strings(`SELECT (SELECT string_agg(c, ',' ORDER BY c) FROM unnest(candidate_ids) c)
			FROM entity_resolution_events
			WHERE observation_id = $1 AND mention_ref = 'o' AND decision = 'ambiguous' AND entity_id IS NULL`,
			out.ObservationID)
		if d := diff([]string{string(want[0]) + "," + string(want[1])}, cands); d != "" {
			t.Errorf("ambiguous resolution events' candidates (-want +got):\n%s", d)
		}

		after := e.counts()
		for _, table := range []string{"relationships", "support_links", "relationship_transitions", "entities", "verification_events"} {
			if before[table] != after[table] {
				t.Errorf("%s %d -> %d, want unchanged", table, before[table], after[table])
			}
		}
		if after["observations"] != before["observations"]+1 || after["review_items"] != before["review_items"]+1 {
			t.Errorf("want one more observation and review item: %s", countsDiff(before, after))
		}
		if n := e.count("semantic_edges"); n != edgesBefore {
			t.Errorf("semantic_edges %d -> %d", edgesBefore, n)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM verification_events WHERE observation_id = $1`, out.ObservationID); n != 0 {
			t.Errorf("the unresolved observation was verified %d times; the verifier must see only resolvable claims", n)
		}
	})
}

// ---- Invariant 3 ----

func TestInvariant3_EveryDecisionRecordsActorProvenanceTimeTargetsAndIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	type trn struct {
		from, to                 string
		actorKind, actor, ingest string
		key, related             string
		fromVersion, toVersion   int
		createdAt                time.Time
	}
	// transitionsOf reads a relationship's transitions through Trace, in version order.
	transitionsOf := func(id densemem.RelationshipID) []trn {
		t.Helper()
		var out []trn
		for _, x := range e.trace(e.A, id).Transitions {
			out = append(out, trn{from: string(x.FromStatus), to: string(x.ToStatus), actorKind: x.ActorKind,
				actor: string(x.ActorProfileID), ingest: x.IngestID, key: x.IdempotencyKey, related: string(x.RelatedRelationshipID),
				fromVersion: x.FromVersion, toVersion: x.ToVersion, createdAt: x.CreatedAt.UTC()})
		}
		return out
	}
	// checkIdempotency reads A's idempotency record of key on the ledger: no call shows it.
	checkIdempotency := func(key, op, ingest string, at time.Time) {
		t.Helper()
		rows := e.ledger().Strings(`SELECT to_jsonb(r)::text FROM idempotency_records r
			WHERE team_id = $1 AND profile_id = $2 AND idempotency_key = $3`, e.team, e.A.ProfileID, key)
		if len(rows) != 1 {
			t.Fatalf("idempotency records of %s: %v, want one", key, rows)
		}
		var rec struct {
			Operation   string          `json:"operation"`
			IngestID    string          `json:"ingest_id"`
			RequestHash string          `json:"request_hash"`
			Result      json.RawMessage `json:"result"`
			CreatedAt   time.Time       `json:"created_at"`
		}
		if err := json.Unmarshal([]byte(rows[0]), &rec); err != nil {
			t.Fatalf("idempotency record %s: %v", key, err)
		}
		if rec.Operation != op || rec.IngestID != ingest || len(rec.RequestHash) != 64 || !rec.CreatedAt.Equal(at) {
			t.Errorf("idempotency %s: op %s ingest %s hash %q at %v; want %s %s <sha256> %v", key, rec.Operation, rec.IngestID,
				rec.RequestHash, rec.CreatedAt, op, ingest, at)
		}
		if !json.Valid(rec.Result) || len(rec.Result) < 3 {
			t.Errorf("idempotency %s stores no result: %s", key, rec.Result)
		}
	}
	checkProvenance := func(pl *densemem.Placement, at time.Time) {
		t.Helper()
		for _, q := range []string{
			`SELECT count(*) FROM evidence_fragments WHERE ingest_id = $1 AND (author_profile_id <> $2 OR created_at <> $3)`,
			`SELECT count(*) FROM observations WHERE ingest_id = $1 AND (profile_id <> $2 OR created_at <> $3)`,
			`SELECT count(*) FROM support_links WHERE ingest_id = $1 AND (profile_id <> $2 OR author_profile_id <> $2 OR created_at <> $3)`,
			`SELECT count(*) FROM entity_resolution_events WHERE ingest_id = $1 AND (profile_id <> $2 OR created_at <> $3)`,
		} {
			if n := e.ledger().Int(q, pl.IngestID, e.A.ProfileID, at); n != 0 {
				t.Errorf("%d rows with wrong provenance: %s", n, q)
			}
		}
		if n := e.ledger().Int(`SELECT count(*) FROM observations WHERE ingest_id = $1`, pl.IngestID); n != len(pl.RelationshipOutcomes) {
			t.Errorf("ingest %s has %d observations, want %d", pl.IngestID, n, len(pl.RelationshipOutcomes))
		}
		for _, o := range pl.RelationshipOutcomes {
			var created []time.Time
			for _, v := range e.trace(e.A, o.RelationshipID).Verifications {
				if v.ObservationID == o.ObservationID {
					created = append(created, v.CreatedAt)
				}
			}
			if len(created) != 1 || !created[0].Equal(at) {
				t.Errorf("verifications of %s at %v, want one at %v", o.ObservationID, created, at)
			}
		}
	}

	// Remember: a prior, then a dated supersession.
	t1 := e.step()
	key1 := nextKey()
	p1 := e.rememberReq(e.A, deploy("production", "main").request(key1))
	prior := only(t, p1).RelationshipID
	t2 := e.step()
	key2 := nextKey()
	p2 := e.rememberReq(e.A, deploy("production", "release").since(date("2026-05-01")).request(key2))
	next := only(t, p2)
	if next.Category != densemem.CategorySupersededPrior {
		t.Fatalf("category %s, want superseded_prior", next.Category)
	}
	actor := string(e.A.ProfileID)
	if d := diff([]trn{
		{from: "", to: "active", actorKind: "profile", actor: actor, ingest: p1.IngestID, key: key1, toVersion: 1, createdAt: t1},
		{from: "active", to: "superseded", actorKind: "profile", actor: actor, ingest: p2.IngestID, key: key2,
			related: string(next.RelationshipID), fromVersion: 1, toVersion: 2, createdAt: t2},
	}, transitionsOf(prior)); d != "" {
		t.Errorf("prior transitions (-want +got):\n%s", d)
	}
	if d := diff([]trn{{from: "", to: "active", actorKind: "profile", actor: actor, ingest: p2.IngestID, key: key2,
		toVersion: 1, createdAt: t2}}, transitionsOf(next.RelationshipID)); d != "" {
		t.Errorf("new relationship transitions (-want +got):\n%s", d)
	}
	r := e.trace(e.A, prior).Relationship
	// The row's own ingest_id is not in the trace (its creation transition's is, checked above).
	ingest := e.ledger().Strings(`SELECT ingest_id FROM relationships WHERE relationship_id = $1`, prior)
	if string(r.OwnerProfileID) != actor || !slices.Equal(ingest, []string{p1.IngestID}) || !r.CreatedAt.Equal(t1) || !r.UpdatedAt.Equal(t2) {
		t.Errorf("prior: owner %s ingest %v created %v updated %v; want %s %s %v %v", r.OwnerProfileID, ingest, r.CreatedAt,
			r.UpdatedAt, actor, p1.IngestID, t1, t2)
	}
	checkProvenance(p1, t1)
	checkProvenance(p2, t2)
	checkIdempotency(key1, "remember", p1.IngestID, t1)
	checkIdempotency(key2, "remember", p2.IngestID, t2)

	// A held decision records its review item with the targets it concerns.
	t3 := e.step()
	key3 := nextKey()
	p3 := e.rememberReq(e.A, deploy("production", "hotfix").request(key3))
	held := only(t, p3)
	if held.Category != densemem.CategoryNeedsReview || held.Review == nil {
		t.Fatalf("held: %+v", held)
	}
	var item *densemem.TraceReviewItem
	for _, it := range e.trace(e.A, held.RelationshipID).ReviewItems {
		if it.ReviewID == held.Review.ReviewID {
			item = &it
		}
	}
	if item == nil {
		t.Fatalf("the held relationship's trace does not list its review item %s", held.Review.ReviewID)
	}
	if item.Kind != "relationship_conflict" || item.Status != "open" || string(item.ProfileID) != actor || item.IngestID != p3.IngestID ||
		item.PlacementItemID != held.PlacementItemID || item.ObservationID != held.ObservationID ||
		item.RelationshipID != held.RelationshipID ||
		!slices.Equal(item.RelatedRelationshipID, []densemem.RelationshipID{next.RelationshipID}) || !item.CreatedAt.Equal(t3) {
		t.Errorf("review item: kind %s status %s profile %s ingest %s item %s obs %s rel %v related %v at %v",
			item.Kind, item.Status, item.ProfileID, item.IngestID, item.PlacementItemID, item.ObservationID, item.RelationshipID,
			item.RelatedRelationshipID, item.CreatedAt)
	}
	checkProvenance(p3, t3)
	checkIdempotency(key3, "remember", p3.IngestID, t3)

	// Forget records the same.
	t4 := e.step()
	key4 := nextKey()
	res, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: next.RelationshipID, Reason: "moved to trunk",
		IdempotencyKey: key4})
	if err != nil {
		t.Fatal(err)
	}
	trs := transitionsOf(next.RelationshipID)
	if len(trs) != 2 {
		t.Fatalf("after forget: %d transitions, want 2", len(trs))
	}
	// Forget returns no ingest: the one its idempotency record names is the call's.
	forgetIngest := e.ledger().Strings(`SELECT ingest_id FROM idempotency_records WHERE profile_id = $1 AND idempotency_key = $2`,
		e.A.ProfileID, key4)
	if len(forgetIngest) != 1 {
		t.Fatalf("idempotency records of the forget: %v, want one", forgetIngest)
	}
	if d := diff(trn{from: "active", to: "retracted", actorKind: "profile", actor: actor, ingest: forgetIngest[0], key: key4,
		fromVersion: 1, toVersion: 2, createdAt: t4}, trs[1]); d != "" {
		t.Errorf("forget transition (-want +got):\n%s", d)
	}
	retraction := e.trace(e.A, next.RelationshipID).Transitions[1]
	if retraction.TransitionID != res.TransitionID || !strings.Contains(retraction.Reason, "moved to trunk") {
		t.Errorf("forget transition %s reason %q; result names %s and the reason must be kept", retraction.TransitionID,
			retraction.Reason, res.TransitionID)
	}
	checkIdempotency(key4, "forget", forgetIngest[0], t4)
}

// ---- Invariant 4 ----

func TestInvariant4_CorrectionNeverMutatesVerbatimEvidence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.remember(e.A, deploy("production", "main"))
	e.step()
	e.remember(e.A, deploy("production", "hotfix")) // held for review
	e.step()
	e.remember(e.B, deploy("production", "main")) // another owner's evidence on the same key

	evidenceTables := appendOnlyTables[3:9] // fragments, contents, observations, verifications, resolutions, supports
	var before map[string]map[string]string
	e.snapshot(func(l ledgerView) { before = l.AppendOnly(evidenceTables) })
	for table, rows := range before {
		if len(rows) == 0 {
			t.Fatalf("%s is empty before the correction; the test would prove nothing", table)
		}
	}
	e.step()
	out := e.remember(e.A, deploy("production", "release").since(date("2026-05-01")))
	if out.Category != densemem.CategorySupersededPrior {
		t.Fatalf("correction: category %s, want superseded_prior", out.Category)
	}
	var after map[string]map[string]string
	e.snapshot(func(l ledgerView) { after = l.AppendOnly(evidenceTables) })
	for table, rows := range before {
		// The rows that existed before, as they are now: every one must still be there, unchanged.
		kept := map[string]string{}
		for k := range rows {
			if v, ok := after[table][k]; ok {
				kept[k] = v
			}
		}
		if d := cmp.Diff(rows, kept); d != "" {
			t.Errorf("the correction changed %s (-before +after):\n%s", table, d)
		}
	}
	for table := range before {
		if len(after[table]) <= len(before[table]) {
			t.Errorf("%s: %d rows before, %d after; the correction must append its own evidence", table, len(before[table]), len(after[table]))
		}
	}
}

// ---- Invariant 5 ----

func TestInvariant5_WritesGoThroughPostgresPolicyNotAGraphSideChannel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keep := e.remember(e.A, deploy("staging", "develop"))
	out := e.remember(e.A, deploy("production", "main"))
	id := out.RelationshipID

	t.Run("semantic_edges is a view over relationships", func(t *testing.T) {
		if n := e.ledger().Int(`SELECT count(*) FROM pg_views WHERE schemaname = current_schema() AND viewname = 'semantic_edges'`); n != 1 {
			t.Errorf("pg_views has %d semantic_edges views, want 1", n)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'semantic_edges'`); n != 0 {
			t.Errorf("semantic_edges is also a table")
		}
		if typ := e.ledger().Strings(`SELECT table_type::text FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_name = 'semantic_edges'`); !slices.Equal(typ, []string{"VIEW"}) {
			t.Errorf("information_schema table_type = %q, want VIEW", typ)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM information_schema.view_table_usage
			WHERE view_schema = current_schema() AND view_name = 'semantic_edges' AND table_name = 'relationships'`); n != 1 {
			t.Errorf("semantic_edges does not read relationships")
		}
	})

	t.Run("the view refuses direct writes", func(t *testing.T) {
		for _, stmt := range []string{
			`INSERT INTO semantic_edges (team_id, relationship_id, owner_profile_id, subject_entity_id, predicate_key, polarity, scope, tier, version)
			 VALUES ('tm_x', 'rel_x', 'pf_x', 'ent_x', 'deploys_from', '+', '', 'fact', 1)`,
			`UPDATE semantic_edges SET tier = 'fact'`,
			`DELETE FROM semantic_edges`,
		} {
			if _, err := e.pool.Exec(e.ctx, stmt); err == nil {
				t.Errorf("%s succeeded; the graph must not be writable", strings.Fields(stmt)[0])
			}
		}
		if n := e.count("semantic_edges"); n != 2 {
			t.Errorf("semantic_edges = %d, want 2", n)
		}
	})

	t.Run("an unaudited status change cannot commit", func(t *testing.T) {
		tx, err := e.pool.Begin(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(e.ctx) }()
		if _, err := tx.Exec(e.ctx, `UPDATE relationships SET status = 'retracted', version = version + 1 WHERE relationship_id = $1`, id); err != nil {
			t.Fatalf("the update itself should pass the row guard (the check is deferred): %v", err)
		}
		err = tx.Commit(e.ctx)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "DM002" {
			t.Fatalf("COMMIT without a transition: %v, want SQLSTATE DM002", err)
		}
		if st, _, _, v := e.relationshipState(id); st != "active" || v != 1 {
			t.Errorf("after the refused commit: %s v%d, want active v1", st, v)
		}
		if e.ledger().Edges(id) != 1 {
			t.Errorf("the edge left semantic_edges")
		}
	})

	t.Run("a transition that does not match cannot cover the change", func(t *testing.T) {
		tx, err := e.pool.Begin(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(e.ctx) }()
		if _, err := tx.Exec(e.ctx, `INSERT INTO relationship_transitions (team_id, transition_id, relationship_id, from_status,
			to_status, from_tier, to_tier, from_version, to_version, reason, actor_kind, actor_profile_id, ingest_id,
			idempotency_key, created_at) VALUES ($1, 'trn_manual_x', $2, 'active', 'superseded', 'validated_claim',
			'validated_claim', 1, 2, 'manual', 'profile', $3, 'ing_manual', 'manual', $4)`,
			e.team, id, e.A.ProfileID, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(e.ctx, `UPDATE relationships SET status = 'retracted', version = version + 1 WHERE relationship_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(e.ctx); err == nil {
			t.Fatal("COMMIT succeeded with a transition to another status")
		}
		if st, _, _, v := e.relationshipState(id); st != "active" || v != 1 {
			t.Errorf("after the refused commit: %s v%d, want active v1", st, v)
		}
	})

	t.Run("a change without a version bump is refused at once", func(t *testing.T) {
		_, err := e.pool.Exec(e.ctx, `UPDATE relationships SET status = 'retracted' WHERE relationship_id = $1`, id)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "DM001" {
			t.Fatalf("update without version bump: %v, want SQLSTATE DM001", err)
		}
	})

	t.Run("forget writes only the relationship and its ledger", func(t *testing.T) {
		var before map[string]int
		var relsBefore map[string]string
		var ledgers map[string]map[string]string
		e.snapshot(func(l ledgerView) {
			before, relsBefore = l.Counts(dataTables), l.Table("relationships", "relationship_id")
			ledgers = l.AppendOnly(appendOnlyTables)
		})
		e.step()
		if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: id, IdempotencyKey: nextKey()}); err != nil {
			t.Fatal(err)
		}
		var after map[string]int
		var relsAfter map[string]string
		var ledgersAfter map[string]map[string]string
		e.snapshot(func(l ledgerView) {
			after, relsAfter = l.Counts(dataTables), l.Table("relationships", "relationship_id")
			ledgersAfter = l.AppendOnly(appendOnlyTables)
		})
		want := maps.Clone(before)
		want["relationship_transitions"]++
		want["idempotency_records"]++
		for _, table := range dataTables {
			if after[table] != want[table] {
				t.Errorf("%s: %d -> %d, want %d", table, before[table], after[table], want[table])
			}
		}
		if bad := rowsKept(ledgers, ledgersAfter); len(bad) > 0 {
			t.Errorf("forget changed ledger rows:\n%s", strings.Join(bad, "\n"))
		}
		for k, v := range relsBefore {
			if k != string(id) && relsAfter[k] != v {
				t.Errorf("forget changed another relationship %s", k)
			}
		}
		if relsAfter[string(id)] == relsBefore[string(id)] {
			t.Errorf("forget did not change the relationship row")
		}
		if st, _, _, v := e.relationshipState(id); st != "retracted" || v != 2 {
			t.Errorf("forgotten: %s v%d, want retracted v2", st, v)
		}
		if e.ledger().Edges(id) != 0 || e.ledger().Edges(keep.RelationshipID) != 1 {
			t.Errorf("semantic_edges: forgotten %d (want 0), kept %d (want 1)", e.ledger().Edges(id), e.ledger().Edges(keep.RelationshipID))
		}
	})
}

// ---- Invariant 7 ----

func TestInvariant7_PriorChangesOnlyWithItsTransition(t *testing.T) {
	t.Parallel()

	t.Run("supersession writes the prior's state and its transition together", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		prior := e.remember(e.A, deploy("production", "main")).RelationshipID
		at := e.step()
		pl := e.rememberReq(e.A, deploy("production", "release").since(date("2026-05-01")).request(nextKey()))
		next := only(t, pl)
		if next.Category != densemem.CategorySupersededPrior {
			t.Fatalf("category %s", next.Category)
		}
		// One trace reads the prior's state and its transitions in one transaction.
		tr := e.trace(e.A, prior)
		r := tr.Relationship
		var x *densemem.TraceTransition
		for i := range tr.Transitions {
			if tr.Transitions[i].ToVersion == r.Version {
				x = &tr.Transitions[i]
			}
		}
		if x == nil {
			t.Fatalf("no transition to the prior's current version %d: %+v", r.Version, tr.Transitions)
		}
		if r.Version != 2 || r.Status != "superseded" || x.ToStatus != r.Status || x.ToTier != r.Tier || r.ValidTo == nil ||
			x.ToValidTo == nil || !x.ToValidTo.Equal(*r.ValidTo) || !r.ValidTo.Equal(date("2026-05-01")) {
			t.Errorf("prior %s/%s valid_to %v v%d; transition %s/%s valid_to %v", r.Status, r.Tier, r.ValidTo, r.Version, x.ToStatus,
				x.ToTier, x.ToValidTo)
		}
		if x.IngestID != pl.IngestID || x.RelatedRelationshipID != next.RelationshipID || !x.CreatedAt.Equal(at) || !r.UpdatedAt.Equal(at) {
			t.Errorf("transition ingest %s (the new relationship's call: %s), related %s, at %v, prior updated %v; want one call at %v",
				x.IngestID, pl.IngestID, x.RelatedRelationshipID, x.CreatedAt, r.UpdatedAt, at)
		}
		// Every version of every relationship has exactly one transition that produced it.
		if n := e.ledger().Int(`SELECT count(*) FROM relationships r WHERE NOT EXISTS (SELECT 1 FROM relationship_transitions t
			WHERE t.relationship_id = r.relationship_id AND t.to_version = r.version AND t.to_status = r.status)`); n != 0 {
			t.Errorf("%d relationships without a transition to their current version", n)
		}
		if n := e.ledger().Int(`SELECT count(*) FROM relationships r
			WHERE (SELECT count(*) FROM relationship_transitions t WHERE t.relationship_id = r.relationship_id) <> r.version`); n != 0 {
			t.Errorf("%d relationships whose transition count differs from their version", n)
		}
	})

	for _, step := range []string{"writeset.after:updates", "writeset.after:transitions", "tx.before_commit"} {
		t.Run("failure at "+step+" leaves the prior untouched", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			prior := e.remember(e.A, deploy("production", "main")).RelationshipID
			before := e.counts()
			req := deploy("production", "release").since(date("2026-05-01")).request(nextKey())
			_, err := e.client.Remember(failpoint.Arm(e.ctx, step), e.A, req)
			if !errors.Is(err, failpoint.ErrInjected) {
				t.Fatalf("remember with %s armed: %v, want ErrInjected", step, err)
			}
			if st, tier, vt, v := e.relationshipState(prior); st != "active" || tier != "validated_claim" || vt != nil || v != 1 {
				t.Errorf("prior after failure: %s/%s valid_to %v v%d, want active/validated_claim nil v1", st, tier, vt, v)
			}
			if tr := e.transitions(prior); len(tr) != 1 {
				t.Errorf("prior transitions after failure: %v, want exactly one", tr)
			}
			if d := countsDiff(before, e.counts()); d != "" {
				t.Errorf("failed call wrote: %s", d)
			}
			// The same request then succeeds: the failure left no idempotency record either.
			pl := e.rememberReq(e.A, req)
			if out := only(t, pl); out.Category != densemem.CategorySupersededPrior || pl.Replayed {
				t.Errorf("retry: %+v replayed=%v", out, pl.Replayed)
			}
			if st, _, _, v := e.relationshipState(prior); st != "superseded" || v != 2 {
				t.Errorf("prior after retry: %s v%d", st, v)
			}
		})
	}
}

// ---- Invariant 8 ----

func TestInvariant8_ForgetRemovesEdgeButKeepsNodesAndHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pl := e.rememberReq(e.A, mergeRequests(nextKey(), deploy("production", "main").request(""), ownerEmail("Dense-Mem", "ops@example.com")))
	if len(pl.RelationshipOutcomes) != 2 {
		t.Fatalf("outcomes: %+v", pl.RelationshipOutcomes)
	}
	edge, value := pl.RelationshipOutcomes[0].RelationshipID, pl.RelationshipOutcomes[1].RelationshipID
	for _, o := range pl.RelationshipOutcomes {
		if o.Category != densemem.CategoryAccepted {
			t.Fatalf("setup: %+v", o)
		}
	}
	// Supersede nothing, but give the edge a second support so there is more history to keep.
	e.step()
	if out := e.remember(e.A, withContent(deploy("production", "main"), "Runbook: the production environment deploys from main.")); out.Category != densemem.CategorySupported {
		t.Fatalf("second support: %+v", out)
	}
	traceBefore := e.trace(e.A, edge)

	for _, id := range []densemem.RelationshipID{edge, value} {
		var before map[string]int
		var ledgers map[string]map[string]string
		e.snapshot(func(l ledgerView) { before, ledgers = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })
		if e.ledger().Edges(id) != 1 {
			t.Fatalf("%s is not an edge before forget", id)
		}
		_, _, _, version := e.relationshipState(id)
		e.step()
		res, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: id, Reason: "obsolete", IdempotencyKey: nextKey()})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "retracted" || res.Version != version+1 || res.TransitionID == "" || res.AlreadyRetracted {
			t.Errorf("forget result %+v, want retracted at version %d", res, version+1)
		}
		var after map[string]int
		var ledgersAfter map[string]map[string]string
		e.snapshot(func(l ledgerView) { after, ledgersAfter = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })
		for _, table := range []string{"entities", "entity_names", "literal_values", "evidence_fragments", "fragment_contents",
			"observations", "verification_events", "support_links", "entity_resolution_events", "relationships"} {
			if after[table] != before[table] {
				t.Errorf("forget %s: %s %d -> %d, want unchanged", id, table, before[table], after[table])
			}
		}
		if after["relationship_transitions"] != before["relationship_transitions"]+1 {
			t.Errorf("forget %s: transitions %d -> %d, want +1", id, before["relationship_transitions"], after["relationship_transitions"])
		}
		if bad := rowsKept(ledgers, ledgersAfter); len(bad) > 0 {
			t.Errorf("forget %s changed history:\n%s", id, strings.Join(bad, "\n"))
		}
		if e.ledger().Edges(id) != 0 {
			t.Errorf("%s is still in semantic_edges", id)
		}
	}
	if n := e.count("literal_values"); n != 1 {
		t.Errorf("literal_values = %d, want the value node kept", n)
	}
	if n := e.count("semantic_edges"); n != 0 {
		t.Errorf("semantic_edges = %d after forgetting both", n)
	}

	tr := e.trace(e.A, edge)
	if tr.Relationship.Status != "retracted" || tr.Relationship.Version != 3 {
		t.Errorf("trace: %s v%d, want retracted v3", tr.Relationship.Status, tr.Relationship.Version)
	}
	if tr.Relationship.Subject.Name != "production" || tr.Relationship.Object.Name != "main" {
		t.Errorf("trace names %q -> %q: nodes must stay resolvable", tr.Relationship.Subject.Name, tr.Relationship.Object.Name)
	}
	if len(tr.Evidence) != len(traceBefore.Evidence) || len(tr.Evidence) != 2 || len(tr.Observations) != len(traceBefore.Observations) ||
		len(tr.Verifications) != len(traceBefore.Verifications) || len(tr.IdentityResolutions) < len(traceBefore.IdentityResolutions) {
		t.Errorf("trace lost history: evidence %d->%d, observations %d->%d, verifications %d->%d, resolutions %d->%d",
			len(traceBefore.Evidence), len(tr.Evidence), len(traceBefore.Observations), len(tr.Observations),
			len(traceBefore.Verifications), len(tr.Verifications), len(traceBefore.IdentityResolutions), len(tr.IdentityResolutions))
	}
	for _, ev := range tr.Evidence {
		if ev.Content == "" {
			t.Errorf("trace evidence %s has no content after forget", ev.FragmentID)
		}
	}
	var got []string
	for _, x := range tr.Transitions {
		got = append(got, fmt.Sprintf("%s->%s v%d", x.FromStatus, x.ToStatus, x.ToVersion))
	}
	if d := diff([]string{"->active v1", "active->active v2", "active->retracted v3"}, got); d != "" {
		t.Errorf("trace transitions (-want +got):\n%s", d)
	}
	if len(tr.Transitions) == 0 {
		t.Fatal("trace shows no transitions")
	}
	if last := tr.Transitions[len(tr.Transitions)-1]; !strings.Contains(last.Reason, "obsolete") || last.ActorProfileID != e.A.ProfileID {
		t.Errorf("retraction transition %+v: want the reason and the actor", last)
	}
}

// ---- Invariant 9 ----

// TestInvariant9_TraceReconstructsLineage: Trace alone (with transitions), read by a profile that
// authored none of it, tells each relationship's lineage: a same-owner supersession on both sides, a
// retraction, and a cross-profile correction with its cross-reference, its team case with the case's
// events in version order, and the reviewer's supersession of the losing side.
func TestInvariant9_TraceReconstructsLineage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apr1, may1 := date("2026-04-01"), date("2026-05-01")
	a, b, c := e.A.ProfileID, e.B.ProfileID, e.C.ProfileID
	transitionsOf := func(id densemem.RelationshipID) []densemem.TraceTransition { return e.trace(e.admin, id).Transitions }
	created := func(by densemem.ProfileID, ingest, key string, at time.Time) densemem.TraceTransition {
		return densemem.TraceTransition{ToStatus: "active", ToTier: "validated_claim", ToVersion: 1, Reason: "accepted",
			ActorKind: "profile", ActorProfileID: by, IngestID: ingest, IdempotencyKey: key, CreatedAt: at}
	}
	// ended is an accepted relationship's transition from active v1 to status v2.
	ended := func(status densemem.Status, validTo *time.Time, reason, actorKind string, by densemem.ProfileID,
		at time.Time) densemem.TraceTransition {
		return densemem.TraceTransition{FromStatus: "active", ToStatus: status, FromTier: "validated_claim", ToTier: "validated_claim",
			ToValidTo: validTo, FromVersion: 1, ToVersion: 2, Reason: reason, ActorKind: actorKind, ActorProfileID: by, CreatedAt: at}
	}
	// ownIngest takes the ingest of a transition no call returns, after checking it is not the creation's.
	ownIngest := func(t *testing.T, got []densemem.TraceTransition, want *densemem.TraceTransition) {
		t.Helper()
		if len(got) != 2 || got[1].IngestID == "" || got[1].IngestID == got[0].IngestID {
			t.Fatalf("transitions %+v: want a second one under an ingest of its own", got)
		}
		want.IngestID = got[1].IngestID
	}
	noTransitionIDs := cmpopts.IgnoreFields(densemem.TraceTransition{}, "TransitionID")
	must := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	var successor densemem.RelationshipOutcome
	var successorCreated densemem.TraceTransition
	must("same-owner supersession", func(t *testing.T) {
		k1, at1 := nextKey(), e.step()
		p1 := e.rememberReq(e.A, deploy("staging", "main").since(apr1).request(k1))
		k2, at2 := nextKey(), e.step()
		p2 := e.rememberReq(e.A, deploy("staging", "release").since(may1).request(k2))
		prior, next := only(t, p1), only(t, p2)
		if next.Category != densemem.CategorySupersededPrior || !slices.Equal(next.Related, []densemem.RelationshipID{prior.RelationshipID}) {
			t.Fatalf("A's later dated fact: %s related %v, want superseded_prior of %s", next.Category, next.Related, prior.RelationshipID)
		}
		superseded := ended("superseded", &may1, "superseded", "profile", a, at2)
		superseded.RelatedRelationshipID, superseded.IngestID, superseded.IdempotencyKey = next.RelationshipID, p2.IngestID, k2
		want := []densemem.TraceTransition{created(a, p1.IngestID, k1, at1), superseded}
		if d := diff(want, transitionsOf(prior.RelationshipID), noTransitionIDs); d != "" {
			t.Errorf("the prior's transitions (-want +got):\n%s", d)
		}
		successor, successorCreated = next, created(a, p2.IngestID, k2, at2)
		if d := diff([]densemem.TraceTransition{successorCreated}, transitionsOf(next.RelationshipID), noTransitionIDs); d != "" {
			t.Errorf("the successor's transitions (-want +got):\n%s", d)
		}
	})

	must("retraction by forget", func(t *testing.T) {
		k3, at3 := nextKey(), e.step()
		res, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: successor.RelationshipID,
			Reason: "staging moved to trunk", IdempotencyKey: k3})
		if err != nil {
			t.Fatal(err)
		}
		retracted := ended("retracted", nil, "forget: staging moved to trunk", "profile", a, at3)
		retracted.TransitionID, retracted.IdempotencyKey = res.TransitionID, k3
		got := transitionsOf(successor.RelationshipID)
		ownIngest(t, got, &retracted) // Forget returns no ingest
		successorCreated.TransitionID = got[0].TransitionID
		if d := diff([]densemem.TraceTransition{successorCreated, retracted}, got); d != "" {
			t.Errorf("the successor's transitions (-want +got):\n%s", d)
		}
	})

	must("cross-profile correction, team case and nightly resolution", func(t *testing.T) {
		kA, atA := nextKey(), e.step()
		pA := e.rememberReq(e.A, deploy("production", "main").request(kA))
		a1 := only(t, pA)
		e.clock.Advance(24 * time.Hour)
		atB := e.step()
		reqB := correcting(deploy("production", "release").since(may1), a1.RelationshipID)
		pB := e.rememberReq(e.B, reqB)
		b1 := only(t, pB)
		if b1.Conflict == nil || len(b1.CrossReferences) != 1 || b1.CrossReferences[0].Kind != "corrects" {
			t.Fatalf("B's correction: conflict %+v, cross-references %+v; want a case and one corrects", b1.Conflict, b1.CrossReferences)
		}
		caseID := b1.Conflict.ConflictID
		atC := e.step()
		c1 := e.remember(e.C, withContent(deploy("production", "release").since(may1),
			"Ops confirmed: since 2026-05-01 the production environment deploys from the release branch."))
		if c1.Conflict == nil || c1.Conflict.ConflictID != caseID {
			t.Fatalf("C's statement did not join case %s: %+v", caseID, c1.Conflict)
		}
		pol, err := e.client.TeamPolicy(e.ctx, e.admin)
		if err != nil {
			t.Fatal(err)
		}
		due := atB.Add(pol.ReviewTTL)
		e.clock.Advance(due.Sub(e.clock.Now()) + time.Minute)
		at := e.clock.Now()
		rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}})
		if err != nil || rep.Resolved != 1 {
			t.Fatalf("nightly review past the due time: %+v, %v; want one resolution", rep, err)
		}

		// Every member's trace shows the case with its events in version order and the preferred side.
		wantCase := densemem.TraceConflict{ConflictID: caseID, Kind: "cross_profile_current_state", Status: "resolved", Version: 3,
			OpenedAt: atB, ReviewDueAt: due, ResolvedAt: &at, EffectiveAt: &may1, EffectiveTimeBasis: "evidence_time",
			Events: []densemem.TraceConflictEvent{
				{CaseVersion: 1, ResultingStatus: "open", ActorKind: "profile", ActorProfileID: b, Reason: "opened",
					PolicyVersion: pol.Version, CreatedAt: atB},
				{CaseVersion: 2, PriorStatus: "open", ResultingStatus: "open", ActorKind: "profile", ActorProfileID: c,
					Reason: "membership_changed", PolicyVersion: pol.Version, CreatedAt: atC},
				{CaseVersion: 3, PriorStatus: "open", ResultingStatus: "resolved", ActorKind: "system_conflict_reviewer",
					Reason: "post_ttl_majority_floor_met", PolicyVersion: pol.Version, TimeBasis: "evidence_time", CreatedAt: at},
			}}
		wantPreferred := []densemem.TraceCaseMember{{RelationshipID: b1.RelationshipID, Version: 1, OwnerProfileID: b},
			{RelationshipID: c1.RelationshipID, Version: 1, OwnerProfileID: c}}
		traces := map[densemem.RelationshipID]*densemem.TraceResult{}
		for _, id := range []densemem.RelationshipID{a1.RelationshipID, b1.RelationshipID, c1.RelationshipID} {
			traces[id] = e.trace(e.admin, id)
			if d := diff([]densemem.TraceConflict{wantCase}, traces[id].Conflicts,
				cmpopts.IgnoreFields(densemem.TraceConflict{}, "PreferredPositionID", "Positions"),
				cmpopts.IgnoreFields(densemem.TraceConflictEvent{}, "EventID")); d != "" {
				t.Fatalf("trace of %s: case (-want +got):\n%s", id, d)
			}
			var preferred []densemem.TraceCaseMember
			for _, p := range traces[id].Conflicts[0].Positions {
				if p.PositionID == traces[id].Conflicts[0].PreferredPositionID {
					preferred = p.Members
				}
			}
			if d := diff(wantPreferred, preferred, cmpopts.SortSlices(func(x, y densemem.TraceCaseMember) bool {
				return x.RelationshipID < y.RelationshipID
			})); d != "" {
				t.Errorf("trace of %s: preferred position's members (-want +got):\n%s", id, d)
			}
		}

		// The corrects cross-reference outgoing from B1 and incoming on A1, beside C1's own.
		xref := func(from densemem.RelationshipOutcome, to densemem.RelationshipID, dir string, by densemem.ProfileID,
			at time.Time) densemem.TraceCrossReference {
			for _, x := range from.CrossReferences {
				if x.ToRelationshipID == to {
					return densemem.TraceCrossReference{CrossReferenceID: x.CrossReferenceID, Kind: x.Kind, Direction: dir,
						FromRelationshipID: from.RelationshipID, FromVersion: 1, ToRelationshipID: to, ToVersion: 1,
						AuthorProfileID: by, CreatedAt: at}
				}
			}
			t.Fatalf("%s placed no cross-reference to %s: %+v", from.RelationshipID, to, from.CrossReferences)
			return densemem.TraceCrossReference{}
		}
		noVerification := cmpopts.IgnoreFields(densemem.TraceCrossReference{}, "VerificationID")
		want := []densemem.TraceCrossReference{xref(b1, a1.RelationshipID, "incoming", b, atB), xref(c1, a1.RelationshipID, "incoming", c, atC)}
		if d := diff(want, traces[a1.RelationshipID].CrossReferences, noVerification); d != "" {
			t.Errorf("A1's cross-references (-want +got):\n%s", d)
		}
		want = []densemem.TraceCrossReference{xref(b1, a1.RelationshipID, "outgoing", b, atB), xref(c1, b1.RelationshipID, "incoming", c, atC)}
		if d := diff(want, traces[b1.RelationshipID].CrossReferences, noVerification); d != "" {
			t.Errorf("B1's cross-references (-want +got):\n%s", d)
		}

		// The loser's episode closed by the reviewer at the case's effective time; the corrector's untouched.
		closed := ended("superseded", &may1, "conflict_resolved:"+caseID, "system_conflict_reviewer", "", at)
		got := traces[a1.RelationshipID].Transitions
		ownIngest(t, got, &closed) // the reviewer's run
		if d := diff([]densemem.TraceTransition{created(a, pA.IngestID, kA, atA), closed}, got, noTransitionIDs); d != "" {
			t.Errorf("A1's transitions (-want +got):\n%s", d)
		}
		wantB := []densemem.TraceTransition{created(b, pB.IngestID, reqB.IdempotencyKey, atB)}
		if d := diff(wantB, traces[b1.RelationshipID].Transitions, noTransitionIDs); d != "" {
			t.Errorf("B1's transitions (-want +got):\n%s", d)
		}
	})
}

// ---- Invariant 10 ----

func TestInvariant10_AnotherProfileCannotForgetOrSupersede(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.remember(e.A, deploy("production", "main"))
	type state struct {
		status, tier string
		validTo      *time.Time
		version      int
	}
	read := func() state {
		var s state
		s.status, s.tier, s.validTo, s.version = e.relationshipState(a.RelationshipID)
		return s
	}
	want := state{status: "active", tier: "validated_claim", version: 1}
	supports := func() int { return len(e.trace(e.admin, a.RelationshipID).Evidence) }

	before := e.counts()
	_, err := e.client.Forget(e.ctx, e.B, densemem.ForgetRequest{RelationshipID: a.RelationshipID, IdempotencyKey: nextKey()})
	if !errors.Is(err, densemem.ErrNotOwner) {
		t.Fatalf("B forgets A's relationship: %v, want ErrNotOwner", err)
	}
	if d := countsDiff(before, e.counts()); d != "" {
		t.Errorf("refused forget wrote: %s", d)
	}
	if d := diff(want, read()); d != "" {
		t.Errorf("A's relationship after B's forget (-want +got):\n%s", d)
	}

	// B's dated replacement is B's own relationship; A's row does not move.
	e.step()
	b := e.remember(e.B, deploy("production", "release").since(date("2026-05-01")))
	if b.Category != densemem.CategoryAccepted || b.Status != "active" || b.RelationshipID == a.RelationshipID ||
		slices.Contains(b.Related, a.RelationshipID) {
		t.Errorf("B's dated release: %+v, want B's own accepted relationship that does not supersede A's", b)
	}
	if owner := e.trace(e.admin, b.RelationshipID).Relationship.OwnerProfileID; owner != e.B.ProfileID {
		t.Errorf("B's relationship owner %q, want %s", owner, e.B.ProfileID)
	}
	if d := diff(want, read()); d != "" {
		t.Errorf("A's relationship after B's replacement (-want +got):\n%s", d)
	}
	if tr := e.transitions(a.RelationshipID); len(tr) != 1 {
		t.Errorf("A's transitions %v, want only its creation", tr)
	}

	// B confirming the same statement gets B's own relationship; A's support and tier do not change.
	e.step()
	b2 := e.remember(e.B, withContent(deploy("production", "main"), "B saw it too: the production environment deploys from main."))
	if b2.RelationshipID == a.RelationshipID || b2.Category == densemem.CategorySupported {
		t.Errorf("B's identical statement joined A's relationship: %+v", b2)
	}
	if n := supports(); n != 1 {
		t.Errorf("A's relationship has %d supports, want 1", n)
	}
	if d := diff(want, read()); d != "" {
		t.Errorf("A's relationship after B's confirmation (-want +got):\n%s", d)
	}

	// And after all that, A still can forget its own relationship; B still cannot forget it.
	if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: b.RelationshipID, IdempotencyKey: nextKey()}); !errors.Is(err, densemem.ErrNotOwner) {
		t.Errorf("A forgets B's relationship: %v, want ErrNotOwner", err)
	}
}

// ---- Invariant 22 ----

func TestInvariant22_EveryQueryIsTeamScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pl := e.rememberReq(e.A, deploy("production", "main").request(nextKey()))
	relID := only(t, pl).RelationshipID
	production := entityID(t, pl, "s")

	team2 := e.mustTeam("globex")
	admin2 := e.profileIn(team2, "admin2", "read", "vocabulary")
	x := e.profileIn(team2, "X", "read", "write")
	e.registerVocabulary(admin2)

	const missing = densemem.RelationshipID("rel_00000000000000000000000000")
	masked := func(err error, id densemem.RelationshipID) string {
		if err == nil {
			return "<nil>"
		}
		return strings.ReplaceAll(err.Error(), string(id), "<id>")
	}
	before := e.counts()

	t.Run("trace", func(t *testing.T) {
		_, errOther := e.client.Trace(e.ctx, x, densemem.TraceRequest{RelationshipID: relID})
		_, errMissing := e.client.Trace(e.ctx, x, densemem.TraceRequest{RelationshipID: missing})
		if !errors.Is(errOther, densemem.ErrNotFound) || !errors.Is(errMissing, densemem.ErrNotFound) {
			t.Fatalf("trace of team 1's relationship: %v; of a random ID: %v; want ErrNotFound for both", errOther, errMissing)
		}
		if a, b := masked(errOther, relID), masked(errMissing, missing); a != b {
			t.Errorf("errors reveal existence:\n existing: %s\n missing:  %s", a, b)
		}
	})

	t.Run("forget", func(t *testing.T) {
		_, errOther := e.client.Forget(e.ctx, x, densemem.ForgetRequest{RelationshipID: relID, IdempotencyKey: nextKey()})
		_, errMissing := e.client.Forget(e.ctx, x, densemem.ForgetRequest{RelationshipID: missing, IdempotencyKey: nextKey()})
		if !errors.Is(errOther, densemem.ErrNotFound) || !errors.Is(errMissing, densemem.ErrNotFound) {
			t.Fatalf("forget of team 1's relationship: %v; of a random ID: %v; want ErrNotFound for both", errOther, errMissing)
		}
		if errors.Is(errOther, densemem.ErrNotOwner) {
			t.Errorf("forget across teams says ErrNotOwner, which reveals the relationship exists")
		}
		if a, b := masked(errOther, relID), masked(errMissing, missing); a != b {
			t.Errorf("errors reveal existence:\n existing: %s\n missing:  %s", a, b)
		}
		if st, _, _, v := e.relationshipState(relID); st != "active" || v != 1 {
			t.Errorf("team 1's relationship: %s v%d", st, v)
		}
	})

	t.Run("known entity of another team", func(t *testing.T) {
		req := deploy("production", "main").request(nextKey())
		req.Proposal.Entities[0].KnownEntityID = production
		_, err := e.client.Remember(e.ctx, x, req)
		var ve *densemem.ValidationError
		if !errors.As(err, &ve) || !ve.Has("proposal.entities[0].known_entity_id") {
			t.Fatalf("known_entity_id of team 1: %v, want a ValidationError at proposal.entities[0].known_entity_id", err)
		}
	})

	t.Run("principal naming another team", func(t *testing.T) {
		forged := densemem.Principal{TeamID: e.team, ProfileID: x.ProfileID}
		if _, err := e.client.Remember(e.ctx, forged, deploy("production", "release").request(nextKey())); !errors.Is(err, densemem.ErrForbidden) {
			t.Errorf("remember: %v, want ErrForbidden", err)
		}
		if _, err := e.client.Trace(e.ctx, forged, densemem.TraceRequest{RelationshipID: relID}); !errors.Is(err, densemem.ErrForbidden) {
			t.Errorf("trace: %v, want ErrForbidden", err)
		}
		if _, err := e.client.Forget(e.ctx, forged, densemem.ForgetRequest{RelationshipID: relID, IdempotencyKey: nextKey()}); !errors.Is(err, densemem.ErrForbidden) {
			t.Errorf("forget: %v, want ErrForbidden", err)
		}
		reverse := densemem.Principal{TeamID: team2, ProfileID: e.A.ProfileID}
		if _, err := e.client.Trace(e.ctx, reverse, densemem.TraceRequest{RelationshipID: relID}); !errors.Is(err, densemem.ErrForbidden) {
			t.Errorf("team 1's profile naming team 2: %v, want ErrForbidden", err)
		}
	})

	if d := countsDiff(before, e.counts()); d != "" {
		t.Errorf("refused cross-team calls wrote: %s", d)
	}

	t.Run("same names in another team are other entities", func(t *testing.T) {
		pl2 := e.rememberReq(x, deploy("production", "main").request(nextKey()))
		out := only(t, pl2)
		if out.Category != densemem.CategoryAccepted {
			t.Fatalf("team 2's first statement: %+v", out)
		}
		for _, en := range pl2.Entities {
			if en.Decision != "created" || en.EntityID == production {
				t.Errorf("team 2 resolved %s to %s (%s); want a new entity of its own", en.Ref, en.EntityID, en.Decision)
			}
		}
		if st, _, _, v := e.relationshipState(relID); st != "active" || v != 1 {
			t.Errorf("team 1's relationship after team 2's statement: %s v%d", st, v)
		}
		if _, err := e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: out.RelationshipID}); !errors.Is(err, densemem.ErrNotFound) {
			t.Errorf("team 1 traces team 2's relationship: %v, want ErrNotFound", err)
		}
		tr := e.trace(e.A, relID)
		for _, n := range tr.Neighbours {
			if n.RelationshipID == out.RelationshipID {
				t.Errorf("team 1's trace lists team 2's relationship as a neighbour")
			}
		}
		for _, r := range tr.IdentityResolutions {
			if r.ProfileID == x.ProfileID {
				t.Errorf("team 1's trace lists team 2's resolution %s", r.ResolutionID)
			}
		}
	})
}

// ---- Invariant 23 ----

func TestInvariant23_AppendOnlyTablesRejectUpdateAndDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pl := e.rememberReq(e.A, mergeRequests(nextKey(), deploy("production", "main").request(""), ownerEmail("Dense-Mem", "ops@example.com")))

	refused := func(t *testing.T, stmt string, args ...any) {
		t.Helper()
		_, err := e.pool.Exec(e.ctx, stmt, args...)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "DM001" {
			t.Errorf("%s: %v, want SQLSTATE DM001 from the append-only guard", stmt, err)
		}
	}
	for _, table := range []string{"predicate_definitions", "team_policies", "entities", "entity_names", "literal_values",
		"evidence_fragments", "fragment_contents", "observations", "verification_events", "entity_resolution_events",
		"support_links", "relationship_transitions", "idempotency_records"} {
		t.Run(table, func(t *testing.T) {
			n := e.count(table)
			if n == 0 {
				t.Fatalf("%s is empty; the test would prove nothing", table)
			}
			snap := e.ledger().Table(table, "ctid")
			t.Run("update", func(t *testing.T) {
				refused(t, "UPDATE "+table+" SET team_id = team_id")
			})
			t.Run("delete", func(t *testing.T) {
				refused(t, "DELETE FROM "+table)
			})
			t.Run("truncate", func(t *testing.T) {
				refused(t, "TRUNCATE "+table+" CASCADE")
			})
			if d := diff(snap, e.ledger().Table(table, "ctid")); d != "" {
				t.Errorf("%s changed:\n%s", table, d)
			}
		})
	}

	t.Run("relationships", func(t *testing.T) {
		id := pl.RelationshipOutcomes[0].RelationshipID // production deploys_from main
		t.Run("delete", func(t *testing.T) {
			refused(t, `DELETE FROM relationships`)
		})
		t.Run("truncate", func(t *testing.T) {
			refused(t, `TRUNCATE relationships CASCADE`)
		})
		// Each authored field is refused even when the version is bumped, so the guard is about the
		// field and not about the missing version bump.
		for _, set := range []string{
			"owner_profile_id = '" + string(e.B.ProfileID) + "'",
			"subject_entity_id = object_entity_id",
			"polarity = '-'",
			"scope = 'eu'",
			"valid_from = '2026-01-01'",
			"predicate_version = predicate_version + 1",
			"observation_id = 'obs_other'",
			"created_at = created_at - interval '1 day'",
		} {
			t.Run("update "+strings.Fields(set)[0], func(t *testing.T) {
				refused(t, "UPDATE relationships SET "+set+", version = version + 1 WHERE relationship_id = $1", id)
			})
		}
		if st, _, _, v := e.relationshipState(id); st != "active" || v != 1 {
			t.Errorf("relationship after refused writes: %s v%d", st, v)
		}
	})
}

// ---- Invariant 24 ----

func TestInvariant24_ReplayedKeyWritesNothingAndReturnsOriginal(t *testing.T) {
	t.Parallel()

	t.Run("remember", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.remember(e.A, deploy("production", "main"))
		e.step()
		req := mergeRequests(nextKey(), deploy("production", "release").since(date("2026-05-01")).request(""),
			deploy("staging", "main").request(""), ownerEmail("Dense-Mem", "ops@example.com"))
		first, err := e.client.Remember(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if first.Replayed {
			t.Fatal("first call reports Replayed")
		}
		// Change the state the first call produced, then replay: the original result comes back.
		e.step()
		if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: first.RelationshipOutcomes[0].RelationshipID,
			IdempotencyKey: nextKey()}); err != nil {
			t.Fatal(err)
		}
		e.step()
		var before map[string]int
		var ledgers map[string]map[string]string
		e.snapshot(func(l ledgerView) { before, ledgers = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })
		again, err := e.client.Remember(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed {
			t.Error("replay does not report Replayed")
		}
		if d := cmp.Diff(first, again, cmpopts.IgnoreFields(densemem.Placement{}, "Replayed")); d != "" {
			t.Errorf("replayed placement (-want +got):\n%s", d)
		}
		var after map[string]int
		var ledgersAfter map[string]map[string]string
		e.snapshot(func(l ledgerView) { after, ledgersAfter = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })
		if d := countsDiff(before, after); d != "" {
			t.Errorf("replay wrote: %s", d)
		}
		if bad := rowsKept(ledgers, ledgersAfter); len(bad) > 0 {
			t.Errorf("replay changed rows:\n%s", strings.Join(bad, "\n"))
		}

		// The same key with another request is refused and writes nothing.
		other := req
		other.Evidence = slices.Clone(req.Evidence)
		other.Evidence[0].SourceGroup = "another-source"
		if _, err := e.client.Remember(e.ctx, e.A, other); !errors.Is(err, densemem.ErrIdempotencyConflict) {
			t.Errorf("same key, different request: %v, want ErrIdempotencyConflict", err)
		}
		if d := countsDiff(before, e.counts()); d != "" {
			t.Errorf("idempotency conflict wrote: %s", d)
		}
		// The key is the caller's: another profile may use the same key for its own request.
		if pl, err := e.client.Remember(e.ctx, e.B, req); err != nil || pl.Replayed {
			t.Errorf("B with A's key: replayed=%v err=%v; keys are per profile", pl != nil && pl.Replayed, err)
		}
	})

	t.Run("forget", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		id := e.remember(e.A, deploy("production", "main")).RelationshipID
		req := densemem.ForgetRequest{RelationshipID: id, Reason: "wrong", IdempotencyKey: nextKey()}
		e.step()
		first, err := e.client.Forget(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		before := e.counts()
		e.step()
		again, err := e.client.Forget(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if first.Replayed || !again.Replayed {
			t.Errorf("Replayed: first %v, again %v", first.Replayed, again.Replayed)
		}
		if d := cmp.Diff(first, again, cmpopts.IgnoreFields(densemem.ForgetResult{}, "Replayed")); d != "" {
			t.Errorf("replayed forget (-want +got):\n%s", d)
		}
		if d := countsDiff(before, e.counts()); d != "" {
			t.Errorf("replayed forget wrote: %s", d)
		}
		other := req
		other.Reason = "another reason"
		if _, err := e.client.Forget(e.ctx, e.A, other); !errors.Is(err, densemem.ErrIdempotencyConflict) {
			t.Errorf("same key, different forget: %v, want ErrIdempotencyConflict", err)
		}
		// A remember may not reuse a forget's key either.
		if _, err := e.client.Remember(e.ctx, e.A, deploy("production", "main").request(req.IdempotencyKey)); !errors.Is(err, densemem.ErrIdempotencyConflict) {
			t.Errorf("remember with a forget's key: %v, want ErrIdempotencyConflict", err)
		}
		if d := countsDiff(before, e.counts()); d != "" {
			t.Errorf("refused calls wrote: %s", d)
		}
	})

	t.Run("concurrent identical calls yield one result", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		req := deploy("production", "main").request(nextKey())
		const n = 8
		results := make([]*densemem.Placement, n)
		errs := make([]error, n)
		runTogether(n, func(i int) { results[i], errs[i] = e.client.Remember(e.ctx, e.A, req) })
		fresh := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("call %d: %v", i, errs[i])
			}
			if !results[i].Replayed {
				fresh++
			}
			if d := cmp.Diff(results[0], results[i], cmpopts.IgnoreFields(densemem.Placement{}, "Replayed")); d != "" {
				t.Errorf("call %d returned another result (-want +got):\n%s", i, d)
			}
		}
		if fresh != 1 {
			t.Errorf("%d calls report a fresh write, want exactly 1", fresh)
		}
		for table, want := range map[string]int{"relationships": 1, "evidence_fragments": 1, "entities": 2, "idempotency_records": 1} {
			if got := e.count(table); got != want {
				t.Errorf("%s = %d, want %d", table, got, want)
			}
		}
	})
}

// ---- Invariant 27 ----

// faultyVerifier wraps the SpanVerifier and can be told to fail or to answer out of contract.
type faultyVerifier struct {
	mode atomic.Int32 // 0 ok, 1 error, 2 drop a result
}

func (v *faultyVerifier) Name() string { return "inv_verifier" }

func (v *faultyVerifier) Verify(ctx context.Context, req evidence.VerifyRequest) ([]evidence.Result, error) {
	switch v.mode.Load() {
	case 1:
		return nil, errors.New("model endpoint timed out")
	case 2:
		res, _ := evidence.SpanVerifier{}.Verify(ctx, req)
		return res[:len(res)-1], nil
	}
	return evidence.SpanVerifier{}.Verify(ctx, req)
}

func TestInvariant27_FailureMidCallLeavesNoPartialWrite(t *testing.T) {
	t.Parallel()

	t.Run("store failpoints", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		prior := e.remember(e.A, deploy("production", "main")).RelationshipID
		e.step()
		// One call that creates entities (release, canary, staging, hotfix and a project with a value),
		// fragments, observations, relationships, supports, transitions, an update of the prior (the
		// supersession), a review item (canary is held against the new current release) and the
		// idempotency record.
		req := mergeRequests(nextKey(),
			deploy("production", "release").since(date("2026-05-01")).request(""),
			ownerEmail("Dense-Mem", "ops@example.com"),
			deploy("staging", "hotfix").request(""),
			deploy("production", "canary").request(""))
		var before map[string]int
		var ledgers map[string]map[string]string
		e.snapshot(func(l ledgerView) { before, ledgers = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })
		for _, step := range []string{"writeset.after:entities", "writeset.after:fragments", "writeset.after:observations",
			"writeset.after:relationships", "writeset.after:updates", "writeset.after:supports", "writeset.after:transitions",
			"writeset.after:idempotency", "tx.before_commit"} {
			t.Run(step, func(t *testing.T) {
				pl, err := e.client.Remember(failpoint.Arm(e.ctx, step), e.A, req)
				if !errors.Is(err, failpoint.ErrInjected) {
					t.Fatalf("remember with %s armed: placement %+v, err %v; want ErrInjected", step, pl, err)
				}
				var after map[string]int
				var ledgersAfter map[string]map[string]string
				e.snapshot(func(l ledgerView) { after, ledgersAfter = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })
				if d := countsDiff(before, after); d != "" {
					t.Errorf("partial write: %s", d)
				}
				if bad := rowsKept(ledgers, ledgersAfter); len(bad) > 0 {
					t.Errorf("rows changed:\n%s", strings.Join(bad, "\n"))
				}
				if st, _, vt, v := e.relationshipState(prior); st != "active" || vt != nil || v != 1 {
					t.Errorf("prior: %s valid_to %v v%d, want active nil v1", st, vt, v)
				}
				if n := e.count("semantic_edges"); n != 1 {
					t.Errorf("semantic_edges = %d, want 1", n)
				}
			})
		}
		pl := e.rememberReq(e.A, req)
		if pl.Replayed {
			t.Fatal("the successful call replays a failed one")
		}
		var cats []densemem.Category
		for _, o := range pl.RelationshipOutcomes {
			cats = append(cats, o.Category)
		}
		if d := diff([]densemem.Category{densemem.CategorySupersededPrior, densemem.CategoryAccepted, densemem.CategoryAccepted,
			densemem.CategoryNeedsReview}, cats); d != "" {
			t.Errorf("categories (-want +got):\n%s", d)
		}
		after := e.counts()
		for _, table := range []string{"entities", "evidence_fragments", "observations", "relationships", "support_links",
			"relationship_transitions", "idempotency_records", "literal_values", "review_items"} {
			if after[table] <= before[table] {
				t.Errorf("%s did not grow on success (%d); the failpoint run did not exercise it", table, after[table])
			}
		}
	})

	t.Run("verifier failure", func(t *testing.T) {
		t.Parallel()
		v := &faultyVerifier{}
		e := newEnv(t, func(c *densemem.Config) { c.Verifier = v })
		prior := e.remember(e.A, deploy("production", "main")).RelationshipID
		before := e.counts()
		req := deploy("production", "release").since(date("2026-05-01")).request(nextKey())
		for _, mode := range []int32{1, 2} {
			v.mode.Store(mode)
			pl, err := e.client.Remember(e.ctx, e.A, req)
			if !errors.Is(err, densemem.ErrVerifier) {
				t.Fatalf("verifier mode %d: placement %+v, err %v; want ErrVerifier", mode, pl, err)
			}
			if d := countsDiff(before, e.counts()); d != "" {
				t.Errorf("verifier mode %d wrote: %s", mode, d)
			}
			if st, _, _, ver := e.relationshipState(prior); st != "active" || ver != 1 {
				t.Errorf("prior: %s v%d", st, ver)
			}
		}
		v.mode.Store(0)
		if out := only(t, e.rememberReq(e.A, req)); out.Category != densemem.CategorySupersededPrior {
			t.Errorf("after the verifier recovers: %+v", out)
		}
	})
}

// TestInvariant9_TraceReconstructsDecisionLineage: a client's decision is part of the lineage Trace
// reconstructs: the review item it resolved, with the decision's actor, action, reason, key, ingest
// and the before and after of every change, and the transitions it made, naming the decision.
func TestInvariant9_TraceReconstructsDecisionLineage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	req := resolveRequest(h.ingestID, h.held, densemem.ActionSupersedePrior)
	req.Decision = &densemem.ResolveDecision{Reason: "the user confirmed the switch"}
	res, err := e.client.Resolve(e.ctx, e.A, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []densemem.RelationshipID{h.held.RelationshipID, h.prior.RelationshipID} {
		tr := e.trace(e.admin, id)
		if first := tr.Transitions[0]; first.DecisionID != "" {
			t.Errorf("trace of %s: its creation names decision %s, want none", id, first.DecisionID)
		}
		var item *densemem.TraceReviewItem
		for i := range tr.ReviewItems {
			if tr.ReviewItems[i].ReviewID == h.held.Review.ReviewID {
				item = &tr.ReviewItems[i]
			}
		}
		if item == nil {
			t.Fatalf("trace of %s does not show the review item %s: %+v", id, h.held.Review.ReviewID, tr.ReviewItems)
		}
		want := &densemem.TraceDecision{DecisionID: res.DecisionID, ProfileID: e.A.ProfileID,
			Action: densemem.ActionSupersedePrior, Decision: req.Decision, Reason: req.Decision.Reason, Changes: res.Changes, IngestID: res.IngestID,
			IdempotencyKey: req.IdempotencyKey, CreatedAt: e.clock.Now()}
		if item.Status != densemem.ReviewItemStatusResolved || item.ResolvedAt == nil || !item.ResolvedAt.Equal(e.clock.Now()) {
			t.Errorf("trace of %s: item %s resolved at %v, want resolved now", id, item.Status, item.ResolvedAt)
		}
		if d := diff(want, item.Decision, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("trace of %s: the item's decision (-want +got):\n%s", id, d)
		}
		last := tr.Transitions[len(tr.Transitions)-1]
		if last.Reason != "decided:supersede_prior" || last.IngestID != res.IngestID || last.ActorProfileID != e.A.ProfileID ||
			last.IdempotencyKey != req.IdempotencyKey || last.DecisionID != res.DecisionID {
			t.Errorf("trace of %s: last transition %+v, want the decision's", id, last)
		}
	}
}

// TestInvariant10_AnotherProfileCannotDecideItsReviewItems: every Resolve action on another
// profile's review item is refused with ErrNotOwner and writes nothing; the owner's decision then
// still lands.
func TestInvariant10_AnotherProfileCannotDecideItsReviewItems(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	pendingPl := e.rememberOne(e.A, insufficientDeploy("staging", "main").request(nextKey()))
	pending := only(t, pendingPl)
	evidence := []densemem.EvidenceInput{{Content: "The staging environment deploys from the main branch.", SourceType: "manual"}}
	attempts := []densemem.ResolveRequest{
		resolveRequest(h.ingestID, h.held, densemem.ActionSupersedePrior),
		resolveRequest(h.ingestID, h.held, densemem.ActionKeepPriorRejectNew),
		resolveRequest(h.ingestID, h.held, densemem.ActionForget),
		resolveRequest(pendingPl.IngestID, pending, densemem.ActionReject),
		resolveRequest(pendingPl.IngestID, pending, densemem.ActionForget),
	}
	withEvidence := resolveRequest(pendingPl.IngestID, pending, densemem.ActionAddEvidence)
	withEvidence.Evidence = evidence
	attempts = append(attempts, withEvidence)
	before := e.allCounts()
	for _, req := range attempts {
		for _, p := range []densemem.Principal{e.B, e.C} {
			if _, err := e.client.Resolve(e.ctx, p, req); !errors.Is(err, densemem.ErrNotOwner) {
				t.Errorf("%s by another profile: %v, want ErrNotOwner", req.Action, err)
			}
		}
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("refused decisions wrote rows: %s", d)
	}
	if _, err := e.client.Resolve(e.ctx, e.A, withEvidence); err != nil {
		t.Errorf("the owner's add_evidence: %v", err)
	}
}

// TestInvariant3_EveryResolveDecisionRecordsActorTimeTargetsEvidenceAndIdempotency: every Resolve
// action appends one decision row naming its actor, time, item, action, evidence, idempotency key and
// ingest, and every relationship it changed with its before and after — the same changes its
// transitions record, under the same ingest and key.
func TestInvariant3_EveryResolveDecisionRecordsActorTimeTargetsEvidenceAndIdempotency(t *testing.T) {
	t.Parallel()
	for _, action := range everyResolveAction {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			req := e.decisionFor(action)
			item, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var reviewID string
			for _, it := range item.ReviewItems {
				if it.IngestID == req.IngestID && it.PlacementItemID == req.PlacementItemID {
					reviewID = it.ReviewID
				}
			}
			res, err := e.client.Resolve(e.ctx, e.A, req)
			if err != nil {
				t.Fatal(err)
			}
			var row struct {
				ProfileID      densemem.ProfileID            `json:"profile_id"`
				ReviewID       string                        `json:"review_id"`
				ItemIngestID   string                        `json:"item_ingest_id"`
				ItemID         string                        `json:"placement_item_id"`
				Action         string                        `json:"action"`
				FragmentIDs    []densemem.FragmentID         `json:"fragment_ids"`
				IngestID       string                        `json:"ingest_id"`
				IdempotencyKey string                        `json:"idempotency_key"`
				Changes        []densemem.RelationshipChange `json:"changes"`
				CreatedAt      time.Time                     `json:"created_at"`
			}
			if err := json.Unmarshal([]byte(e.ledger().decisionRows()[res.DecisionID]), &row); err != nil {
				t.Fatal(err)
			}
			want := row
			want.ProfileID, want.ReviewID, want.ItemIngestID, want.ItemID, want.Action = e.A.ProfileID, reviewID,
				req.IngestID, req.PlacementItemID, action
			want.FragmentIDs, want.IngestID, want.IdempotencyKey, want.Changes = res.FragmentIDs, res.IngestID, req.IdempotencyKey, res.Changes
			if d := diff(want, row, cmpopts.EquateEmpty()); d != "" || !row.CreatedAt.Equal(e.clock.Now()) {
				t.Errorf("decision row (-want +got):\n%s\ncreated at %v, want %v", d, row.CreatedAt, e.clock.Now())
			}
			// Each change is one transition of the decision's ingest and key, by A.
			for _, ch := range res.Changes {
				var found bool
				for _, tr := range e.trace(e.admin, ch.RelationshipID).Transitions {
					if tr.TransitionID == ch.TransitionID {
						found = true
						if tr.IngestID != res.IngestID || tr.IdempotencyKey != req.IdempotencyKey || tr.ActorProfileID != e.A.ProfileID ||
							tr.ToStatus != ch.After.Status || tr.ToVersion != ch.After.Version {
							t.Errorf("transition %+v does not match the decision's change %+v", tr, ch)
						}
					}
				}
				if !found {
					t.Errorf("change %+v has no transition in %s's trace", ch, ch.RelationshipID)
				}
			}
		})
	}
}

// TestInvariant5_ResolveWritesThroughPostgresPolicy: a decision's effect on current knowledge is the
// view over relationships (semantic_edges follows the statuses it sets), the decision ledger refuses
// edits, and a closed review item refuses to change again, whoever asks.
func TestInvariant5_ResolveWritesThroughPostgresPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	if e.ledger().Edges(h.held.RelationshipID) != 0 || e.ledger().Edges(h.prior.RelationshipID) != 1 {
		t.Fatalf("before the decision: the held statement must be no edge, the prior one")
	}
	res, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h.ingestID, h.held, densemem.ActionSupersedePrior))
	if err != nil {
		t.Fatal(err)
	}
	if e.ledger().Edges(h.held.RelationshipID) != 1 || e.ledger().Edges(h.prior.RelationshipID) != 0 {
		t.Errorf("after supersede_prior: edges %d (held) and %d (prior), want 1 and 0",
			e.ledger().Edges(h.held.RelationshipID), e.ledger().Edges(h.prior.RelationshipID))
	}
	for _, stmt := range []string{
		`UPDATE placement_decisions SET action = 'reject' WHERE decision_id = $1`,
		`DELETE FROM placement_decisions WHERE decision_id = $1`,
	} {
		if _, err := e.pool.Exec(e.ctx, stmt, res.DecisionID); err == nil {
			t.Errorf("%s: succeeded on the append-only decision ledger", stmt)
		}
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE review_items SET status = 'open', resolved_at = NULL WHERE review_id = $1`,
		h.held.Review.ReviewID); err == nil {
		t.Errorf("reopening a resolved review item succeeded")
	}
	if got := e.reviewItemStatus(e.A, h.held.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
		t.Errorf("review item is %s after the refused edits, want resolved", got)
	}
}

// TestInvariant10_AnotherProfileCannotTakeAnyDecision: every Resolve action, each on a review item
// that offers it, is refused for another profile with ErrNotOwner and writes nothing.
func TestInvariant10_AnotherProfileCannotTakeAnyDecision(t *testing.T) {
	t.Parallel()
	for _, action := range everyResolveAction {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			req := e.decisionFor(action)
			before := e.allCounts()
			for _, p := range []densemem.Principal{e.B, e.C} {
				if _, err := e.client.Resolve(e.ctx, p, req); !errors.Is(err, densemem.ErrNotOwner) {
					t.Errorf("%s by another profile: %v, want ErrNotOwner", action, err)
				}
			}
			if d := countsDiff(before, e.allCounts()); d != "" {
				t.Errorf("refused decisions wrote rows: %s", d)
			}
			if _, err := e.client.Resolve(e.ctx, e.A, req); err != nil {
				t.Errorf("the owner's %s: %v", action, err)
			}
		})
	}
}

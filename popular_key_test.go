package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/store/postgres"
)

// worksOnRequest is one Remember of "<person> works_on <project>" for every project, cited from one
// fragment naming them all.
func worksOnRequest(key, person string, projects ...string) densemem.RememberRequest {
	content := fmt.Sprintf("%s works on %s.", person, strings.Join(projects, ", "))
	req := densemem.RememberRequest{IdempotencyKey: key,
		Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{Entities: []densemem.ProposedEntity{{Ref: "s", Name: person, EntityKind: "person"}}}}
	for i, pr := range projects {
		ref := fmt.Sprintf("o%d", i)
		req.Proposal.Entities = append(req.Proposal.Entities, densemem.ProposedEntity{Ref: ref, Name: pr, EntityKind: "project"})
		req.Proposal.Relationships = append(req.Proposal.Relationships, densemem.ProposedRelationship{
			ProposalID: fmt.Sprintf("p%d", i), SubjectRef: "s", Predicate: "works_on", ObjectRef: ref,
			Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}})
	}
	return req
}

func projects(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("project-%03d", i))
	}
	return out
}

// popularStory builds a popular key and a long history — 60 live works_on relationships of procyon
// (A's and B's, some the same), one retracted, and 12 dated versions of production's branch, 11 of
// them superseded — then runs probes on those keys, and returns what each probe decided, with every
// ID replaced by its place in the story. whole reads the keys' closed history as before issue 21.
func popularStory(t *testing.T, whole bool) []string {
	e := newEnv(t)
	if whole {
		densemem.PlaceReadingWholeKeys(e.client)
	}
	ids := map[densemem.RelationshipID]string{}
	name := func(id densemem.RelationshipID) string {
		if id == "" {
			return "-"
		}
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("r%d", len(ids))
		}
		return ids[id]
	}
	var out []string
	record := func(step string, pl *densemem.Placement) {
		for _, o := range pl.RelationshipOutcomes {
			var rel, xs []string
			for _, r := range o.Related {
				rel = append(rel, name(r))
			}
			for _, x := range o.CrossReferences {
				xs = append(xs, x.Kind+">"+name(x.ToRelationshipID))
			}
			conflictStatus := ""
			if o.Conflict != nil {
				conflictStatus = o.Conflict.Status
			}
			out = append(out, fmt.Sprintf("%s %s: %s %s %s %s related %v xrefs %v case %q review %v", step, o.ProposalID,
				name(o.RelationshipID), o.Category, o.Status, o.Tier, rel, xs, conflictStatus, o.Review != nil))
		}
	}
	first := e.rememberReq(e.A, worksOnRequest(nextKey(), "procyon", projects(0, 40)...))
	record("A works_on 0-39", first)
	record("B works_on 30-59", e.rememberReq(e.B, worksOnRequest(nextKey(), "procyon", projects(30, 60)...)))
	if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: first.RelationshipOutcomes[7].RelationshipID,
		IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var versions []densemem.RelationshipID
	for i := range 12 {
		o := e.remember(e.A, deploy("production", fmt.Sprintf("branch-%02d", i)).since(day.AddDate(0, 0, 7*i)))
		versions = append(versions, o.RelationshipID)
		record(fmt.Sprintf("A version %d", i), &densemem.Placement{RelationshipOutcomes: []densemem.RelationshipOutcome{o}})
	}
	// The probes.
	record("A works_on 5 again, 7 again, 70", e.rememberReq(e.A, worksOnRequest(nextKey(), "procyon", "project-005", "project-007", "project-070")))
	record("B works_on 1", e.rememberReq(e.B, worksOnRequest(nextKey(), "procyon", "project-001")))
	record("C works_on 35", e.rememberReq(e.C, worksOnRequest(nextKey(), "procyon", "project-035")))
	record("A next version", e.rememberReq(e.A, deploy("production", "branch-12").since(day.AddDate(0, 0, 7*12)).request(nextKey())))
	record("A repeats version 3", e.rememberReq(e.A, deploy("production", "branch-03").since(day.AddDate(0, 0, 7*3)).request(nextKey())))
	record("C undated other branch", e.rememberReq(e.C, deploy("production", "hotfix").request(nextKey())))
	corr := deploy("production", "branch-13").request(nextKey())
	corr.Proposal.Relationships[0].CorrectsRelationshipID = versions[2] // closed: accepted, no effect
	record("A corrects a closed version", e.rememberReq(e.A, corr))
	bad := deploy("production", "branch-14").request(nextKey())
	bad.Proposal.Relationships[0].CorrectsRelationshipID = first.RelationshipOutcomes[0].RelationshipID // another key's
	_, err := e.client.Remember(e.ctx, e.A, bad)
	var ve *densemem.ValidationError
	out = append(out, fmt.Sprintf("A corrects another key's relationship: validation error %v", errors.As(err, &ve)))
	return out
}

// TestRememberOnPopularKeyDecidesAsWholeKey: Remembers on a key with many live relationships and on
// one with a closed history decide, relationship by relationship, exactly what they decided when
// every relationship of the key was locked and read.
func TestRememberOnPopularKeyDecidesAsWholeKey(t *testing.T) {
	t.Parallel()
	live, whole := popularStory(t, false), popularStory(t, true)
	if d := cmp.Diff(whole, live); d != "" {
		t.Errorf("live-only read decided otherwise (-whole key +live only):\n%s", d)
	}
	if !slices.ContainsFunc(live, func(s string) bool {
		return strings.HasPrefix(s, "A next version") && strings.Contains(s, "superseded_prior")
	}) {
		t.Errorf("the next version did not supersede the current one:\n%s", strings.Join(live, "\n"))
	}
}

// TestRememberDoesNotLockClosedRelationships: while another transaction holds a closed (superseded)
// relationship of a key FOR UPDATE, a Remember on that key — by its owner, superseding the current
// version, and by another profile — completes under a lock_timeout instead of waiting for it; so
// does a Remember on a key of cardinality many while another object's live relationship of it is
// held. Reading the whole key, as before issue 21, each fails on the lock.
func TestRememberDoesNotLockClosedRelationships(t *testing.T) {
	slow(t)
	t.Parallel()
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("whole=%v", whole), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			old := e.remember(e.A, deploy("production", "main").since(day))
			cur := e.remember(e.A, deploy("production", "release").since(day.AddDate(0, 1, 0)))
			other := e.rememberReq(e.A, worksOnRequest(nextKey(), "procyon", "project-a")).RelationshipOutcomes[0]
			if st, _, _, _ := e.relationshipState(old.RelationshipID); st != "superseded" || cur.Status != "active" {
				t.Fatalf("set-up: old %s, current %s; want superseded and active", st, cur.Status)
			}
			client := e.lockTimeoutClient()
			if whole {
				densemem.PlaceReadingWholeKeys(client)
			}
			holder, err := e.pool.Begin(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = holder.Rollback(context.WithoutCancel(e.ctx)) }()
			if _, err := holder.Exec(e.ctx, `SELECT 1 FROM relationships WHERE relationship_id = ANY($1) FOR UPDATE`,
				[]densemem.RelationshipID{old.RelationshipID, other.RelationshipID}); err != nil {
				t.Fatal(err)
			}
			_, errA := client.Remember(e.ctx, e.A, deploy("production", "hotfix").since(day.AddDate(0, 2, 0)).request(nextKey()))
			_, errB := client.Remember(e.ctx, e.B, deploy("production", "main").request(nextKey()))
			// A key of cardinality many is read for the statement's object only: another object's
			// relationship, live and locked, does not block it either.
			_, errC := client.Remember(e.ctx, e.A, worksOnRequest(nextKey(), "procyon", "project-b"))
			if whole {
				if errA == nil || errB == nil || errC == nil {
					t.Errorf("reading the whole key: Remembers returned %v, %v, %v; want each to fail on a held row", errA, errB, errC)
				}
				return
			}
			if errA != nil || errB != nil || errC != nil {
				t.Errorf("Remembers on keys whose closed, or other objects', relationships are locked: %v, %v, %v; want each placed",
					errA, errB, errC)
			}
		})
	}
}

// lockTimeoutClient returns a client of e's team whose transactions give up on a row lock after
// 300 ms; its pool closes when the test ends.
func (e *env) lockTimeoutClient() *densemem.Client {
	e.t.Helper()
	cfg := e.runtime.Config().Copy()
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "300ms"
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	client, err := densemem.New(postgres.New(pool, &postgres.Options{BindingKey: e.bindingKey}), &densemem.Config{Clock: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	return client
}

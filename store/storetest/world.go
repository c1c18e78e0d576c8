package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// t0 is the suite's fixed clock: every recorded time is t0 moved by some duration.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// runDate is t0's run date (midnight UTC, as NightlyReserveParams and CaseClaimDueParams want it).
var runDate = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// at returns the suite's clock moved by d.
func at(d time.Duration) time.Time { return t0.Add(d) }

func ptr[T any](v T) *T { return &v }

// The vocabulary of every world: people work on projects.
const (
	predWorksOn = "works_on"
	kindPerson  = "person"
	kindProject = "project"
	reviewTTL   = 7 * 24 * time.Hour
)

// world is one team built through the store: the team (policy version 1), two writer profiles a and
// b, the predicate works_on (version 1) and three entities, Ada (a person), Falcon and Osprey
// (projects). Its IDs come from a counter, so two worlds built alike in two teams have the same IDs.
type world struct {
	e    *env
	t    *testing.T
	team identity.TeamID
	// a and b are the team's writers; pred is works_on.
	a, b identity.ProfileID
	pred relationship.Predicate
	// ada, falcon and osprey are the world's entities.
	ada, falcon, osprey identity.EntityID
	mu                  sync.Mutex // guards n: the concurrency subtests build rows in goroutines
	n                   int
}

// world builds a world in team; its profile names and predicate description carry the team's ID, so a
// read of the wrong team shows.
func (e *env) world(team identity.TeamID) *world {
	e.t.Helper()
	w := &world{e: e, t: e.t, team: team, a: "pf_a", b: "pf_b"}
	w.must(e.s.TeamCreate(e.ctx, store.TeamCreateParams{Team: team, Name: "team " + string(team), CreatedAt: t0,
		Policy: store.Policy{ReviewTTL: reviewTTL, AutoWriteThreshold: 0.7, TimeZone: "UTC", CreatedBy: "host", CreatedAt: t0}}),
		"TeamCreate")
	for _, p := range []identity.ProfileID{w.a, w.b} {
		w.profile(p)
	}
	pred, err := e.s.PredicateAppend(e.ctx, store.PredicateAppendParams{Team: team, CreatedBy: "host", CreatedAt: t0,
		Predicate: relationship.Predicate{Key: predWorksOn, Kind: relationship.KindState, Cardinality: relationship.CardinalityOne,
			Aliases: []string{"works for"}, SubjectKinds: []string{kindPerson}, ObjectKinds: []string{kindProject},
			Description: "works on (" + string(team) + ")"}})
	w.must(err, "PredicateAppend")
	if pred.Version != 1 {
		w.t.Fatalf("storetest: the first version of %s in team %s is %d, want 1", predWorksOn, team, pred.Version)
	}
	w.pred = pred
	var ws store.WriteSet
	w.ada = w.entityRows(&ws, kindPerson, "Ada", t0)
	w.falcon = w.entityRows(&ws, kindProject, "Falcon", t0)
	w.osprey = w.entityRows(&ws, kindProject, "Osprey", t0)
	w.apply(ws)
	return w
}

// profile creates an active profile with the read and write scopes, named after it and the team.
func (w *world) profile(p identity.ProfileID) {
	w.t.Helper()
	w.must(w.e.s.ProfileCreate(w.e.ctx, store.ProfileCreateParams{Team: w.team, Profile: p, Name: string(p) + "@" + string(w.team),
		Scopes: []identity.Scope{identity.ScopeRead, identity.ScopeWrite}, CreatedAt: t0}), "ProfileCreate "+string(p))
}

// id returns the world's next ID with prefix.
func (w *world) id(prefix string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fmt.Sprintf("%s_%04d", prefix, w.n)
}

func (w *world) must(err error, what string) {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("storetest: %s (team %s): %v", what, w.team, err)
	}
}

// apply writes ws in one transaction of the world's team.
func (w *world) apply(ws store.WriteSet) {
	w.t.Helper()
	w.must(w.tryApply(ws), "write set")
}

// tryApply writes ws in one transaction of the world's team: KeysLock without keys names the team,
// then WriteSetApply.
func (w *world) tryApply(ws store.WriteSet) error {
	return applyOn(w.e.ctx, w.e.s, w.team, ws)
}

// applyOn writes ws through s in one transaction of team.
func applyOn(ctx context.Context, s store.Store, team identity.TeamID, ws store.WriteSet) error {
	return s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.KeysLock(ctx, store.KeysLockParams{Team: team}); err != nil {
			return err
		}
		return tx.WriteSetApply(ctx, ws)
	})
}

// lookup returns the lookup of a name of kind.
func lookup(kind, name string) store.NameLookup {
	norm := identity.NormalizeName(name)
	return store.NameLookup{Kind: kind, Normalized: norm, Skeleton: identity.Skeleton(norm)}
}

// entityRows adds a new entity of kind with its canonical name to ws and returns its ID.
func (w *world) entityRows(ws *store.WriteSet, kind, name string, when time.Time) identity.EntityID {
	id := identity.EntityID(w.id("ent"))
	ws.Entities = append(ws.Entities, store.EntityRow{Team: w.team, ID: id, Kind: kind, Context: map[string]string{},
		CreatedBy: w.a, IngestID: w.id("ing"), CreatedAt: when})
	ws.EntityNames = append(ws.EntityNames, w.nameRow(id, name, identity.NameCanonical, when))
	return id
}

func (w *world) nameRow(id identity.EntityID, name string, kind identity.NameKind, when time.Time) store.EntityNameRow {
	l := lookup("", name)
	return store.EntityNameRow{Team: w.team, EntityID: id, Name: name, Normalized: l.Normalized, Skeleton: l.Skeleton,
		Kind: kind, CreatedAt: when}
}

// relSpec describes a relationship the world writes: owner (default a) says subject (default Ada)
// works on object (default Falcon) in scope, recorded at when (default t0) with tier (default
// validated_claim), supported by one fragment of content.
type relSpec struct {
	owner           identity.ProfileID
	subject, object identity.EntityID
	scope           string
	when            time.Time
	tier            relationship.Tier
	from            *time.Time
	content         string
}

// relRows adds a new active relationship of sp to ws: its evidence (fragment, observation,
// verification event, support link), the relationship at version 1 and its first transition.
func (w *world) relRows(ws *store.WriteSet, sp relSpec) relationship.Relationship {
	if sp.owner == "" {
		sp.owner = w.a
	}
	if sp.subject == "" {
		sp.subject = w.ada
	}
	if sp.object == "" {
		sp.object = w.falcon
	}
	if sp.when.IsZero() {
		sp.when = t0
	}
	if sp.tier == "" {
		sp.tier = relationship.TierValidatedClaim
	}
	if sp.content == "" {
		sp.content = "Ada works on the project, says " + string(sp.owner) + "."
	}
	r := relationship.Relationship{ID: relationship.ID(w.id("rel")), Owner: sp.owner, Subject: sp.subject,
		PredicateKey: w.pred.Key, PredicateVersion: w.pred.Version, Object: relationship.Object{EntityID: sp.object},
		Polarity: relationship.PolarityPositive, Scope: sp.scope, Validity: relationship.Interval{From: sp.from},
		Status: relationship.StatusActive, Tier: sp.tier, Version: 1}
	ingest := w.id("ing")
	obs := w.evidenceRows(ws, r, sp.content, ingest, sp.when)
	ws.Relationships = append(ws.Relationships, store.RelationshipRow{Team: w.team, Relationship: r, ObservationID: obs,
		IngestID: ingest, CreatedAt: sp.when})
	ws.Transitions = append(ws.Transitions, store.TransitionRow{Team: w.team, ID: w.id("trn"), RelationshipID: r.ID,
		ToStatus: r.Status, ToTier: r.Tier, ToVersion: 1, Reason: "created", ActorKind: store.ActorProfile,
		ActorProfile: r.Owner, IngestID: ingest, CreatedAt: sp.when})
	return r
}

// rel writes a new relationship of sp in a transaction of its own.
func (w *world) rel(sp relSpec) relationship.Relationship {
	w.t.Helper()
	var ws store.WriteSet
	r := w.relRows(&ws, sp)
	w.apply(ws)
	return r
}

// evidenceRows adds to ws a fragment of content by r's owner, an observation of r, an entailing
// verification event and a support link of r citing the whole fragment; it returns the observation.
func (w *world) evidenceRows(ws *store.WriteSet, r relationship.Relationship, content, ingest string, when time.Time) string {
	frag := evidence.FragmentID(w.id("frg"))
	hash := evidence.ContentHash(content)
	group := "grp_" + string(frag)
	obs, ver := w.id("obs"), w.id("ver")
	ws.Fragments = append(ws.Fragments, store.FragmentRow{Team: w.team, ID: frag, IngestID: ingest, Author: r.Owner,
		SourceType: evidence.SourceManual, Authority: evidence.AuthorityStandard, SourceGroup: group, ContentHash: hash,
		Content: content, CreatedAt: when})
	ws.Observations = append(ws.Observations, store.ObservationRow{Team: w.team, ID: obs, IngestID: ingest, Profile: r.Owner,
		ProposalID: "p1", SubjectRef: "s", SubjectName: "Ada", PredicatePhrase: "works on", PredicateKey: r.PredicateKey,
		PredicateVersion: r.PredicateVersion, ObjectRef: "o", ObjectName: "the project", Polarity: r.Polarity,
		Modality: relationship.ModalityStatement, Scope: r.Scope, ValidFrom: r.Validity.From,
		Citations: json.RawMessage(fmt.Sprintf(`[{"evidence_index":0,"start":0,"end":%d}]`, len(content))), CreatedAt: when})
	ws.Verifications = append(ws.Verifications, store.VerificationRow{Team: w.team, ID: ver, ObservationID: obs,
		Verifier: "storetest", Verdict: evidence.VerdictEntailed, Confidence: 0.9, Rationale: "cited", SupportGranted: true,
		CreatedAt: when})
	ws.Supports = append(ws.Supports, store.SupportLinkRow{Team: w.team, ID: w.id("sup"), RelationshipID: r.ID,
		FragmentID: frag, ObservationID: obs, VerificationID: ver, Start: 0, End: len(content), SourceGroup: group,
		ContentHash: hash, Authority: evidence.AuthorityStandard, Author: r.Owner, Profile: r.Owner, IngestID: ingest,
		CreatedAt: when})
	return obs
}

// support writes one more piece of evidence of r, recorded at when, and returns its support link's ID.
func (w *world) support(r relationship.Relationship, content string, when time.Time) string {
	w.t.Helper()
	var ws store.WriteSet
	w.evidenceRows(&ws, r, content, w.id("ing"), when)
	w.apply(ws)
	return ws.Supports[0].ID
}

// changeRows adds to ws the change of r to status, tier and validTo at when: the version-fenced
// update and its transition. It returns r as it will be.
func (w *world) changeRows(ws *store.WriteSet, r relationship.Relationship, status relationship.Status,
	tier relationship.Tier, validTo *time.Time, when time.Time) relationship.Relationship {
	ws.Updates = append(ws.Updates, store.RelationshipUpdate{Team: w.team, ID: r.ID, ExpectVersion: r.Version,
		Status: status, Tier: tier, ValidTo: validTo, UpdatedAt: when})
	ws.Transitions = append(ws.Transitions, store.TransitionRow{Team: w.team, ID: w.id("trn"), RelationshipID: r.ID,
		FromStatus: r.Status, ToStatus: status, FromTier: r.Tier, ToTier: tier, FromValidTo: r.Validity.To, ToValidTo: validTo,
		FromVersion: r.Version, ToVersion: r.Version + 1, Reason: "changed", ActorKind: store.ActorProfile,
		ActorProfile: r.Owner, IngestID: w.id("ing"), CreatedAt: when})
	r.Status, r.Tier, r.Validity.To, r.Version = status, tier, validTo, r.Version+1
	return r
}

// change writes the change of r in a transaction of its own and returns r as it is now.
func (w *world) change(r relationship.Relationship, status relationship.Status, tier relationship.Tier,
	validTo *time.Time, when time.Time) relationship.Relationship {
	w.t.Helper()
	var ws store.WriteSet
	r = w.changeRows(&ws, r, status, tier, validTo, when)
	w.apply(ws)
	return r
}

// key returns the conflict key of works_on for subject in scope.
func (w *world) key(subject identity.EntityID, scope string) conflict.Key {
	return conflict.Key{Team: w.team, Subject: subject, PredicateKey: w.pred.Key, Scope: scope}
}

// caseRows adds to ws a new open case of key opened by b at when, due for review at next: one position
// per (object, polarity) of members, their membership from version 1 and the opening event.
func (w *world) caseRows(ws *store.WriteSet, key conflict.Key, members []relationship.Relationship, when, next time.Time) store.CaseRow {
	c := store.CaseRow{Team: w.team, ID: conflict.ID(w.id("cf")), Kind: conflict.KindCrossProfileCurrentState, Key: key,
		Status: conflict.StatusOpen, Version: 1, OpenedAt: when, ReviewDueAt: when.Add(reviewTTL), NextReviewAt: next,
		PolicyVersion: 1, OpenedBy: w.b, Positions: map[conflict.PositionKey]conflict.PositionID{}}
	ws.CaseInserts = append(ws.CaseInserts, c)
	for _, r := range members {
		pk := conflict.PositionKey{Object: r.Object, Polarity: r.Polarity}
		if _, ok := c.Positions[pk]; !ok {
			c.Positions[pk] = conflict.PositionID(w.id("pos"))
			ws.Positions = append(ws.Positions, store.PositionRow{Team: w.team, ID: c.Positions[pk], CaseID: c.ID, Key: pk,
				CreatedAt: when})
		}
		ws.MemberAdds = append(ws.MemberAdds, store.MemberRow{Team: w.team, CaseID: c.ID, Position: c.Positions[pk],
			Relationship: r.ID, Version: r.Version, Owner: r.Owner, AddedVersion: 1})
		c.Members = append(c.Members, conflict.MemberRef{Position: pk, Relationship: r.ID, Version: r.Version, Owner: r.Owner})
	}
	ws.CaseEvents = append(ws.CaseEvents, w.eventRow(c, "", store.ActorProfile, w.b, "opened", when))
	return c
}

// eventRow returns the event recording c at its current version and status, with its membership.
func (w *world) eventRow(c store.CaseRow, prior conflict.Status, actorKind string, actor identity.ProfileID, reason string,
	when time.Time) store.CaseEventRow {
	positions := []store.EventPosition{}
	referenced := map[relationship.ID]int{}
	for pk, id := range c.Positions {
		p := store.EventPosition{PositionID: id, Object: pk.Object, Polarity: pk.Polarity}
		for _, m := range c.Members {
			if m.Position == pk {
				p.Members = append(p.Members, store.EventMember{RelationshipID: m.Relationship, Version: m.Version, Owner: m.Owner})
				referenced[m.Relationship] = m.Version
			}
		}
		positions = append(positions, p)
	}
	slices.SortFunc(positions, func(a, b store.EventPosition) int { return cmp.Compare(a.PositionID, b.PositionID) })
	posJSON, err := json.Marshal(positions)
	w.must(err, "marshal event positions")
	refJSON, err := json.Marshal(referenced)
	w.must(err, "marshal event references")
	return store.CaseEventRow{Team: w.team, ID: w.id("cfe"), CaseID: c.ID, CaseVersion: c.Version, PriorStatus: prior,
		ResultingStatus: c.Status, ActorKind: actorKind, ActorProfile: actor, Reason: reason, PolicyVersion: c.PolicyVersion,
		Referenced: refJSON, Positions: posJSON, IngestID: w.id("ing"), CreatedAt: when}
}

// scene is a material disagreement: a says Ada works on Falcon, b says Osprey, in one scope, and the
// open case between them.
type scene struct {
	ra, rb relationship.Relationship
	key    conflict.Key
	cs     store.CaseRow
}

// disagreement writes a scene in scope, recorded at when, whose case is next reviewed at next.
func (w *world) disagreement(scope string, when, next time.Time) scene {
	w.t.Helper()
	var ws store.WriteSet
	sc := scene{key: w.key(w.ada, scope)}
	sc.ra = w.relRows(&ws, relSpec{owner: w.a, object: w.falcon, scope: scope, when: when, content: "Ada works on Falcon."})
	sc.rb = w.relRows(&ws, relSpec{owner: w.b, object: w.osprey, scope: scope, when: when, content: "Ada works on Osprey."})
	sc.cs = w.caseRows(&ws, sc.key, []relationship.Relationship{sc.ra, sc.rb}, when, next)
	w.apply(ws)
	return sc
}

// lockedCase reads case id under KeysLock (through s, in a transaction of the world's team), or nil.
func (w *world) lockedCase(s store.Store, key conflict.Key, id conflict.ID) *store.CaseRow {
	w.t.Helper()
	var out *store.CaseRow
	w.must(s.Tx(w.e.ctx, func(ctx context.Context, tx store.Tx) error {
		out = nil
		kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: w.team, Keys: []conflict.Key{key}, Cases: []conflict.ID{id}})
		for i := range kl.Cases {
			if kl.Cases[i].ID == id {
				out = &kl.Cases[i]
			}
		}
		return err
	}), "KeysLock of case "+string(id))
	return out
}

// listedCase returns case id as CaseList shows it among the team's cases of every status, or nil.
func (w *world) listedCase(id conflict.ID) *store.CaseListItem {
	w.t.Helper()
	page, err := w.e.s.CaseList(w.e.ctx, store.CaseListParams{Team: w.team, Limit: 100, Statuses: []conflict.Status{
		conflict.StatusOverdue, conflict.StatusOpen, conflict.StatusResolved, conflict.StatusDismissed}})
	w.must(err, "CaseList")
	for i := range page.Items {
		if page.Items[i].Case.ID == id {
			return &page.Items[i]
		}
	}
	return nil
}

// entityIDs returns the IDs of entities.
func entityIDs(es []identity.Entity) []identity.EntityID {
	out := make([]identity.EntityID, 0, len(es))
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// checkErr reports an error unless err is target.
func (e *env) checkErr(err, target error, what string) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Errorf("%s: err = %v, want %v", what, err, target)
	}
}

// must fails the subtest now when err is not nil.
func (e *env) must(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("storetest: %s: %v", what, err)
	}
}

package storetest

import (
	"errors"
	"slices"
	"time"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// A recall's search may load the principal it reads for in its own round trip
// (RecallSearchParams.Principal): it returns what PrincipalLoad returns, ErrNotFound for a profile
// the team does not have, and judges allowed authority by the policy in force.
var recallPrincipalContracts = []contract{
	{"LoadsThePrincipalAndItsPolicy", testRecallSearchLoadsPrincipal},
	{"AuthorityFromThePolicyInForce", testRecallSearchAuthorityFromPolicy},
}

// testRecallSearchLoadsPrincipal compares the principal a search loads with PrincipalLoad's, and
// asks for a profile the team does not have and for one of another team.
func testRecallSearchLoadsPrincipal(e *env) {
	t := e.t
	w := e.world(e.team("tm_rp"))
	other := e.world(e.team("tm_rq"))
	other.profile("pf_only_q")
	w.rel(relSpec{content: "Ada works on Falcon."})
	want, err := e.s.PrincipalLoad(e.ctx, store.PrincipalLoadParams{Team: w.team, Profile: w.b})
	w.must(err, "PrincipalLoad")
	params := store.RecallSearchParams{Team: w.team, Query: "Ada", Names: []string{"ada"}, At: at(time.Hour), PerBranch: 10,
		Principal: &store.PrincipalLoadParams{Team: w.team, Profile: w.b}}
	rs, err := e.s.RecallSearch(e.ctx, params)
	w.must(err, "RecallSearch with a principal")
	if !principalsEqual(rs.Principal, want) {
		t.Errorf("RecallSearch loaded %+v, PrincipalLoad %+v", rs.Principal, want)
	}
	if len(rs.FullText) == 0 || len(rs.EntityName) == 0 {
		t.Errorf("RecallSearch with a principal found %d full-text and %d entity-name candidates, want some of each",
			len(rs.FullText), len(rs.EntityName))
	}
	for _, p := range []identity.ProfileID{"pf_nobody", "pf_only_q"} {
		params.Principal = &store.PrincipalLoadParams{Team: w.team, Profile: p}
		if _, err := e.s.RecallSearch(e.ctx, params); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RecallSearch for profile %s of no such team member: err %v, want ErrNotFound", p, err)
		}
	}
	params.Principal = &store.PrincipalLoadParams{Team: w.team, Profile: w.a}
	params.Authoritative = []identity.ProfileID{w.a}
	if _, err := e.s.RecallSearch(e.ctx, params); !errors.Is(err, store.ErrMisconfigured) {
		t.Errorf("RecallSearch with both Principal and Authoritative: err %v, want ErrMisconfigured", err)
	}
}

// testRecallSearchAuthorityFromPolicy labels one relationship's evidence authoritative by a, then
// recalls with a principal before and after the policy makes a authoritative.
func testRecallSearchAuthorityFromPolicy(e *env) {
	t := e.t
	w := e.world(e.team("tm_ra"))
	var ws store.WriteSet
	r := w.relRows(&ws, relSpec{content: "Ada works on Falcon, per the charter."})
	ws.Fragments[0].Authority, ws.Supports[0].Authority = evidence.AuthorityAuthoritative, evidence.AuthorityAuthoritative
	w.apply(ws)
	authority := func() bool {
		rs, err := e.s.RecallSearch(e.ctx, store.RecallSearchParams{Team: w.team, Query: "charter", At: at(time.Hour),
			PerBranch: 10, Principal: &store.PrincipalLoadParams{Team: w.team, Profile: w.b}})
		w.must(err, "RecallSearch")
		i := slices.IndexFunc(rs.FullText, func(c store.RankedRelationship) bool { return c.ID == r.ID })
		if i < 0 {
			t.Fatalf("RecallSearch of %q did not find %s: %+v", "charter", r.ID, rs.FullText)
		}
		return rs.FullText[i].Authority
	}
	if authority() {
		t.Errorf("%s has allowed authority under a policy with no authoritative profile", r.ID)
	}
	pol, err := e.s.PolicyGet(e.ctx, w.team)
	w.must(err, "PolicyGet")
	next := pol
	next.AuthoritativeProfiles, next.CreatedAt = []identity.ProfileID{w.a}, at(time.Minute)
	_, err = e.s.PolicyAppend(e.ctx, store.PolicyAppendParams{Policy: next, ExpectVersion: pol.Version})
	w.must(err, "PolicyAppend")
	if !authority() {
		t.Errorf("%s has no allowed authority once the policy in force makes its author authoritative", r.ID)
	}
}

// principalsEqual compares two loaded principals field by field.
func principalsEqual(a, b store.Principal) bool {
	return a.Profile.Team == b.Profile.Team && a.Profile.ID == b.Profile.ID && a.Profile.Name == b.Profile.Name &&
		a.Profile.Status == b.Profile.Status && slices.Equal(a.Profile.Scopes, b.Profile.Scopes) &&
		a.Policy.Version == b.Policy.Version && a.Policy.ReviewTTL == b.Policy.ReviewTTL &&
		slices.Equal(a.Policy.AuthoritativeProfiles, b.Policy.AuthoritativeProfiles) && a.Policy.TimeZone == b.Policy.TimeZone
}

package densemem_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// smallLimits are the small limits of the env's second client, so limit cases stay small.
var smallLimits = densemem.Limits{MaxEvidence: 2, MaxContentBytes: 64, MaxEntities: 3, MaxRelationships: 2,
	MaxCitations: 2, MaxTextBytes: 32}

// snowmanFact is a base fact whose content holds a three-byte UTF-8 character; its byte offset is
// snowmanAt.
var (
	snowmanFact = fact{subject: "production", subjectKind: "environment", predicate: "deploys_from", object: "main",
		objectKind: "git_branch", content: "The production environment deploys from the main branch ☃."}
	snowmanAt = strings.Index(snowmanFact.content, "☃")
)

// malformedRemember is one malformed Remember: a valid base request with one mutation, and the error it must get.
type malformedRemember struct {
	name string
	// base builds the valid starting request from a fresh idempotency key; nil means deploy("production", "main").
	base func(key string) densemem.RememberRequest
	// mutate breaks the request.
	mutate func(r *densemem.RememberRequest)
	// small selects the client with smallLimits.
	small bool
	// as is the caller; nil means env.A.
	as func() densemem.Principal
	// paths must all be problems of the returned *densemem.ValidationError.
	paths []string
	// is, when set, is the sentinel the error must match instead of a ValidationError.
	is error
}

// firstRelationship returns the first relationship of r.
func firstRelationship(r *densemem.RememberRequest) *densemem.ProposedRelationship {
	return &r.Proposal.Relationships[0]
}

// firstCitation returns the first citation of the first relationship of r.
func firstCitation(r *densemem.RememberRequest) *densemem.Citation {
	return &r.Proposal.Relationships[0].Evidence[0]
}

// addSecondEvidenceItem adds a second evidence item cited by the first relationship.
func addSecondEvidenceItem(r *densemem.RememberRequest) {
	r.Evidence = append(r.Evidence, densemem.EvidenceInput{Content: "The main branch is protected.", SourceType: "document"})
	firstRelationship(r).Evidence = append(firstRelationship(r).Evidence, densemem.Citation{EvidenceIndex: 1, Start: 4, End: 8})
}

// literalValueRequest returns a base whose one relationship is "atlas owner_email <value>", a literal
// object of type typ.
func literalValueRequest(typ densemem.ValueType, value string) func(string) densemem.RememberRequest {
	return func(key string) densemem.RememberRequest {
		content := "Project atlas has owner email ops@example.com and value " + value + "."
		return densemem.RememberRequest{
			IdempotencyKey: key,
			Evidence:       []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
			Proposal: densemem.Proposal{
				Entities: []densemem.ProposedEntity{{Ref: "s", Name: "atlas", EntityKind: "project"}},
				Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "s", Predicate: "owner_email",
					ObjectValue: &densemem.ObjectValue{Type: typ, Value: value},
					Evidence:    []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}},
			},
		}
	}
}

func TestRememberRejectsBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	small, err := densemem.New(e.store, &densemem.Config{Clock: e.clock.Now, Limits: smallLimits})
	if err != nil {
		t.Fatal(err)
	}

	// Knowledge the known_entity_id cases point at: a production environment of team 1 and one of team 2.
	pl, err := e.client.Remember(e.ctx, e.A, deploy("production", "main").request(nextKey()))
	if err != nil {
		t.Fatal(err)
	}
	ownEnv := pl.Entities[0].EntityID
	team2 := e.mustTeam("globex")
	e.registerVocabulary(e.profileIn(team2, "admin2", "read", "vocabulary"))
	writer2 := e.profileIn(team2, "W2", "read", "write")
	pl2, err := e.client.Remember(e.ctx, writer2, deploy("staging", "develop").request(nextKey()))
	if err != nil {
		t.Fatal(err)
	}
	otherEnv := pl2.Entities[0].EntityID
	if ownEnv == "" || otherEnv == "" {
		t.Fatalf("setup did not create entities: %+v %+v", pl.Entities, pl2.Entities)
	}

	disabled := e.mustProfile("D", "read", "write")
	if err := e.client.DisableProfile(e.ctx, e.team, disabled.ProfileID); err != nil {
		t.Fatal(err)
	}
	readOnly := e.mustProfile("R", "read")
	principal := func(p densemem.Principal) func() densemem.Principal { return func() densemem.Principal { return p } }

	const (
		r0  = "proposal.relationships[0]"
		c0  = r0 + ".evidence[0]"
		ev0 = "evidence[0]"
		en0 = "proposal.entities[0]"
	)
	contentLen := len(deploy("production", "main").content)
	day := func(s string) *time.Time { d := date(s); return &d }

	cases := []malformedRemember{
		// Spans are byte ranges [start, end) of the cited item.
		{name: "span start negative", mutate: func(r *densemem.RememberRequest) { firstCitation(r).Start = -1 }, paths: []string{c0 + ".start"}},
		{name: "span start equals end", mutate: func(r *densemem.RememberRequest) { firstCitation(r).Start, firstCitation(r).End = 5, 5 }, paths: []string{c0 + ".end"}},
		{name: "span start after end", mutate: func(r *densemem.RememberRequest) { firstCitation(r).Start, firstCitation(r).End = 9, 4 }, paths: []string{c0 + ".end"}},
		{name: "span end one past content", mutate: func(r *densemem.RememberRequest) { firstCitation(r).End = contentLen + 1 }, paths: []string{c0 + ".end"}},
		{name: "span end one past the bytes of multi-byte content", base: snowmanFact.request,
			mutate: func(r *densemem.RememberRequest) { firstCitation(r).End = len(snowmanFact.content) + 1 }, paths: []string{c0 + ".end"}},
		{name: "span end splits a multi-byte character", base: snowmanFact.request,
			mutate: func(r *densemem.RememberRequest) { firstCitation(r).End = snowmanAt + 1 }, paths: []string{c0 + ".end"}},
		{name: "span start splits a multi-byte character", base: snowmanFact.request,
			mutate: func(r *densemem.RememberRequest) { firstCitation(r).Start = snowmanAt + 2 }, paths: []string{c0 + ".start"}},
		{name: "evidence_index out of range", mutate: func(r *densemem.RememberRequest) { firstCitation(r).EvidenceIndex = 1 },
			paths: []string{c0 + ".evidence_index", ev0}},
		{name: "evidence_index negative", mutate: func(r *densemem.RememberRequest) { firstCitation(r).EvidenceIndex = -1 },
			paths: []string{c0 + ".evidence_index", ev0}},

		// Evidence content.
		{name: "NUL byte in content", mutate: func(r *densemem.RememberRequest) { r.Evidence[0].Content = "The production\x00 environment" },
			paths: []string{ev0 + ".content"}},
		{name: "invalid UTF-8 in content", mutate: func(r *densemem.RememberRequest) { r.Evidence[0].Content = "The production \xff\xfe environment" },
			paths: []string{ev0 + ".content"}},
		{name: "empty content", mutate: func(r *densemem.RememberRequest) { r.Evidence[0].Content = "" }, paths: []string{ev0 + ".content"}},
		{name: "content over a configured limit", small: true, mutate: func(r *densemem.RememberRequest) {
			r.Evidence[0].Content += strings.Repeat(" ", smallLimits.MaxContentBytes+1-contentLen)
			firstCitation(r).End = smallLimits.MaxContentBytes + 1
		}, paths: []string{ev0 + ".content"}},
		{name: "content over the default 32 KiB", mutate: func(r *densemem.RememberRequest) {
			r.Evidence[0].Content += strings.Repeat("x", densemem.DefaultMaxContentBytes+1-contentLen)
		}, paths: []string{ev0 + ".content"}},
		{name: "unknown source_type", mutate: func(r *densemem.RememberRequest) { r.Evidence[0].SourceType = "email" },
			paths: []string{ev0 + ".source_type"}},
		{name: "missing source_type", mutate: func(r *densemem.RememberRequest) { r.Evidence[0].SourceType = "" },
			paths: []string{ev0 + ".source_type"}},
		{name: "unknown authority", mutate: func(r *densemem.RememberRequest) { r.Evidence[0].Authority = "official" },
			paths: []string{ev0 + ".authority"}},
		{name: "source_revision without source_key", mutate: func(r *densemem.RememberRequest) { r.Evidence[0].SourceRevision = "v2" },
			paths: []string{ev0 + ".source_revision"}},

		// Entities.
		{name: "invalid UTF-8 in name", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[0].Name = "produc\xc3tion" },
			paths: []string{en0 + ".name"}},
		{name: "NUL byte in name", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[0].Name = "prod\x00" },
			paths: []string{en0 + ".name"}},
		{name: "blank name", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[0].Name = " \t" }, paths: []string{en0 + ".name"}},
		{name: "name over a configured limit", small: true, mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Entities[0].Name = strings.Repeat("p", smallLimits.MaxTextBytes+1)
		}, paths: []string{en0 + ".name"}},
		{name: "NUL byte in alias", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[0].Aliases = []string{"prod", "pr\x00d"} },
			paths: []string{en0 + ".aliases[1]"}},
		{name: "entity_kind capitalised", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[0].EntityKind = "Environment" },
			paths: []string{en0 + ".entity_kind"}},
		{name: "entity_kind with a space", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[1].EntityKind = "has space" },
			paths: []string{"proposal.entities[1].entity_kind"}},
		{name: "entity_kind empty", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[0].EntityKind = "" },
			paths: []string{en0 + ".entity_kind"}},
		{name: "duplicate entity ref", mutate: func(r *densemem.RememberRequest) { r.Proposal.Entities[1].Ref = "s" },
			paths: []string{"proposal.entities[1].ref"}},
		{name: "identity_context keys that fold to one", mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Entities[0].IdentityContext = map[string]string{"Region": "eu", "region": "us"}
		}, paths: []string{en0 + ".identity_context.region"}},
		{name: "identity_context key with a NUL byte", mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Entities[0].IdentityContext = map[string]string{"re\x00gion": "eu"}
		}, paths: []string{en0 + ".identity_context"}},
		{name: "too many entities", small: true, mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Entities = append(r.Proposal.Entities,
				densemem.ProposedEntity{Ref: "x", Name: "x", EntityKind: "thing"}, densemem.ProposedEntity{Ref: "y", Name: "y", EntityKind: "thing"})
		}, paths: []string{"proposal.entities"}},

		// Relationships.
		{name: "invalid UTF-8 in predicate", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Predicate = "deploys\xe2\x82from" },
			paths: []string{r0 + ".predicate"}},
		{name: "missing predicate", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Predicate = "" }, paths: []string{r0 + ".predicate"}},
		{name: "unknown polarity", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Polarity = "positive" }, paths: []string{r0 + ".polarity"}},
		{name: "unknown modality", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Modality = "rumour" }, paths: []string{r0 + ".modality"}},
		{name: "modality not spelled exactly", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Modality = "Statement" },
			paths: []string{r0 + ".modality"}},
		{name: "invalid UTF-8 in scope", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Scope = "eu\xff" }, paths: []string{r0 + ".scope"}},
		{name: "subject_ref dangling", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).SubjectRef = "nobody" },
			paths: []string{r0 + ".subject_ref"}},
		{name: "object_ref dangling", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).ObjectRef = "nothing" },
			paths: []string{r0 + ".object_ref"}},
		{name: "both object_ref and object_value", mutate: func(r *densemem.RememberRequest) {
			firstRelationship(r).ObjectValue = &densemem.ObjectValue{Type: densemem.ValueString, Value: "main"}
		}, paths: []string{r0}},
		{name: "neither object_ref nor object_value", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).ObjectRef = "" }, paths: []string{r0}},
		{name: "unknown object_value type", base: literalValueRequest("integer", "42"),
			paths: []string{r0 + ".object_value"}},
		{name: "bad number value", base: literalValueRequest(densemem.ValueNumber, "12abc"),
			paths: []string{r0 + ".object_value"}},
		{name: "number value not finite", base: literalValueRequest(densemem.ValueNumber, "NaN"),
			paths: []string{r0 + ".object_value"}},
		{name: "number value overflows", base: literalValueRequest(densemem.ValueNumber, "1e400"),
			paths: []string{r0 + ".object_value"}},
		{name: "bad date value", base: literalValueRequest(densemem.ValueDate, "2026-02-30"),
			paths: []string{r0 + ".object_value"}},
		{name: "date value in another layout", base: literalValueRequest(densemem.ValueDate, "01/06/2026"),
			paths: []string{r0 + ".object_value"}},
		{name: "bad date_time value", base: literalValueRequest(densemem.ValueDateTime, "2026-06-01 09:00"),
			paths: []string{r0 + ".object_value"}},
		{name: "bad boolean value", base: literalValueRequest(densemem.ValueBoolean, "yes"),
			paths: []string{r0 + ".object_value"}},
		{name: "blank string value", base: literalValueRequest(densemem.ValueString, "ops@example.com"),
			mutate: func(r *densemem.RememberRequest) { firstRelationship(r).ObjectValue.Value = "  " }, paths: []string{r0 + ".object_value"}},
		{name: "valid_to before valid_from", mutate: func(r *densemem.RememberRequest) {
			firstRelationship(r).ValidFrom, firstRelationship(r).ValidTo = day("2026-05-01"), day("2026-04-01")
		}, paths: []string{r0 + ".valid_to"}},
		{name: "valid_to equal to valid_from", mutate: func(r *densemem.RememberRequest) {
			firstRelationship(r).ValidFrom, firstRelationship(r).ValidTo = day("2026-05-01"), day("2026-05-01")
		}, paths: []string{r0 + ".valid_to"}},
		{name: "valid_to after valid_from by less than the stored microsecond", mutate: func(r *densemem.RememberRequest) {
			from := date("2026-05-01").Add(100 * time.Nanosecond)
			to := from.Add(200 * time.Nanosecond)
			firstRelationship(r).ValidFrom, firstRelationship(r).ValidTo = &from, &to
		}, paths: []string{r0 + ".valid_to"}},
		{name: "valid_from past year 9999", mutate: func(r *densemem.RememberRequest) {
			firstRelationship(r).ValidFrom = new(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
		}, paths: []string{r0 + ".valid_from"}},
		{name: "valid_to before year 0001 in UTC", mutate: func(r *densemem.RememberRequest) {
			firstRelationship(r).ValidTo = new(time.Date(1, 1, 1, 0, 30, 0, 0, time.FixedZone("+01", 3600)))
		}, paths: []string{r0 + ".valid_to"}},
		{name: "date_time value past year 9999 in UTC", base: literalValueRequest(densemem.ValueDateTime, "9999-12-31T23:00:00-02:00"),
			paths: []string{r0 + ".object_value"}},
		{name: "duplicate proposal_id", mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Relationships = append(r.Proposal.Relationships, *firstRelationship(r))
		}, paths: []string{"proposal.relationships[1].proposal_id"}},
		{name: "missing proposal_id", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).ProposalID = "" }, paths: []string{r0 + ".proposal_id"}},
		{name: "relationship with no citations", mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Evidence = nil },
			paths: []string{r0 + ".evidence", ev0}},
		{name: "too many citations", small: true, mutate: func(r *densemem.RememberRequest) {
			firstRelationship(r).Evidence = append(firstRelationship(r).Evidence, densemem.Citation{Start: 0, End: 3}, densemem.Citation{Start: 4, End: 14})
		}, paths: []string{r0 + ".evidence"}},
		{name: "no relationships", mutate: func(r *densemem.RememberRequest) { r.Proposal.Relationships = nil },
			paths: []string{"proposal.relationships", ev0}},
		{name: "too many relationships", small: true, mutate: func(r *densemem.RememberRequest) {
			for _, id := range []string{"p2", "p3"} {
				x := *firstRelationship(r)
				x.ProposalID = id
				r.Proposal.Relationships = append(r.Proposal.Relationships, x)
			}
		}, paths: []string{"proposal.relationships"}},

		// Evidence list.
		{name: "no evidence", mutate: func(r *densemem.RememberRequest) { r.Evidence = nil },
			paths: []string{"evidence", c0 + ".evidence_index"}},
		{name: "uncited evidence item", mutate: func(r *densemem.RememberRequest) {
			r.Evidence = append(r.Evidence, densemem.EvidenceInput{Content: "An unrelated note.", SourceType: "manual"})
		}, paths: []string{"evidence[1]"}},
		{name: "too many evidence items", small: true, mutate: func(r *densemem.RememberRequest) {
			addSecondEvidenceItem(r)
			r.Evidence = append(r.Evidence, densemem.EvidenceInput{Content: "A third note.", SourceType: "manual"})
			x := *firstRelationship(r)
			x.ProposalID, x.Evidence = "p2", []densemem.Citation{{EvidenceIndex: 2, Start: 0, End: 7}}
			r.Proposal.Relationships = append(r.Proposal.Relationships, x)
		}, paths: []string{"evidence"}},
		{name: "missing idempotency key", mutate: func(r *densemem.RememberRequest) { r.IdempotencyKey = "" }, paths: []string{"idempotency_key"}},
		{name: "blank idempotency key", mutate: func(r *densemem.RememberRequest) { r.IdempotencyKey = "   " }, paths: []string{"idempotency_key"}},

		// Checks that need the database: known_entity_id must be an entity of the caller's team and kind.
		{name: "known_entity_id of another team", mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Entities[0].KnownEntityID = otherEnv
		}, paths: []string{en0 + ".known_entity_id"}},
		{name: "known_entity_id that does not exist", mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Entities[1].KnownEntityID = "en_doesnotexist"
		}, paths: []string{"proposal.entities[1].known_entity_id"}},
		{name: "known_entity_id of the wrong kind", mutate: func(r *densemem.RememberRequest) {
			r.Proposal.Entities[1].KnownEntityID = ownEnv // an environment named as the git_branch
		}, paths: []string{"proposal.entities[1].known_entity_id"}},

		// Authorisation: a valid request from a caller that may not write.
		{name: "disabled profile", as: principal(disabled), is: densemem.ErrForbidden},
		{name: "profile without write scope", as: principal(readOnly), is: densemem.ErrForbidden},
		{name: "profile of another team", as: principal(densemem.Principal{TeamID: e.team, ProfileID: writer2.ProfileID}),
			is: densemem.ErrForbidden},
		{name: "nonexistent team", as: principal(densemem.Principal{TeamID: "tm_doesnotexist", ProfileID: e.A.ProfileID}),
			is: densemem.ErrForbidden},
		{name: "nonexistent profile", as: principal(densemem.Principal{TeamID: e.team, ProfileID: "pf_doesnotexist"}),
			is: densemem.ErrForbidden},
		{name: "team id with a NUL byte", as: principal(densemem.Principal{TeamID: e.team + "\x00", ProfileID: e.A.ProfileID}),
			is: densemem.ErrForbidden},
		{name: "profile id with invalid UTF-8", as: principal(densemem.Principal{TeamID: e.team, ProfileID: "pf_\xff"}),
			is: densemem.ErrForbidden},
		{name: "empty principal", as: principal(densemem.Principal{}), is: densemem.ErrForbidden},
		// Validation comes before authorisation.
		{name: "invalid request from a disabled profile", as: principal(disabled),
			mutate: func(r *densemem.RememberRequest) { firstRelationship(r).Polarity = "?" }, paths: []string{r0 + ".polarity"}},

		// Every problem of a request is listed, not only the first.
		{name: "several problems at once", mutate: func(r *densemem.RememberRequest) {
			r.IdempotencyKey = ""
			r.Evidence[0].SourceType = "fax"
			r.Evidence = append(r.Evidence, densemem.EvidenceInput{Content: "bad \x00", SourceType: "manual"})
			r.Proposal.Entities[1].EntityKind = "Git Branch"
			r.Proposal.Entities = append(r.Proposal.Entities, densemem.ProposedEntity{Ref: "s", Name: "again", EntityKind: "environment"})
			firstRelationship(r).Polarity = "±"
			firstRelationship(r).Evidence = append(firstRelationship(r).Evidence, densemem.Citation{EvidenceIndex: 0, Start: 3, End: 2},
				densemem.Citation{EvidenceIndex: 7, Start: 0, End: 1})
			r.Proposal.Relationships = append(r.Proposal.Relationships, densemem.ProposedRelationship{ProposalID: "p1",
				SubjectRef: "ghost", Predicate: "works on", ObjectRef: "s", Evidence: []densemem.Citation{{Start: -2, End: 1}}})
		}, paths: []string{
			"idempotency_key",
			"evidence[0].source_type",
			"evidence[1].content",
			"evidence[1]",
			"proposal.entities[1].entity_kind",
			"proposal.entities[2].ref",
			r0 + ".polarity",
			r0 + ".evidence[1].end",
			r0 + ".evidence[2].evidence_index",
			"proposal.relationships[1].proposal_id",
			"proposal.relationships[1].subject_ref",
			"proposal.relationships[1].evidence[0].start",
		}},
	}
	if len(cases) < 35 {
		t.Fatalf("only %d cases", len(cases))
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			build := tc.base
			if build == nil {
				build = deploy("production", "main").request
			}
			req := build(nextKey())
			if tc.mutate != nil {
				tc.mutate(&req)
			}
			client, as := e.client, e.A
			if tc.small {
				client = small
			}
			if tc.as != nil {
				as = tc.as()
			}
			before := e.counts()
			pl, err := client.Remember(e.ctx, as, req)
			if d := countsDiff(before, e.counts()); d != "" {
				t.Errorf("row counts changed: %s", d)
			}
			if err == nil {
				t.Fatalf("Remember accepted the request: %+v", pl)
			}
			if tc.is != nil {
				if !errors.Is(err, tc.is) {
					t.Fatalf("err = %v (%T), want %v", err, err, tc.is)
				}
				return
			}
			var ve *densemem.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v (%T), want *densemem.ValidationError", err, err)
			}
			for _, p := range tc.paths {
				if !ve.Has(p) {
					t.Errorf("no problem at %s in %v", p, ve)
				}
			}
			for _, p := range ve.Problems {
				if p.Path == "" || p.Message == "" {
					t.Errorf("problem without path or message: %+v", p)
				}
			}
		})
	}

	// The unmutated bases are valid: every rejection above is the mutation's doing.
	t.Run("bases are accepted", func(t *testing.T) {
		for _, req := range []densemem.RememberRequest{
			deploy("production", "main").request(nextKey()),
			snowmanFact.request(nextKey()),
			literalValueRequest(densemem.ValueNumber, "42")(nextKey()),
			literalValueRequest(densemem.ValueDate, "2026-02-28")(nextKey()),
		} {
			if _, err := e.client.Remember(e.ctx, e.A, req); err != nil {
				t.Errorf("base %q: %v", req.Evidence[0].Content, err)
			}
		}
		req := deploy("production", "main").request(nextKey())
		req.Proposal.Entities[0].KnownEntityID = ownEnv
		if _, err := small.Remember(e.ctx, e.A, req); err != nil {
			t.Errorf("base with known_entity_id on the small client: %v", err)
		}
	})
}

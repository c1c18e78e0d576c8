package densemem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/placement"
	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// fuzzSeeds are valid and invalid JSON requests.
var fuzzSeeds = []string{
	// Valid: one entity relationship.
	`{"idempotency_key":"k1","evidence":[{"content":"The production environment deploys from the main branch.","source_type":"manual"}],
	  "proposal":{"entities":[{"ref":"s","name":"production","entity_kind":"environment"},{"ref":"o","name":"main","entity_kind":"git_branch"}],
	  "relationships":[{"proposal_id":"p1","subject_ref":"s","predicate":"deploys_from","object_ref":"o","evidence":[{"evidence_index":0,"start":0,"end":56}]}]}}`,
	// Valid: literal values, every optional field, two items, multi-byte content.
	`{"idempotency_key":"k2","evidence":[{"content":"Atlas ☃ owner ops@example.com since 2026-05-01.","source_type":"document","authority":"authoritative","source_group":"wiki","source_key":"page-1","source_revision":"3"},{"content":"Größe: 42","source_type":"web"}],
	  "proposal":{"entities":[{"ref":"a","name":"Atlas","entity_kind":"project","aliases":["atlas project"],"identity_context":{"org":"acme"}}],
	  "relationships":[{"proposal_id":"p1","subject_ref":"a","predicate":"owner email","object_value":{"type":"string","value":"ops@example.com"},"polarity":"+","modality":"statement","scope":"EU","valid_from":"2026-05-01T00:00:00Z","valid_to":"2026-06-01T00:00:00Z","evidence":[{"evidence_index":0,"start":0,"end":9}]},
	  {"proposal_id":"p2","subject_ref":"a","predicate":"size","object_value":{"type":"number","value":"42"},"polarity":"-","modality":"plan","evidence":[{"evidence_index":1,"start":0,"end":7},{"evidence_index":0,"start":10,"end":15}]},
	  {"proposal_id":"p3","subject_ref":"a","predicate":"since","object_value":{"type":"date","value":"2026-05-01"},"evidence":[{"evidence_index":0,"start":38,"end":48}]},
	  {"proposal_id":"p4","subject_ref":"a","predicate":"at","object_value":{"type":"date_time","value":"2026-05-01T09:00:00+02:00"},"evidence":[{"evidence_index":1,"start":9,"end":11}]},
	  {"proposal_id":"p5","subject_ref":"a","predicate":"live","object_value":{"type":"boolean","value":"true"},"evidence":[{"evidence_index":1,"start":0,"end":1}]}]}}`,
	// Invalid: span splits the snowman, end past the end, negative start.
	`{"idempotency_key":"k3","evidence":[{"content":"a☃b","source_type":"manual"}],
	  "proposal":{"entities":[{"ref":"s","name":"a","entity_kind":"x"}],
	  "relationships":[{"proposal_id":"p1","subject_ref":"s","predicate":"p","object_ref":"s","evidence":[{"evidence_index":0,"start":0,"end":2},{"evidence_index":0,"start":2,"end":9},{"evidence_index":0,"start":-1,"end":1}]}]}}`,
	// Invalid: enums, refs, kinds, dates.
	`{"idempotency_key":" ","evidence":[{"content":"x\u0000y","source_type":"email","authority":"boss","source_revision":"2"}],
	  "proposal":{"entities":[{"ref":"s","name":"","entity_kind":"Has Space"},{"ref":"s","name":"n","entity_kind":"k"}],
	  "relationships":[{"proposal_id":"p","subject_ref":"z","predicate":"","object_ref":"q","object_value":{"type":"int","value":"1"},"polarity":"~","modality":"maybe","valid_from":"2026-05-01T00:00:00Z","valid_to":"2026-04-01T00:00:00Z","evidence":[]},
	  {"proposal_id":"p","subject_ref":"s","predicate":"q","evidence":[{"evidence_index":5,"start":0,"end":1}]}]}}`,
	// Invalid: bad literal values.
	`{"idempotency_key":"k5","evidence":[{"content":"v","source_type":"manual"}],"proposal":{"entities":[{"ref":"s","name":"s","entity_kind":"k"}],
	  "relationships":[{"proposal_id":"a","subject_ref":"s","predicate":"p","object_value":{"type":"number","value":"NaN"},"evidence":[{"evidence_index":0,"start":0,"end":1}]},
	  {"proposal_id":"b","subject_ref":"s","predicate":"p","object_value":{"type":"date","value":"2026-02-30"},"evidence":[{"evidence_index":0,"start":0,"end":1}]},
	  {"proposal_id":"c","subject_ref":"s","predicate":"p","object_value":{"type":"date_time","value":"yesterday"},"evidence":[{"evidence_index":0,"start":0,"end":1}]},
	  {"proposal_id":"d","subject_ref":"s","predicate":"p","object_value":{"type":"boolean","value":"yes"},"evidence":[{"evidence_index":0,"start":0,"end":1}]}]}}`,
	// Valid: an adopted fragment beside new content; its span is checked against the fragment's
	// content after the read (fuzzAdopted), here only that it is non-empty.
	`{"idempotency_key":"k6","evidence":[{"adopt_fragment_id":"frg_b"},{"content":"The production environment deploys from release.","source_type":"manual"}],
	  "proposal":{"entities":[{"ref":"s","name":"production","entity_kind":"environment"},{"ref":"o","name":"release","entity_kind":"git_branch"}],
	  "relationships":[{"proposal_id":"p1","subject_ref":"s","predicate":"deploys_from","object_ref":"o","evidence":[{"evidence_index":0,"start":0,"end":9},{"evidence_index":0,"start":4,"end":20},{"evidence_index":1,"start":0,"end":4}]}]}}`,
	// Invalid: an adoption with the fields the fragment brings itself, a blank ID, an empty span.
	`{"idempotency_key":"k7","evidence":[{"adopt_fragment_id":"frg_b","content":"x","source_type":"manual","authority":"standard","source_group":"g","source_key":"k","source_revision":"1"},{"adopt_fragment_id":" "}],
	  "proposal":{"entities":[{"ref":"s","name":"s","entity_kind":"k"}],
	  "relationships":[{"proposal_id":"p1","subject_ref":"s","predicate":"p","object_ref":"s","evidence":[{"evidence_index":0,"start":3,"end":3},{"evidence_index":1,"start":-1,"end":2}]}]}}`,
	// Invalid: empty.
	`{}`,
	`{"evidence":null,"proposal":{"entities":null,"relationships":null}}`,
	`{"evidence":[{}],"proposal":{"relationships":[{}]}}`,
}

func FuzzRememberRequestValidate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	// Raw seeds for the raw-bytes request: two offset bytes, then content.
	f.Add([]byte("\x08\x03a☃b"))
	f.Add([]byte("\x09\x05\xe2\x98\x83\xff\x00x"))
	limits := (&Config{}).withDefaults().Limits
	f.Fuzz(func(t *testing.T, data []byte) {
		var req RememberRequest
		if json.Unmarshal(data, &req) == nil {
			checkValidation(t, &req, limits)
		}
		// encoding/json replaces invalid UTF-8, so also validate a request built from the raw bytes.
		raw := rawRequest(data)
		checkValidation(t, &raw, limits)
	})
}

// fuzzAdopted is the content of every fragment a fuzzed request adopts.
const fuzzAdopted = "Since 2026-05-01 production ☃ deploys from the release branch."

// rawRequest builds a request whose content, name and predicate are data[2:] byte for byte and whose one
// citation spans [data[0]-8, data[1]).
func rawRequest(data []byte) RememberRequest {
	start, end := -8, 0
	if len(data) > 0 {
		start += int(data[0])
	}
	if len(data) > 1 {
		end = int(data[1])
	}
	text := ""
	if len(data) > 2 {
		text = string(data[2:])
	}
	return RememberRequest{IdempotencyKey: "k", Evidence: []EvidenceInput{{Content: text, SourceType: "manual"}},
		Proposal: Proposal{
			Entities: []ProposedEntity{{Ref: "s", Name: text, EntityKind: "thing"}},
			Relationships: []ProposedRelationship{{ProposalID: "p", SubjectRef: "s", Predicate: text,
				ObjectValue: &ObjectValue{Type: ValueString, Value: text}, Evidence: []Citation{{Start: start, End: end}}}},
		}}
}

// checkValidation validates req and checks what the result promises: a *ValidationError whose every
// problem has a path, or a request the rest of Remember can use without a panic.
func checkValidation(t *testing.T, req *RememberRequest, l Limits) {
	t.Helper()
	err := validateRemember(req, l)
	if err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("error %v is a %T, not a *ValidationError", err, err)
		}
		if len(ve.Problems) == 0 {
			t.Fatal("ValidationError without problems")
		}
		for _, p := range ve.Problems {
			if p.Path == "" || p.Message == "" {
				t.Fatalf("problem without path or message: %+v", p)
			}
		}
		return
	}
	for _, msg := range validRequestViolations(req, l) {
		t.Error(msg)
	}
	if t.Failed() {
		b, _ := json.Marshal(req)
		t.Fatalf("validateRemember accepted %s", b)
	}
	// The pure steps after validation, in Remember's order, must cope with any accepted request.
	normalizeTimes(req)
	in := placement.NewIntake(req, "prof_fuzz")
	// Every adopted fragment exists, with content of its own (multi-byte, so spans can split it).
	var adoptable []store.FragmentRow
	for _, id := range in.Adopt {
		adoptable = append(adoptable, store.FragmentRow{ID: id, Content: fuzzAdopted})
	}
	if err := in.CheckAdopted(adoptable); err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) == 0 {
			t.Fatalf("CheckAdopted: %v is not a *ValidationError with problems", err)
		}
		return
	}
	// Every phrase names a registered predicate, so every statement becomes a claim.
	var preds []relationship.Predicate
	for _, r := range req.Proposal.Relationships {
		preds = append(preds, relationship.Predicate{Key: relationship.NormalizePhrase(r.Predicate)})
	}
	claims := in.Claims(preds, nil, nil)
	results, _ := evidence.SpanVerifier{}.Verify(context.Background(), evidence.VerifyRequest{Claims: claims})
	if err := evidence.CheckResults(evidence.VerifyRequest{Claims: claims}, results); err != nil {
		t.Fatalf("SpanVerifier answered out of contract: %v", err)
	}
	_ = requestHash(placement.Operation, req)
}

// validRequestViolations lists how an accepted request breaks the promises of validation (§5 step 1).
func validRequestViolations(req *RememberRequest, l Limits) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	text := func(path, s string, required bool) {
		switch {
		case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
			bad("%s: %q is not UTF-8 without NUL", path, s)
		case required && strings.TrimSpace(s) == "":
			bad("%s: blank", path)
		case len(s) > l.MaxTextBytes:
			bad("%s: %d bytes", path, len(s))
		}
	}
	text("idempotency_key", req.IdempotencyKey, true)
	if n := len(req.Evidence); n < 1 || n > l.MaxEvidence {
		bad("evidence: %d items", n)
	}
	for i, ev := range req.Evidence {
		if ev.AdoptFragmentID != "" {
			text("adopt_fragment_id", string(ev.AdoptFragmentID), true)
			if ev.Content != "" || ev.SourceType != "" || ev.Authority != "" || ev.SourceGroup != "" || ev.SourceKey != "" ||
				ev.SourceRevision != "" {
				bad("evidence[%d]: adopts %q and brings fields of its own", i, ev.AdoptFragmentID)
			}
			continue
		}
		if n := len(ev.Content); n < 1 || n > l.MaxContentBytes || !utf8.ValidString(ev.Content) || strings.ContainsRune(ev.Content, 0) {
			bad("evidence[%d].content: %q", i, ev.Content)
		}
		if !ev.SourceType.Valid() || (ev.Authority != "" && !ev.Authority.Valid()) {
			bad("evidence[%d]: source_type %q authority %q", i, ev.SourceType, ev.Authority)
		}
		if ev.SourceRevision != "" && ev.SourceKey == "" {
			bad("evidence[%d]: source_revision without source_key", i)
		}
		text("source_group", ev.SourceGroup, false)
		text("source_key", ev.SourceKey, false)
		text("source_revision", ev.SourceRevision, false)
	}
	refs := map[string]bool{}
	names := 0
	if n := len(req.Proposal.Entities); n > l.MaxEntities {
		bad("proposal.entities: %d items", n)
	}
	for i, e := range req.Proposal.Entities {
		if refs[e.Ref] {
			bad("proposal.entities[%d]: duplicate ref %q", i, e.Ref)
		}
		refs[e.Ref] = true
		text("ref", e.Ref, true)
		text("name", e.Name, true)
		if identity.NormalizeName(e.Name) == "" {
			bad("proposal.entities[%d].name %q folds to nothing", i, e.Name)
		}
		if !kindPattern.MatchString(e.EntityKind) {
			bad("proposal.entities[%d].entity_kind %q", i, e.EntityKind)
		}
		for _, a := range e.Aliases {
			text("alias", a, true)
			if why := identity.NameProblem(a); why != "" {
				bad("proposal.entities[%d] alias %q: %s", i, a, why)
			}
		}
		if why := identity.NameProblem(e.Name); why != "" {
			bad("proposal.entities[%d].name %q: %s", i, e.Name, why)
		}
		if n := len(e.Aliases); n > l.MaxAliasesPerEntity {
			bad("proposal.entities[%d]: %d aliases", i, n)
		}
		if e.KnownEntityID == "" {
			names += 1 + len(e.Aliases)
		}
		folded := map[string]bool{}
		for k, v := range e.IdentityContext {
			text("identity_context key", k, true)
			text("identity_context value", v, false)
			if fk := identity.NormalizeName(k); folded[fk] {
				bad("proposal.entities[%d].identity_context: two keys fold to %q", i, fk)
			}
			folded[identity.NormalizeName(k)] = true
		}
		if n := len(e.IdentityContext); n > 20 {
			bad("proposal.entities[%d].identity_context: %d keys", i, n)
		}
		text("known_entity_id", string(e.KnownEntityID), false)
	}
	if names > l.MaxNames {
		bad("proposal.entities: %d names", names)
	}
	if n := len(req.Proposal.Relationships); n < 1 || n > l.MaxRelationships {
		bad("proposal.relationships: %d items", n)
	}
	cited := make([]bool, len(req.Evidence))
	ids := map[string]bool{}
	for i, r := range req.Proposal.Relationships {
		p := fmt.Sprintf("proposal.relationships[%d]", i)
		if ids[r.ProposalID] {
			bad("%s: duplicate proposal_id %q", p, r.ProposalID)
		}
		ids[r.ProposalID] = true
		text("proposal_id", r.ProposalID, true)
		text("predicate", r.Predicate, true)
		text("scope", r.Scope, false)
		if !refs[r.SubjectRef] {
			bad("%s: subject_ref %q does not resolve", p, r.SubjectRef)
		}
		if (r.ObjectRef == "") == (r.ObjectValue == nil) {
			bad("%s: object_ref %q and object_value %v", p, r.ObjectRef, r.ObjectValue)
		}
		if r.ObjectRef != "" && !refs[r.ObjectRef] {
			bad("%s: object_ref %q does not resolve", p, r.ObjectRef)
		}
		if r.ObjectValue != nil {
			canon, err := request.CanonicalValue(*r.ObjectValue, DefaultMaxTextBytes)
			if err != nil {
				bad("%s.object_value: %v", p, err)
			} else if again, err := request.CanonicalValue(ObjectValue{Type: r.ObjectValue.Type, Value: canon}, DefaultMaxTextBytes); err != nil || again != canon {
				bad("%s.object_value: canonical %q is not a fixed point: %q, %v", p, canon, again, err)
			}
		}
		if (r.Polarity != "" && !r.Polarity.Valid()) || (r.Modality != "" && !r.Modality.Valid()) {
			bad("%s: polarity %q modality %q", p, r.Polarity, r.Modality)
		}
		for _, v := range []*time.Time{r.ValidFrom, r.ValidTo} {
			if v != nil && (v.UTC().Year() < 1 || v.UTC().Year() > 9999) {
				bad("%s: time %v outside years 0001..9999", p, v)
			}
		}
		if r.ValidFrom != nil && r.ValidTo != nil && !storedTime(*r.ValidFrom).Before(storedTime(*r.ValidTo)) {
			bad("%s: valid_to %v not after valid_from %v at microsecond precision", p, r.ValidTo, r.ValidFrom)
		}
		if n := len(r.Evidence); n < 1 || n > l.MaxCitations {
			bad("%s.evidence: %d citations", p, n)
		}
		for j, c := range r.Evidence {
			if c.EvidenceIndex < 0 || c.EvidenceIndex >= len(req.Evidence) {
				bad("%s.evidence[%d]: evidence_index %d", p, j, c.EvidenceIndex)
				continue
			}
			cited[c.EvidenceIndex] = true
			if req.Evidence[c.EvidenceIndex].AdoptFragmentID != "" {
				if !(0 <= c.Start && c.Start < c.End) {
					bad("%s.evidence[%d]: span [%d,%d) of an adopted fragment", p, j, c.Start, c.End)
				}
				continue
			}
			content := req.Evidence[c.EvidenceIndex].Content
			if !(0 <= c.Start && c.Start < c.End && c.End <= len(content)) {
				bad("%s.evidence[%d]: span [%d,%d) of %d bytes", p, j, c.Start, c.End, len(content))
				continue
			}
			if s := content[c.Start:c.End]; !utf8.ValidString(s) || !utf8.RuneStart(content[c.Start]) ||
				(c.End < len(content) && !utf8.RuneStart(content[c.End])) {
				bad("%s.evidence[%d]: span [%d,%d) is not on character boundaries of %q", p, j, c.Start, c.End, content)
			}
		}
	}
	for i, ok := range cited {
		if !ok {
			bad("evidence[%d] is not cited", i)
		}
	}
	return out
}

// TestValidateRememberReportsEveryProblem checks that validation lists each independent problem of a
// request at its own path, not only the first one found.
func TestValidateRememberReportsEveryProblem(t *testing.T) {
	t.Parallel()
	limits := (&Config{}).withDefaults().Limits
	base := func() RememberRequest {
		var req RememberRequest
		if err := json.Unmarshal([]byte(fuzzSeeds[0]), &req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	for i, seed := range fuzzSeeds[:2] {
		var req RememberRequest
		if err := json.Unmarshal([]byte(seed), &req); err != nil {
			t.Fatal(err)
		}
		if err := validateRemember(&req, limits); err != nil {
			t.Fatalf("valid seed %d: %v", i, err)
		}
	}
	from, to := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		mutate func(*RememberRequest)
		paths  []string
	}{
		{"one per field across the request", func(r *RememberRequest) {
			r.IdempotencyKey = ""
			r.Evidence[0].SourceType, r.Evidence[0].Authority = "fax", "boss"
			r.Evidence = append(r.Evidence, EvidenceInput{Content: "\xff", SourceType: "manual", SourceRevision: "2"})
			r.Proposal.Entities[0].EntityKind = "Environment"
			r.Proposal.Entities[1].Name = ""
			r.Proposal.Entities[1].Aliases = []string{"ok", " "}
			rel := &r.Proposal.Relationships[0]
			rel.Predicate, rel.Polarity, rel.Modality, rel.ValidFrom, rel.ValidTo = "", "?", "rumour", &from, &to
			rel.ObjectRef = "nowhere"
			rel.Evidence = append(rel.Evidence, Citation{EvidenceIndex: 0, Start: 4, End: 4}, Citation{EvidenceIndex: 3})
			r.Proposal.Relationships = append(r.Proposal.Relationships, ProposedRelationship{ProposalID: "p1",
				SubjectRef: "ghost", Predicate: "p", ObjectValue: &ObjectValue{Type: ValueDate, Value: "tomorrow"}})
		}, []string{
			"idempotency_key",
			"evidence[0].source_type",
			"evidence[0].authority",
			"evidence[1].content",
			"evidence[1].source_revision",
			"evidence[1]",
			"proposal.entities[0].entity_kind",
			"proposal.entities[1].name",
			"proposal.entities[1].aliases[1]",
			"proposal.relationships[0].predicate",
			"proposal.relationships[0].object_ref",
			"proposal.relationships[0].polarity",
			"proposal.relationships[0].modality",
			"proposal.relationships[0].valid_to",
			"proposal.relationships[0].evidence[1].end",
			"proposal.relationships[0].evidence[2].evidence_index",
			"proposal.relationships[1].proposal_id",
			"proposal.relationships[1].subject_ref",
			"proposal.relationships[1].object_value",
			"proposal.relationships[1].evidence",
		}},
		// start and end are separate fields: a negative start must not hide an end past the content.
		{"negative start and end past the content", func(r *RememberRequest) {
			r.Proposal.Relationships[0].Evidence[0] = Citation{EvidenceIndex: 0, Start: -1, End: 999}
		}, []string{"proposal.relationships[0].evidence[0].start", "proposal.relationships[0].evidence[0].end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base()
			tc.mutate(&req)
			err := validateRemember(&req, limits)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			for _, p := range tc.paths {
				if !ve.Has(p) {
					t.Errorf("no problem at %s", p)
				}
			}
			if t.Failed() {
				t.Logf("problems: %v", ve)
			}
		})
	}
}

// TestValidateCanonicalValueIsAFixedPoint checks that the canonical text of an accepted literal is
// itself an accepted literal of the same type with the same canonical text: it is what Remember stores
// and what Trace hands back.
func TestValidateCanonicalValueIsAFixedPoint(t *testing.T) {
	t.Parallel()
	const (
		accept = iota
		reject
		either
	)
	for _, tc := range []struct {
		v    ObjectValue
		want int
	}{
		{ObjectValue{Type: ValueString, Value: "  ops@example.com "}, accept},
		{ObjectValue{Type: ValueString, Value: " \t "}, reject},
		{ObjectValue{Type: ValueNumber, Value: "042.50"}, accept},
		{ObjectValue{Type: ValueNumber, Value: "1e21"}, accept},
		{ObjectValue{Type: ValueNumber, Value: "-0"}, accept},
		{ObjectValue{Type: ValueNumber, Value: "0x1p-2"}, either},
		{ObjectValue{Type: ValueNumber, Value: "1e400"}, reject},
		{ObjectValue{Type: ValueBoolean, Value: "T"}, accept},
		{ObjectValue{Type: ValueDate, Value: "0000-01-01"}, either},
		{ObjectValue{Type: ValueDate, Value: "9999-12-31"}, accept},
		{ObjectValue{Type: ValueDateTime, Value: "2026-05-01T09:00:00.500+02:00"}, accept},
		{ObjectValue{Type: ValueDateTime, Value: "2026-05-01T09:00:00.123456789Z"}, accept},
		// Their UTC instants fall in years 10000 and -1, which RFC 3339 cannot write.
		{ObjectValue{Type: ValueDateTime, Value: "9999-12-31T23:00:00-02:00"}, reject},
		{ObjectValue{Type: ValueDateTime, Value: "0000-01-01T00:30:00+01:00"}, reject},
	} {
		v := tc.v
		canon, err := request.CanonicalValue(v, DefaultMaxTextBytes)
		switch {
		case err != nil && tc.want == accept:
			t.Errorf("%s %q: %v", v.Type, v.Value, err)
		case err == nil && tc.want == reject:
			t.Errorf("%s %q: accepted as %q", v.Type, v.Value, canon)
		case err == nil:
			again, err := request.CanonicalValue(ObjectValue{Type: v.Type, Value: canon}, DefaultMaxTextBytes)
			if err != nil || again != canon {
				t.Errorf("%s %q: canonical %q is not a fixed point: %q, %v", v.Type, v.Value, canon, again, err)
			}
		}
	}
}

// traceFuzzSeeds are JSON Trace requests, valid and not.
var traceFuzzSeeds = []string{
	`{"relationship_id":"rel_1"}`,
	`{"relationship_id":"rel_1","limit":500,"include_verification":true,"include_transitions":true,"max_depth":4,"max_edges":100}`,
	`{"relationship_id":"rel_1","limit":-1,"max_depth":5,"max_edges":-1}`,
	`{"relationship_id":"","limit":501,"after":{"evidence":"!!","nope":"x","conflicts..events":"","transitions":"e30"}}`,
	`{"relationship_id":"rel_1","after":{"conflicts.cf_1.events":"eyJsIjoiY29uZmxpY3RzLmNmXzEuZXZlbnRzIiwidiI6M30"}}`,
	`{"relationship_id":"rel_1","after":{"evidence":"eyJsIjoiZXZpZGVuY2UiLCJ0IjoxLCJpZHMiOlsibyIsInYiLCJzIl19"}}`,
	`{"relationship_id":"rel_1","after":{"conflicts":"eyJsIjoiY29uZmxpY3RzIiwidCI6LTk5OTk5OTk5OTk5OTk5OTk5OTksImlkcyI6WyJ4Il19"}}`,
}

// FuzzTraceRequestValidate checks that validating any Trace request either returns a
// *ValidationError whose problems all have a path, or a page size within bounds and a page start
// for every After entry, which encodes back to the cursor it came from.
func FuzzTraceRequestValidate(f *testing.F) {
	for _, s := range traceFuzzSeeds {
		f.Add([]byte(s))
	}
	limits := (&Config{}).withDefaults().Limits
	f.Fuzz(func(t *testing.T, data []byte) {
		var req TraceRequest
		if json.Unmarshal(data, &req) != nil {
			return
		}
		limit, after, err := validateTrace(&req, limits)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %v is not a *ValidationError with problems", err)
			}
			for _, p := range ve.Problems {
				if p.Path == "" || p.Message == "" {
					t.Fatalf("problem without path or message: %+v", p)
				}
			}
			return
		}
		if limit < 1 || limit > limits.MaxTraceItems {
			t.Fatalf("accepted limit %d (request %d)", limit, req.Limit)
		}
		for list, cursor := range req.After {
			var key *store.TraceKey
			version := 0
			switch list {
			case TraceListEvidence:
				key = after.Supports
			case TraceListObservations:
				key = after.Observations
			case TraceListVerifications:
				key = after.Verifications
			case TraceListIdentityResolutions:
				key = after.Resolutions
			case TraceListReviewItems:
				key = after.ReviewItems
			case TraceListCrossReferences:
				key = after.CrossReferences
			case TraceListConflicts:
				key = after.Cases
			case TraceListTransitions:
				version = after.Transitions
			default:
				id, ok := strings.CutPrefix(list, "conflicts.")
				id, ok2 := strings.CutSuffix(id, ".events")
				if !ok || !ok2 {
					t.Fatalf("accepted list %q", list)
				}
				version = after.CaseEvents[conflict.ID(id)]
			}
			again := traceCursor{List: list, Version: version}
			if key != nil {
				again.At, again.IDs = key.At, key.IDs
			} else if version < 1 {
				t.Fatalf("accepted %s without a page start", list)
			}
			if c, err := decodeTraceCursor(list, again.encode(), limits); err != nil || !c.At.Equal(again.At) ||
				!slices.Equal(c.IDs, again.IDs) || c.Version != again.Version {
				t.Fatalf("%s: cursor %q re-encodes to one that decodes to %+v, %v", list, cursor, c, err)
			}
		}
	})
}

// TestTraceCursorRoundTrip checks that a cursor Trace issues for each list is accepted by the next
// request as the same page start.
func TestTraceCursorRoundTrip(t *testing.T) {
	t.Parallel()
	limits := (&Config{}).withDefaults().Limits
	at := time.Date(2026, 6, 1, 9, 0, 0, 123456000, time.UTC)
	for _, tc := range []struct {
		list string
		c    traceCursor
	}{
		{TraceListEvidence, traceCursor{At: at, IDs: []string{"obs_1", "ver_1", "sup_1"}}},
		{TraceListObservations, traceCursor{At: at, IDs: []string{"obs_1"}}},
		{TraceListVerifications, traceCursor{At: at, IDs: []string{"obs_1", "ver_1"}}},
		{TraceListIdentityResolutions, traceCursor{At: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), IDs: []string{"res_☃"}}},
		{TraceListReviewItems, traceCursor{At: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), IDs: []string{"rev_1"}}},
		{TraceListCrossReferences, traceCursor{At: time.Unix(0, 0).UTC(), IDs: []string{"x"}}},
		{TraceListConflicts, traceCursor{At: at, IDs: []string{"cf_1"}}},
		{TraceListTransitions, traceCursor{Version: 7}},
		{TraceConflictEventsList("cf_1"), traceCursor{Version: 2}},
	} {
		c := tc.c
		c.List = tc.list
		req := TraceRequest{RelationshipID: "rel_1", IncludeVerification: true, IncludeTransitions: true,
			After: map[string]string{tc.list: c.encode()}}
		_, after, err := validateTrace(&req, limits)
		if err != nil {
			t.Errorf("%s: %v", tc.list, err)
			continue
		}
		want := store.TraceAfter{}
		key := &store.TraceKey{At: c.At, IDs: c.IDs}
		switch tc.list {
		case TraceListEvidence:
			want.Supports = key
		case TraceListObservations:
			want.Observations = key
		case TraceListVerifications:
			want.Verifications = key
		case TraceListIdentityResolutions:
			want.Resolutions = key
		case TraceListReviewItems:
			want.ReviewItems = key
		case TraceListCrossReferences:
			want.CrossReferences = key
		case TraceListConflicts:
			want.Cases = key
		case TraceListTransitions:
			want.Transitions = 7
		default:
			want.CaseEvents = map[conflict.ID]int{"cf_1": 2}
		}
		if diff := cmp.Diff(want, after); diff != "" {
			t.Errorf("%s page start (-want +got):\n%s", tc.list, diff)
		}
	}
}

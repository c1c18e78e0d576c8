package evidence_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/evidence"
)

// Compile-time check: SpanVerifier is a Verifier.
var _ evidence.Verifier = evidence.SpanVerifier{}

func cited(texts ...string) []evidence.CitedText {
	out := make([]evidence.CitedText, len(texts))
	for i, s := range texts {
		out[i] = evidence.CitedText{EvidenceIndex: i, Start: 0, End: len(s), Text: s}
	}
	return out
}

func day(s string) *time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// verdict is the part of a Result these tests compare; rationales are for humans.
type verdict struct {
	ProposalID         string
	Verdict            evidence.Verdict
	Confidence         float64
	ConfirmedValidFrom *time.Time
}

func verdictOf(r evidence.Result) verdict {
	return verdict{r.ProposalID, r.Verdict, r.Confidence, r.ConfirmedValidFrom}
}

func entailed(id string) verdict {
	return verdict{ProposalID: id, Verdict: evidence.VerdictEntailed, Confidence: 1}
}

func insufficient(id string) verdict {
	return verdict{ProposalID: id, Verdict: evidence.VerdictInsufficient}
}

func confirmed(id, date string) verdict {
	v := entailed(id)
	v.ConfirmedValidFrom = day(date)
	return v
}

func TestSpanVerifierName(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff("span_verifier", evidence.SpanVerifier{}.Name()); diff != "" {
		t.Errorf("Name (-want +got):\n%s", diff)
	}
}

func TestSpanVerifier(t *testing.T) {
	t.Parallel()
	claim := func(subject, object, text string) evidence.Claim {
		return evidence.Claim{ProposalID: "p", SubjectNames: []string{subject}, PredicatePhrase: "deploys_from",
			ObjectNames: []string{object}, Cited: cited(text)}
	}
	negated := func(c evidence.Claim) evidence.Claim { c.Negated = true; return c }
	since := func(c evidence.Claim, d string) evidence.Claim { c.ValidFrom = day(d); return c }

	tests := []struct {
		name  string
		claim evidence.Claim
		want  verdict
	}{
		// Subject and object.
		{"subject and object present", claim("production", "release", "Production deploys from release."), entailed("p")},
		{"case-insensitive", claim("PRODUCTION", "Release", "production DEPLOYS FROM RELEASE"), entailed("p")},
		{"names trimmed", claim("  production ", "\trelease\n", "production deploys from release"), entailed("p")},
		{"subject missing", claim("staging", "release", "Production deploys from release."), insufficient("p")},
		{"object missing", claim("production", "main", "Production deploys from release."), insufficient("p")},
		{"both missing", claim("staging", "main", "Production deploys from release."), insufficient("p")},
		{"no cited text", claim("production", "release", ""), insufficient("p")},
		{"empty subject name never matches", claim("", "release", "Production deploys from release."), insufficient("p")},
		{"token-bounded: main is not in maintenance", claim("production", "main", "Production is under maintenance."), insufficient("p")},
		{"token-bounded: main is not in domain", claim("production", "main", "Production serves the domain."), insufficient("p")},
		{"token-bounded: digits are word runes", claim("production", "v2", "Production runs v20."), insufficient("p")},
		{"token-bounded: underscore is a word rune", claim("production", "main", "Production deploys from main_old."), insufficient("p")},
		{"later occurrence on a boundary still matches", claim("production", "main", "During maintenance production deploys from main."), entailed("p")},
		{"punctuation is a boundary", claim("production", "main", "(production) deploys from 'main'."), entailed("p")},
		{"hyphen is a boundary", claim("production", "main", "production deploys from main-branch"), entailed("p")},
		{"multi-word name", claim("Mark Huang", "Dense-Mem", "Mark Huang works on Dense-Mem."), entailed("p")},
		{"multi-byte name", claim("team", "Zürich", "The team moved to ZÜRICH."), entailed("p")},
		{"multi-byte name at start of text", claim("Zürich", "team", "Zürich hosts the team"), entailed("p")},
		{"multi-byte name is token-bounded", claim("team", "Zürich", "The team moved to Zürichsee."), insufficient("p")},
		{"multi-byte letter before name is not a boundary", claim("team", "rich", "The team moved to Zürich."), insufficient("p")},
		{"name spread over two cited spans", evidence.Claim{ProposalID: "p", SubjectNames: []string{"production"},
			ObjectNames: []string{"release"}, Cited: cited("Production deploys", "from release")}, entailed("p")},

		// Polarity.
		{"positive claim, text says not", claim("production", "main", "Production does not deploy from main."), insufficient("p")},
		{"positive claim, text says no longer", claim("production", "main", "Production no longer deploys from main."), insufficient("p")},
		{"positive claim, text says never", claim("production", "main", "Production never deploys from main."), insufficient("p")},
		{"positive claim, text says n't", claim("production", "main", "Production isn't deployed from main."), insufficient("p")},
		{"positive claim, text says don't", claim("production", "main", "We don't deploy production from main."), insufficient("p")},
		{"positive claim, curly apostrophe n’t", claim("production", "main", "Production doesn’t deploy from main."), insufficient("p")},
		{"positive claim, NOT in capitals", claim("production", "main", "Production does NOT deploy from main."), insufficient("p")},
		{"negative claim, text says not", negated(claim("production", "main", "Production does not deploy from main.")), entailed("p")},
		{"negative claim, text says no longer", negated(claim("production", "main", "Production no longer deploys from main.")), entailed("p")},
		{"negative claim, text says never", negated(claim("production", "main", "Production never deploys from main.")), entailed("p")},
		{"negative claim, text says n't", negated(claim("production", "main", "Production doesn't deploy from main.")), entailed("p")},
		{"negative claim, text says don't", negated(claim("production", "main", "We don't deploy production from main.")), entailed("p")},
		{"negative claim, no cue", negated(claim("production", "main", "Production deploys from main.")), insufficient("p")},
		{"negative claim, subject missing", negated(claim("staging", "main", "Production does not deploy from main.")), insufficient("p")},
		{"cue words inside other words are not negation", claim("production", "main",
			"Note: nevertheless production is nothing but main, known in November."), entailed("p")},
		{"longer without no is not negation", claim("production", "main", "Production deploys from main for longer."), entailed("p")},

		// valid_from.
		{"valid_from confirmed", since(claim("production", "release", "Since 2026-05-01 production deploys from release."), "2026-05-01"),
			confirmed("p", "2026-05-01")},
		{"valid_from confirmed in a later span", since(evidence.Claim{ProposalID: "p", SubjectNames: []string{"production"},
			ObjectNames: []string{"release"}, Cited: cited("Production deploys from release.", "Effective 2026-05-01.")}, "2026-05-01"),
			confirmed("p", "2026-05-01")},
		{"valid_from of a negative claim confirmed", since(negated(claim("production", "main", "From 2026-05-01 production no longer deploys from main.")), "2026-05-01"),
			confirmed("p", "2026-05-01")},
		{"other date in text: not confirmed", since(claim("production", "release", "Since 2026-04-30 production deploys from release."), "2026-05-01"),
			entailed("p")},
		{"date in another format: not confirmed", since(claim("production", "release", "Since 1 May 2026 production deploys from release."), "2026-05-01"),
			entailed("p")},
		{"date without claimed valid_from: nothing confirmed", claim("production", "release", "Since 2026-05-01 production deploys from release."),
			entailed("p")},
		{"date present but not entailed: nothing confirmed", since(claim("production", "main", "Since 2026-05-01 production deploys from release."), "2026-05-01"),
			insufficient("p")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := evidence.SpanVerifier{}.Verify(context.Background(), evidence.VerifyRequest{Claims: []evidence.Claim{tt.claim}})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if len(res) != 1 {
				t.Fatalf("Verify returned %d results, want 1", len(res))
			}
			if diff := cmp.Diff(tt.want, verdictOf(res[0])); diff != "" {
				t.Errorf("Verify (-want +got):\n%s\nrationale: %s", diff, res[0].Rationale)
			}
			if res[0].Rationale == "" {
				t.Error("Verify returned an empty rationale")
			}
		})
	}
}

func TestSpanVerifierObjectsAndAliases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		claim evidence.Claim
		want  verdict
	}{
		{"object value present", evidence.Claim{ProposalID: "p", SubjectNames: []string{"billing"},
			ObjectValue: "42", Cited: cited("Billing runs 42 replicas.")}, entailed("p")},
		{"object value token-bounded", evidence.Claim{ProposalID: "p", SubjectNames: []string{"billing"},
			ObjectValue: "42", Cited: cited("Billing runs 420 replicas.")}, insufficient("p")},
		{"object value wins over object names", evidence.Claim{ProposalID: "p", SubjectNames: []string{"billing"},
			ObjectNames: []string{"replicas"}, ObjectValue: "42", Cited: cited("Billing runs many replicas.")}, insufficient("p")},
		{"no object at all", evidence.Claim{ProposalID: "p", SubjectNames: []string{"billing"},
			Cited: cited("Billing runs 42 replicas.")}, insufficient("p")},
		{"subject by alias", evidence.Claim{ProposalID: "p", SubjectNames: []string{"production", "prod"},
			ObjectNames: []string{"release"}, Cited: cited("Prod deploys from release.")}, entailed("p")},
		{"object by alias", evidence.Claim{ProposalID: "p", SubjectNames: []string{"production"},
			ObjectNames: []string{"release branch", "rel"}, Cited: cited("Production deploys from REL.")}, entailed("p")},
		{"no name or alias present", evidence.Claim{ProposalID: "p", SubjectNames: []string{"production", "prod"},
			ObjectNames: []string{"release"}, Cited: cited("Products deploy from release.")}, insufficient("p")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := evidence.SpanVerifier{}.Verify(context.Background(), evidence.VerifyRequest{Claims: []evidence.Claim{tt.claim}})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if len(res) != 1 {
				t.Fatalf("Verify returned %d results, want 1", len(res))
			}
			if diff := cmp.Diff(tt.want, verdictOf(res[0])); diff != "" {
				t.Errorf("Verify (-want +got):\n%s\nrationale: %s", diff, res[0].Rationale)
			}
		})
	}
}

func TestSpanVerifierResultsMatchClaims(t *testing.T) {
	t.Parallel()
	req := evidence.VerifyRequest{Claims: []evidence.Claim{
		{ProposalID: "c", SubjectNames: []string{"production"}, ObjectNames: []string{"release"}, Cited: cited("production deploys from release")},
		{ProposalID: "a", SubjectNames: []string{"production"}, ObjectNames: []string{"main"}, Cited: cited("production deploys from release")},
		{ProposalID: "b", SubjectNames: []string{"staging"}, ObjectNames: []string{"main"}, Negated: true, Cited: cited("staging never deploys from main")},
	}}
	res, err := evidence.SpanVerifier{}.Verify(context.Background(), req)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	got := make([]verdict, len(res))
	for i, r := range res {
		got[i] = verdictOf(r)
	}
	want := []verdict{entailed("c"), insufficient("a"), entailed("b")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Verify (-want +got):\n%s", diff)
	}
	if err := evidence.CheckResults(req, res); err != nil {
		t.Errorf("CheckResults of SpanVerifier output: %v", err)
	}

	empty, err := evidence.SpanVerifier{}.Verify(context.Background(), evidence.VerifyRequest{})
	if err != nil || len(empty) != 0 {
		t.Errorf("Verify(no claims) = %v, %v; want no results, no error", empty, err)
	}
}

func TestSpanVerifierConfirmedValidFromIsACopy(t *testing.T) {
	t.Parallel()
	from := day("2026-05-01")
	c := evidence.Claim{ProposalID: "p", SubjectNames: []string{"production"}, ObjectNames: []string{"release"},
		ValidFrom: from, Cited: cited("From 2026-05-01 production deploys from release.")}
	res, err := evidence.SpanVerifier{}.Verify(context.Background(), evidence.VerifyRequest{Claims: []evidence.Claim{c}})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	got := res[0].ConfirmedValidFrom
	if got == nil || !got.Equal(*from) {
		t.Fatalf("ConfirmedValidFrom = %v, want %v", got, from)
	}
	if got == from {
		t.Error("ConfirmedValidFrom aliases the claim's ValidFrom pointer")
	}
}

func TestCheckResults(t *testing.T) {
	t.Parallel()
	req := evidence.VerifyRequest{Claims: []evidence.Claim{{ProposalID: "p1"}, {ProposalID: "p2"}}}
	ok := func(id string) evidence.Result {
		return evidence.Result{ProposalID: id, Verdict: evidence.VerdictEntailed, Confidence: 0.9}
	}
	with := func(r evidence.Result, f func(*evidence.Result)) evidence.Result { f(&r); return r }

	tests := []struct {
		name    string
		req     evidence.VerifyRequest
		results []evidence.Result
		wantErr string // "" means no error; otherwise a substring of the error
	}{
		{"one valid result per claim", req, []evidence.Result{ok("p1"), ok("p2")}, ""},
		{"order does not matter", req, []evidence.Result{ok("p2"), ok("p1")}, ""},
		{"every verdict accepted", req, []evidence.Result{
			with(ok("p1"), func(r *evidence.Result) { r.Verdict = evidence.VerdictContradicted }),
			with(ok("p2"), func(r *evidence.Result) { r.Verdict = evidence.VerdictInsufficient }),
		}, ""},
		{"confidence bounds inclusive", req, []evidence.Result{
			with(ok("p1"), func(r *evidence.Result) { r.Confidence = 0 }),
			with(ok("p2"), func(r *evidence.Result) { r.Confidence = 1 }),
		}, ""},
		{"no claims, no results", evidence.VerifyRequest{}, nil, ""},
		{"missing result", req, []evidence.Result{ok("p1")}, "1 results for 2 claims"},
		{"no results", req, nil, "0 results for 2 claims"},
		{"duplicate result", req, []evidence.Result{ok("p1"), ok("p1"), ok("p2")}, `two results for proposal "p1"`},
		{"duplicate replacing a missing one", req, []evidence.Result{ok("p1"), ok("p1")}, `two results for proposal "p1"`},
		{"unknown proposal", req, []evidence.Result{ok("p1"), ok("p2"), ok("p3")}, `unknown proposal "p3"`},
		{"unknown proposal instead of one", req, []evidence.Result{ok("p1"), ok("p3")}, `unknown proposal "p3"`},
		{"result without claims", evidence.VerifyRequest{}, []evidence.Result{ok("p1")}, `unknown proposal "p1"`},
		{"empty verdict", req, []evidence.Result{ok("p1"), with(ok("p2"), func(r *evidence.Result) { r.Verdict = "" })}, "unknown verdict"},
		{"bad verdict", req, []evidence.Result{ok("p1"), with(ok("p2"), func(r *evidence.Result) { r.Verdict = "Entailed" })}, "unknown verdict"},
		{"confidence below 0", req, []evidence.Result{ok("p1"), with(ok("p2"), func(r *evidence.Result) { r.Confidence = -0.01 })}, "outside 0..1"},
		{"confidence above 1", req, []evidence.Result{ok("p1"), with(ok("p2"), func(r *evidence.Result) { r.Confidence = 1.0001 })}, "outside 0..1"},
		{"confidence NaN", req, []evidence.Result{ok("p1"), with(ok("p2"), func(r *evidence.Result) { r.Confidence = math.NaN() })}, "outside 0..1"},
		{"confidence +Inf", req, []evidence.Result{ok("p1"), with(ok("p2"), func(r *evidence.Result) { r.Confidence = math.Inf(1) })}, "outside 0..1"},
		{"confidence -Inf", req, []evidence.Result{ok("p1"), with(ok("p2"), func(r *evidence.Result) { r.Confidence = math.Inf(-1) })}, "outside 0..1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := evidence.CheckResults(tt.req, tt.results)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckResults: unexpected error %v", err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("CheckResults: no error, want one containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("CheckResults error = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestResultGrants(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    evidence.Result
		want bool
	}{
		{evidence.Result{Verdict: evidence.VerdictEntailed, Confidence: 0.7}, true},
		{evidence.Result{Verdict: evidence.VerdictEntailed, Confidence: 0.69}, false},
		{evidence.Result{Verdict: evidence.VerdictInsufficient, Confidence: 1}, false},
		{evidence.Result{Verdict: evidence.VerdictContradicted, Confidence: 1}, false},
	} {
		if got := tt.r.Grants(0.7); got != tt.want {
			t.Errorf("%+v.Grants(0.7) = %v, want %v", tt.r, got, tt.want)
		}
	}
}

func TestConfirmsValidFrom(t *testing.T) {
	t.Parallel()
	a, b := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		confirmed, from *time.Time
		want            bool
	}{{&a, &a, true}, {&a, &b, false}, {nil, &a, false}, {&a, nil, false}, {nil, nil, false}} {
		if got := evidence.ConfirmsValidFrom(tt.confirmed, tt.from); got != tt.want {
			t.Errorf("ConfirmsValidFrom(%v, %v) = %v, want %v", tt.confirmed, tt.from, got, tt.want)
		}
	}
}

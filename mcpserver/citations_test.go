package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/mcpserver"
)

// Citations in quotes or characters (Unicode code points) convert to the library's UTF-8 byte offsets
// on text with emoji (4 bytes, and a ZWJ sequence of several code points), CJK (3 bytes) and
// combining marks (a decomposed é is two code points).
func TestCitationCharsToBytes(t *testing.T) {
	t.Parallel()
	const text = "🚀 Cafe\u0301 production deploys from 主分支; 👩\u200d💻 says so."
	str := func(s string) *string { return &s }
	n := func(i int) *int { return &i }
	for _, tc := range []struct {
		name       string
		quote      *string
		start, end *int
		want       string // the cited bytes
		problem    string
	}{
		{name: "whole item", want: text},
		{name: "quote after an emoji and a combining mark", quote: str("production deploys from 主分支"),
			want: "production deploys from 主分支"},
		{name: "characters", start: n(8), end: n(35), want: "production deploys from 主分支"},
		{name: "quote at its start", quote: str("主分支"), start: n(32), want: "主分支"},
		{name: "quote and both offsets", quote: str("主分支"), start: n(32), end: n(35), want: "主分支"},
		{name: "a ZWJ sequence counts its code points", start: n(37), end: n(40), want: "👩\u200d💻"},
		{name: "a combining mark is a character", start: n(2), end: n(7), want: "Cafe\u0301"},
		{name: "start only: to the end", start: n(41), want: "says so."},
		{name: "quote elsewhere than start", quote: str("主分支"), start: n(31), problem: "it occurs at character offset(s) 32"},
		{name: "quote not in the text", quote: str("main"), problem: "does not occur"},
		{name: "wrong end for the quote", quote: str("主分支"), end: n(34), problem: "ends at character offset 35"},
		{name: "end past the text", end: n(999), problem: "outside the item's 49 characters"},
		{name: "empty range", start: n(5), end: n(5), problem: "must be before"},
		{name: "empty quote", quote: str(""), problem: "quote is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, end, problem := mcpserver.CharsToBytes(text, tc.quote, tc.start, tc.end)
			if tc.problem != "" {
				if !strings.Contains(problem, tc.problem) {
					t.Errorf("problem %q, want one saying %q", problem, tc.problem)
				}
				return
			}
			if problem != "" {
				t.Fatalf("problem %q", problem)
			}
			if got := text[start:end]; got != tc.want {
				t.Errorf("bytes [%d, %d) = %q, want %q", start, end, got, tc.want)
			}
		})
	}
}

// remember takes a quoted citation of non-ASCII evidence: the server converts it, the verifier finds
// subject and object in the cited bytes, and Trace shows the citation as the library's byte range.
func TestRememberWithAQuotedCitation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.session(f.A)
	preds := call[densemem.ListPredicatesResponse](t, a, mcpserver.ToolListPredicates, map[string]any{})
	if len(preds.out.Predicates) != 1 || preds.out.Predicates[0].Key != "deploys_from" ||
		!strings.Contains(preds.text, `deploys_from (state, one current value(s) per subject); aliases: deploys_from; subject kinds: environment`) {
		t.Errorf("list_predicates: %+v\n%s", preds.out, preds.text)
	}
	text := "🚀 Cafe\u0301 note: production deploys from 主分支 — 生产环境."
	quote := "production deploys from 主分支"
	args := map[string]any{
		"idempotency_key": nextKey(),
		"evidence":        []map[string]any{{"content": text, "source_type": "conversation"}},
		"proposal": map[string]any{
			"entities": []map[string]any{{"ref": "env", "name": "production", "entity_kind": "environment"},
				{"ref": "branch", "name": "主分支", "entity_kind": "git_branch"}},
			"relationships": []map[string]any{{"proposal_id": "p", "subject_ref": "env", "predicate": "deploys from",
				"object_ref": "branch", "evidence": []map[string]any{{"evidence_index": 0, "quote": quote}}}},
		},
	}
	out := onlyOutcome(t, call[densemem.Placement](t, a, mcpserver.ToolRemember, args).out)
	if out.Category != densemem.CategoryAccepted {
		t.Fatalf("remember with a quoted citation: %s (%s), want accepted", out.Category, out.Reason)
	}
	tr := call[densemem.TraceResult](t, a, mcpserver.ToolTrace, map[string]any{"relationship_id": string(out.RelationshipID)})
	if at := strings.Index(text, quote); len(tr.out.Evidence) != 1 || tr.out.Evidence[0].Start != at || tr.out.Evidence[0].End != at+len(quote) {
		t.Errorf("trace evidence %+v, want the byte range of %q", tr.out.Evidence, quote)
	}
	// A quote the text does not hold is refused before anything is written, naming the citation.
	args["idempotency_key"] = nextKey()
	args["proposal"].(map[string]any)["relationships"].([]map[string]any)[0]["evidence"] = []map[string]any{{"evidence_index": 0, "quote": "production deploys from main"}}
	msg := callErr(t, a, mcpserver.ToolRemember, args)
	mustContain(t, "a quote not in the evidence", msg, "proposal.relationships[0].evidence[0]: quote does not occur")
}

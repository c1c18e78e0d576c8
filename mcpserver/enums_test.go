package mcpserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/mcpserver"
)

// Every enumeration of the tools' inputs is a JSON Schema enum with every value the library accepts,
// and citations are the tools' own (quote, character offsets).
func TestInputSchemasEnumerate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tools, err := f.session(f.A).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tool := range tools.Tools {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = m
	}
	// at walks a schema by property names; "[]" steps into items.
	at := func(tool, path string) map[string]any {
		s := schemas[tool]
		for _, step := range strings.Split(path, ".") {
			if step == "[]" {
				s, _ = s["items"].(map[string]any)
			} else {
				props, _ := s["properties"].(map[string]any)
				s, _ = props[step].(map[string]any)
			}
			if s == nil {
				t.Fatalf("%s: no property %s", tool, path)
			}
		}
		return s
	}
	enum := func(tool, path string) []string {
		var out []string
		for _, v := range at(tool, path)["enum"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	strs := func(vs ...string) []string { return vs }
	var sources []string
	for _, s := range evidence.SourceTypes() {
		sources = append(sources, string(s))
	}
	for _, tc := range []struct {
		tool, path string
		want       []string
	}{
		{mcpserver.ToolRemember, "evidence.[].source_type", sources},
		{mcpserver.ToolRemember, "evidence.[].authority", strs("standard", "authoritative")},
		{mcpserver.ToolRemember, "proposal.relationships.[].polarity", strs("+", "-")},
		{mcpserver.ToolRemember, "proposal.relationships.[].modality", strs("statement", "hypothetical", "question", "plan", "quote")},
		{mcpserver.ToolRemember, "proposal.relationships.[].object_value.type", strs("string", "number", "boolean", "date", "date_time")},
		{mcpserver.ToolResolve, "action", densemem.ResolveActions()},
		{mcpserver.ToolResolve, "evidence.[].source_type", sources},
		{mcpserver.ToolResolve, "proposal.relationships.[].polarity", strs("+", "-")},
		{mcpserver.ToolListReviewItems, "status", densemem.ReviewItemStatuses()},
		{mcpserver.ToolListConflicts, "status.[]", strs("open", "overdue", "resolved", "dismissed")},
	} {
		if got := enum(tc.tool, tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: enum %v, want %v", tc.tool, tc.path, got, tc.want)
		}
	}
	cite := at(mcpserver.ToolRemember, "proposal.relationships.[].evidence.[]")
	for _, p := range []string{"evidence_index", "quote", "start", "end"} {
		if _, ok := cite["properties"].(map[string]any)[p]; !ok {
			t.Errorf("remember's citation has no property %s: %v", p, cite)
		}
	}
	if d, _ := at(mcpserver.ToolRemember, "proposal.relationships.[].evidence.[].start")["description"].(string); !strings.Contains(d, "Unicode code points") {
		t.Errorf("a citation's start is not described as characters: %q", d)
	}
}

package mcpserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tools/list returns the seven tools, each with a description, an object input schema that refuses
// unknown arguments and names no team or profile, and an output schema.
func TestToolsList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.session(f.A).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		checkTool(t, tool)
	}
	slices.Sort(names)
	if want := mcpserver.ToolNames(); !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func checkTool(t *testing.T, tool *mcp.Tool) {
	t.Helper()
	if len(tool.Description) < 200 {
		t.Errorf("%s: description too short for a model that has never seen Dense-Mem: %q", tool.Name, tool.Description)
	}
	in, out := schemaMap(t, tool.InputSchema), schemaMap(t, tool.OutputSchema)
	if in["type"] != "object" || in["additionalProperties"] != false {
		t.Errorf("%s: input schema type %v, additionalProperties %v; want an object refusing unknown arguments", tool.Name,
			in["type"], in["additionalProperties"])
	}
	if out["type"] != "object" || len(out["properties"].(map[string]any)) == 0 {
		t.Errorf("%s: output schema %v, want an object with properties", tool.Name, out)
	}
	walkProperties(in, "", func(path string, prop map[string]any) {
		last := path[strings.LastIndex(path, ".")+1:]
		if strings.Contains(last, "team") || strings.Contains(last, "profile") {
			t.Errorf("%s: input property %s names a team or profile", tool.Name, path)
		}
		if desc, _ := prop["description"].(string); desc == "" && !strings.Contains(path, ".") {
			t.Errorf("%s: top-level input property %s has no description", tool.Name, path)
		}
	})
}

func schemaMap(t *testing.T, s any) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// walkProperties calls fn for every property below schema s, with its dotted path.
func walkProperties(s map[string]any, path string, fn func(string, map[string]any)) {
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			pm, _ := p.(map[string]any)
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			fn(sub, pm)
			walkProperties(pm, sub, fn)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		walkProperties(items, path+"[]", fn)
	}
}

package mcpserver

import (
	"testing"

	"github.com/densemem/densemem"
	"github.com/google/jsonschema-go/jsonschema"
)

// Every field description names a property that exists, so a renamed library field cannot leave a
// description behind silently.
func TestDescriptionsNameRealProperties(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tool    string
		descs   map[string]string
		in, out func() (*jsonschema.Schema, error)
	}{
		{ToolRemember, rememberDescs, schemaOf[densemem.RememberRequest], schemaOf[densemem.Placement]},
		{ToolRecall, recallDescs, schemaOf[densemem.RecallRequest], schemaOf[densemem.RecallResponse]},
		{ToolTrace, traceDescs, schemaOf[densemem.TraceRequest], schemaOf[densemem.TraceResult]},
		{ToolResolve, resolveDescs, schemaOf[densemem.ResolveRequest], schemaOf[densemem.ResolveResult]},
		{ToolForget, forgetDescs, schemaOf[densemem.ForgetRequest], schemaOf[densemem.ForgetResult]},
		{ToolListConflicts, listConflictsDescs, schemaOf[densemem.ListConflictsRequest], schemaOf[densemem.ListConflictsResponse]},
		{ToolListReviewItems, listReviewItemsDescs, schemaOf[listReviewItemsInput], schemaOf[densemem.ListReviewItemsResponse]},
	} {
		in, err := c.in()
		if err != nil {
			t.Fatalf("%s input: %v", c.tool, err)
		}
		out, err := c.out()
		if err != nil {
			t.Fatalf("%s output: %v", c.tool, err)
		}
		known := map[string]bool{}
		paths(in, "", known)
		paths(out, "@", known)
		for p := range c.descs {
			if !known[p] {
				t.Errorf("%s: description of %q, which is no property", c.tool, p)
			}
		}
		for _, p := range optionalInputs[c.tool] {
			if !known[p] {
				t.Errorf("%s: optional input %q is no property", c.tool, p)
			}
		}
	}
}

func schemaOf[T any]() (*jsonschema.Schema, error) { return schemaFor[T](nil, "") }

// paths adds every property path of s, below prefix, to out.
func paths(s *jsonschema.Schema, path string, out map[string]bool) {
	if s == nil {
		return
	}
	out[path] = true
	sep := "."
	if path == "" || path == "@" {
		sep = ""
	}
	for name, p := range s.Properties {
		paths(p, path+sep+name, out)
	}
	if s.Items != nil {
		paths(s.Items, path+"[]", out)
	}
}

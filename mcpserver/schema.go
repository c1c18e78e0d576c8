package mcpserver

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// typeSchemas are the schemas of the library's types whose JSON is not what reflection sees: times
// are RFC 3339 strings, and raw JSON (a trace observation's citations) is any JSON value.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	reflect.TypeFor[json.RawMessage](): {},
}

// schemaFor generates the JSON schema of T and describes its properties from descs: a key is a
// property path ("proposal.relationships[].evidence[].start"), prefixed by prefix ("" for inputs,
// "@" for outputs). The schema is resolved once here, so a schema the SDK could not use is an error,
// never a panic.
func schemaFor[T any](descs map[string]string, prefix string) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		return nil, err
	}
	describe(s, prefix, descs)
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, err
	}
	return s, nil
}

// describe sets the description of s and of every property below it that descs names.
func describe(s *jsonschema.Schema, path string, descs map[string]string) {
	if s == nil {
		return
	}
	if d, ok := descs[path]; ok && path != "" {
		s.Description = d
	}
	sep := "."
	if path == "" || path == "@" {
		sep = ""
	}
	for name, p := range s.Properties {
		describe(p, path+sep+name, descs)
	}
	if s.Items != nil {
		describe(s.Items, path+"[]", descs)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Type != "" {
		describe(s.AdditionalProperties, path+"{}", descs)
	}
}

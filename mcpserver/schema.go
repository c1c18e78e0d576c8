package mcpserver

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/relationship"
	"github.com/google/jsonschema-go/jsonschema"
)

// typeSchemas are the schemas of the library's types whose JSON is not what reflection sees: times
// are RFC 3339 strings, and raw JSON (a trace observation's citations) is any JSON value.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	reflect.TypeFor[json.RawMessage](): {},
}

// enumSchema is the schema of a string enumeration.
func enumSchema[T ~string](values []T) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, string(v))
	}
	return s
}

// inputTypeSchemas are typeSchemas with, for inputs, every enumeration of the library's types as a
// JSON Schema enum and citations as the tools take them (citationInput). Outputs keep plain
// strings: a value added to an enumeration must never make a stored result fail its schema.
var inputTypeSchemas = func() map[reflect.Type]*jsonschema.Schema {
	m := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[evidence.SourceType]():      enumSchema(evidence.SourceTypes()),
		reflect.TypeFor[evidence.Authority]():       enumSchema(evidence.Authorities()),
		reflect.TypeFor[relationship.Polarity]():    enumSchema(relationship.Polarities()),
		reflect.TypeFor[relationship.Modality]():    enumSchema(relationship.Modalities()),
		reflect.TypeFor[densemem.ValueType]():       enumSchema(densemem.ValueTypes()),
		reflect.TypeFor[densemem.Citation]():        citationSchema(),
		reflect.TypeFor[relationship.Status]():      enumSchema(relationship.Statuses()),
		reflect.TypeFor[relationship.Kind]():        enumSchema(relationship.Kinds()),
		reflect.TypeFor[relationship.Cardinality](): enumSchema(relationship.Cardinalities()),
	}
	for t, s := range typeSchemas {
		m[t] = s
	}
	return m
}()

// inputEnums are the enumerations of input fields the library types as plain strings, by tool and
// property path.
var inputEnums = map[string]map[string][]string{
	ToolResolve:         {"action": densemem.ResolveActions()},
	ToolListReviewItems: {"status": densemem.ReviewItemStatuses()},
	ToolListConflicts:   {"status[]": conflictStatuses(), "order": densemem.ConflictOrders()},
}

// conflictStatuses are the case statuses as strings.
func conflictStatuses() []string {
	var out []string
	for _, s := range conflict.Statuses() {
		out = append(out, string(s))
	}
	return out
}

// setEnums sets the enum of every property of s that enums names by path.
func setEnums(s *jsonschema.Schema, path string, enums map[string][]string) {
	if s == nil {
		return
	}
	if vs, ok := enums[path]; ok {
		s.Enum = nil
		for _, v := range vs {
			s.Enum = append(s.Enum, v)
		}
	}
	sep := "."
	if path == "" {
		sep = ""
	}
	for name, p := range s.Properties {
		setEnums(p, path+sep+name, enums)
	}
	setEnums(s.Items, path+"[]", enums)
}

// inputSchemaFor is the input schema of the library's request type T, with inputTypeSchemas.
func inputSchemaFor[T any](descs map[string]string) (*jsonschema.Schema, error) {
	return generate[T](descs, "", inputTypeSchemas)
}

// schemaFor generates the JSON schema of T and describes its properties from descs: a key is a
// property path ("proposal.relationships[].evidence[].start"), prefixed by prefix ("" for inputs,
// "@" for outputs). The schema is resolved once here, so a schema the SDK could not use is an error,
// never a panic.
func schemaFor[T any](descs map[string]string, prefix string) (*jsonschema.Schema, error) {
	return generate[T](descs, prefix, typeSchemas)
}

// generate is schemaFor with the given type schemas.
func generate[T any](descs map[string]string, prefix string, types map[reflect.Type]*jsonschema.Schema) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: types})
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

package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/densemem/densemem"
	"github.com/google/jsonschema-go/jsonschema"
)

// A model cannot count UTF-8 bytes (JavaScript counts UTF-16 code units, a model counts neither
// reliably), so the tools take citations a model can produce: the exact quoted text, and/or
// character offsets (Unicode code points). The server converts them to the library's UTF-8 byte
// offsets against the evidence item's content before calling the library.

// citationInput is one citation as a tool takes it.
type citationInput struct {
	EvidenceIndex int     `json:"evidence_index"`
	Quote         *string `json:"quote,omitempty"`
	Start         *int    `json:"start,omitempty"`
	End           *int    `json:"end,omitempty"`
}

// citationSchema is the schema of citationInput, which replaces densemem.Citation in the tools'
// input schemas.
func citationSchema() *jsonschema.Schema {
	integer := func(desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(0.0), Description: desc}
	}
	return &jsonschema.Schema{
		Type: "object",
		Description: "Where an evidence item states this relationship. Give quote (the exact text, copied from the " +
			"evidence item's content), or start and end, or both; with neither, the whole item is cited.",
		Properties: map[string]*jsonschema.Schema{
			"evidence_index": integer("The index of the cited item in evidence[]."),
			"quote": {Type: "string", Description: "The exact cited text, character for character as in the item's " +
				"content. Its first occurrence is cited, or the one at start when start is given."},
			"start": integer("Character offset (Unicode code points, counted from 0) where the cited text starts. For an " +
				"item that adopts a fragment (adopt_fragment_id) start and end are UTF-8 byte offsets of the fragment's content."),
			"end": integer("Character offset (Unicode code points) where the cited text ends, exclusive."),
		},
		Required:             []string{"evidence_index"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// relationshipCitations reads the citations of a proposal's relationships from a tool's raw input,
// as the tool takes them (inner) under a top-level proposal.
func relationshipCitations(data []byte) ([][]citationInput, error) {
	var shadow struct {
		Proposal *struct {
			Relationships []struct {
				Evidence []citationInput `json:"evidence"`
			} `json:"relationships"`
		} `json:"proposal"`
	}
	if err := json.Unmarshal(data, &shadow); err != nil {
		return nil, err
	}
	if shadow.Proposal == nil {
		return nil, nil
	}
	out := make([][]citationInput, len(shadow.Proposal.Relationships))
	for i, r := range shadow.Proposal.Relationships {
		out[i] = r.Evidence
	}
	return out, nil
}

// citeBytes sets the byte offsets of every citation of p's relationships from cites (in quotes or
// characters) against items' contents. Problems come back as one *densemem.ValidationError with
// their paths; a citation of an item that is not there is left for the library to refuse.
func citeBytes(items []densemem.EvidenceInput, p *densemem.Proposal, cites [][]citationInput) error {
	var problems []densemem.FieldProblem
	for i := range p.Relationships {
		if i >= len(cites) {
			break
		}
		rel := &p.Relationships[i]
		for j := range rel.Evidence {
			if j >= len(cites[i]) {
				break
			}
			c := cites[i][j]
			if c.EvidenceIndex < 0 || c.EvidenceIndex >= len(items) {
				continue
			}
			start, end, problem := charsToBytes(items[c.EvidenceIndex], c)
			if problem != "" {
				problems = append(problems, densemem.FieldProblem{
					Path: fmt.Sprintf("proposal.relationships[%d].evidence[%d]", i, j), Message: problem})
				continue
			}
			rel.Evidence[j].Start, rel.Evidence[j].End = start, end
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if len(problems) > densemem.MaxProblems {
		return &densemem.ValidationError{Problems: problems[:densemem.MaxProblems], Omitted: len(problems) - densemem.MaxProblems}
	}
	return &densemem.ValidationError{Problems: problems}
}

// charsToBytes returns the byte range of item's content that c cites, or what is wrong with c.
func charsToBytes(item densemem.EvidenceInput, c citationInput) (start, end int, problem string) {
	if item.AdoptFragmentID != "" {
		// The fragment's content is not in the request: byte offsets pass through.
		if c.Quote != nil || c.Start == nil || c.End == nil {
			return 0, 0, "an item that adopts a fragment is cited by start and end, UTF-8 byte offsets of the fragment's content (no quote)"
		}
		return *c.Start, *c.End, ""
	}
	text := item.Content
	// offsets[k] is the byte offset of character k; offsets[len] is len(text).
	offsets := make([]int, 0, utf8.RuneCountInString(text)+1)
	for i := range text {
		offsets = append(offsets, i)
	}
	offsets = append(offsets, len(text))
	chars := len(offsets) - 1
	byteOf := func(k int) int { return offsets[k] }
	charOf := func(b int) int { // the character starting at byte b (b is a character boundary)
		lo, hi := 0, chars
		for lo < hi {
			mid := (lo + hi) / 2
			if offsets[mid] < b {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		return lo
	}
	if c.Start != nil && (*c.Start < 0 || *c.Start > chars) {
		return 0, 0, fmt.Sprintf("start %d is outside the item's %d characters", *c.Start, chars)
	}
	if c.End != nil && (*c.End < 0 || *c.End > chars) {
		return 0, 0, fmt.Sprintf("end %d is outside the item's %d characters", *c.End, chars)
	}
	if c.Quote == nil {
		s, e := 0, chars
		if c.Start != nil {
			s = *c.Start
		}
		if c.End != nil {
			e = *c.End
		}
		if s >= e {
			return 0, 0, fmt.Sprintf("start %d must be before end %d (character offsets)", s, e)
		}
		return byteOf(s), byteOf(e), ""
	}
	quote := *c.Quote
	if quote == "" {
		return 0, 0, "quote is empty: give the exact cited text, or start and end"
	}
	var at []int // character offsets where quote occurs
	for from := 0; from <= len(text) && len(at) < 100; {
		i := strings.Index(text[from:], quote)
		if i < 0 {
			break
		}
		at = append(at, charOf(from+i))
		from += i + 1
		for from < len(text) && !utf8.RuneStart(text[from]) {
			from++
		}
	}
	if len(at) == 0 {
		return 0, 0, "quote does not occur in the item's content: copy the cited text exactly, character for character"
	}
	s := at[0]
	if c.Start != nil {
		s = -1
		for _, a := range at {
			if a == *c.Start {
				s = a
			}
		}
		if s < 0 {
			return 0, 0, fmt.Sprintf("quote does not occur at start %d; it occurs at character offset(s) %s", *c.Start, offsetList(at))
		}
	}
	e := charOf(byteOf(s) + len(quote))
	if c.End != nil && *c.End != e {
		return 0, 0, fmt.Sprintf("end %d does not end the quote, which ends at character offset %d", *c.End, e)
	}
	return byteOf(s), byteOf(s) + len(quote), ""
}

// offsetList lists up to five offsets.
func offsetList(at []int) string {
	parts := make([]string, 0, 5)
	for _, a := range at[:min(len(at), 5)] {
		parts = append(parts, fmt.Sprint(a))
	}
	if len(at) > 5 {
		parts = append(parts, "...")
	}
	return strings.Join(parts, ", ")
}

// rememberInput is remember's input: a RememberRequest whose citations are in quotes or characters.
type rememberInput struct {
	req   densemem.RememberRequest
	cites [][]citationInput
}

// inputSchema is RememberRequest's, with tool citations.
func (rememberInput) inputSchema(descs map[string]string) (*jsonschema.Schema, error) {
	return inputSchemaFor[densemem.RememberRequest](descs)
}

// UnmarshalJSON reads the request and its tool citations.
func (in *rememberInput) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &in.req); err != nil {
		return err
	}
	var err error
	in.cites, err = relationshipCitations(data)
	return err
}

// request is the library request, with byte offsets.
func (in rememberInput) request() (densemem.RememberRequest, error) {
	return in.req, citeBytes(in.req.Evidence, &in.req.Proposal, in.cites)
}

// resolveInput is resolve_memory_placement's input: a ResolveRequest whose proposal's citations
// (correct) are in quotes or characters of the request's evidence.
type resolveInput struct {
	req   densemem.ResolveRequest
	cites [][]citationInput
}

// inputSchema is ResolveRequest's, with tool citations.
func (resolveInput) inputSchema(descs map[string]string) (*jsonschema.Schema, error) {
	return inputSchemaFor[densemem.ResolveRequest](descs)
}

// UnmarshalJSON reads the request and its tool citations.
func (in *resolveInput) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &in.req); err != nil {
		return err
	}
	var err error
	in.cites, err = relationshipCitations(data)
	return err
}

// request is the library request, with byte offsets.
func (in resolveInput) request() (densemem.ResolveRequest, error) {
	if in.req.Proposal == nil {
		return in.req, nil
	}
	return in.req, citeBytes(in.req.Evidence, in.req.Proposal, in.cites)
}

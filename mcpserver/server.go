package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/densemem/densemem"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultName and DefaultVersion are what the server reports in its MCP implementation info when
// Options leaves them empty.
const (
	DefaultName    = "dense-mem"
	DefaultVersion = "0.1.0"
)

// Instructions is what the server tells a connecting client about how to use its tools.
const Instructions = `Dense-Mem is the team's evidence-backed memory. Store what you learn with remember (verbatim evidence plus the entities and relationships you extracted from it, citing byte ranges of the evidence), and look things up with recall_memory before answering from memory. Each remember outcome has a category; relationship_accepted, relationship_supported and relationship_superseded_prior need nothing more. An outcome with a review (relationship_needs_review, relationship_pending_evidence, identity_needs_review, predicate_needs_review) is a decision for the user: call trace_memory on its relationship_id, ask the user the review's question verbatim with its choices and their impact, then call resolve_memory_placement with the user's answer. When recall_memory or trace_memory shows a team conflict case, show the user every position with its owners and counted source groups and ask the case's question; the user answers by remembering new evidence with conflict_response set to the case's conflict_id and version. Nobody resolves another profile's records directly: the nightly reviewer settles team cases.`

// Options configure a server.
type Options struct {
	// Principal returns the principal one tool call acts as, from its session or request (for HTTP,
	// req.Extra.TokenInfo). It is required: the principal never comes from tool arguments. An error
	// refuses the call; a host principal (Host set) is refused too.
	Principal func(ctx context.Context, req *mcp.CallToolRequest) (densemem.Principal, error)
	// Name and Version are reported to clients (DefaultName and DefaultVersion when empty).
	Name, Version string
	// Logger receives the server's and the SDK's logs; nil discards them.
	Logger *slog.Logger
}

// ErrNoPrincipal is what New returns when Options.Principal is nil.
var ErrNoPrincipal = errors.New("mcpserver: Options.Principal is required: the host binds every session to a principal")

// New returns an MCP server whose eight tools call client as the principal Options.Principal binds to
// each call. The server may be connected to any number of sessions, on any transport.
func New(client *densemem.Client, opts Options) (*mcp.Server, error) {
	if client == nil {
		return nil, errors.New("mcpserver: New needs a *densemem.Client")
	}
	if opts.Principal == nil {
		return nil, ErrNoPrincipal
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: "Dense-Mem", Version: opts.Version},
		&mcp.ServerOptions{Instructions: Instructions, Logger: opts.Logger})
	h := &tools{client: client, opts: opts}
	for _, t := range h.all() {
		if err := t.add(s, h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// tools holds what every tool handler shares.
type tools struct {
	client *densemem.Client
	opts   Options
}

// principal is the principal a call acts as: the host's binding, which must name a profile of a team.
func (h *tools) principal(ctx context.Context, req *mcp.CallToolRequest) (densemem.Principal, error) {
	p, err := h.opts.Principal(ctx, req)
	if err != nil {
		return densemem.Principal{}, fmt.Errorf("%w: this session is not bound to a Dense-Mem profile: %v", errUnbound, err)
	}
	if p.Host || p.TeamID == "" || p.ProfileID == "" {
		return densemem.Principal{}, fmt.Errorf("%w: the host bound this session to no profile of a team", errUnbound)
	}
	return p, nil
}

// errUnbound marks a call whose session has no usable principal.
var errUnbound = errors.New("unbound session")

// tool is one tool: its definition and how to add it to a server.
type tool struct {
	name string
	add  func(s *mcp.Server, h *tools) error
}

// inputSchemer is a tool input type whose schema is that of the library request it carries.
type inputSchemer interface {
	inputSchema(descs map[string]string) (*jsonschema.Schema, error)
}

// handlerFor is a tool's work once its principal is known: the output and its text rendering.
type handlerFor[In, Out any] func(ctx context.Context, h *tools, p densemem.Principal, in In) (Out, string, error)

// newTool defines a tool whose input and output schemas come from In and Out (with the descriptions
// of descs), and whose handler runs as the call's principal and renders its result.
func newTool[In, Out any](name, title, description string, annotations *mcp.ToolAnnotations, descs map[string]string,
	run handlerFor[In, Out]) tool {
	return tool{name: name, add: func(s *mcp.Server, h *tools) error {
		var in *jsonschema.Schema
		var err error
		if custom, ok := any(*new(In)).(inputSchemer); ok {
			in, err = custom.inputSchema(descs)
		} else {
			in, err = inputSchemaFor[In](descs)
		}
		if err != nil {
			return fmt.Errorf("mcpserver: %s input schema: %w", name, err)
		}
		setEnums(in, "", inputEnums[name])
		in.Required = slices.DeleteFunc(in.Required, func(p string) bool { return slices.Contains(optionalInputs[name], p) })
		out, err := schemaFor[Out](descs, "@")
		if err != nil {
			return fmt.Errorf("mcpserver: %s output schema: %w", name, err)
		}
		t := &mcp.Tool{Name: name, Title: title, Description: description, InputSchema: in, OutputSchema: out,
			Annotations: annotations}
		mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, input In) (*mcp.CallToolResult, Out, error) {
			var zero Out
			p, err := h.principal(ctx, req)
			if err != nil {
				return nil, zero, toolError(h.opts.Logger, name, err)
			}
			res, text, err := run(ctx, h, p, input)
			if err != nil {
				return nil, zero, toolError(h.opts.Logger, name, err)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, res, nil
		})
		return nil
	}}
}

// Package mcpserver serves Dense-Mem to AI agents over the Model Context Protocol, on the official Go
// SDK (github.com/modelcontextprotocol/go-sdk). New returns an *mcp.Server with eight tools —
// list_predicates, remember, recall_memory, trace_memory, resolve_memory_placement, forget_memory,
// list_conflicts and list_review_items — that a host mounts on any transport the SDK offers;
// ServeStdio and HTTPHandler are the two ready-made ones the densemem command uses.
//
// ServeStdio reads through LineTransport, which answers every malformed, oversized or unknown
// message with a JSON-RPC error and goes on serving; ServeStartupError serves a client the reason a
// server could not start as the error of its initialize request. HTTPHandler expires idle sessions,
// caps them, bounds request bodies in time and size, and challenges a missing token with
// "WWW-Authenticate: Bearer".
//
// Every enumeration of the tools' inputs is a JSON Schema enum. Citations are what a model can
// produce: the exact quoted text and/or character offsets (Unicode code points), converted by the
// server to the library's UTF-8 byte offsets.
//
// Every tool's input and output schema is generated from the library's own request and response
// types, so the field names are the specification's (snake_case), and every result carries the
// response as structured content and a short text a model can read: the conflict question verbatim,
// the positions with their owners and counted source groups, each review item's allowed actions with
// their impact, each outcome's category and reason.
//
// The principal never comes from tool arguments. The host binds every session or request to a
// densemem.Principal through Options.Principal (ServeStdio: one fixed principal for the process;
// HTTPHandler: the principal of the caller's bearer token), and no tool input names a team or a
// profile: an argument the schema does not declare is refused before any tool runs. A host principal
// (densemem.HostPrincipal) is refused too: agents act through a profile and its scopes.
//
// Errors come back as MCP tool errors (results with isError set) whose text tells the model what to
// do next: the fields of a validation error, "recall or trace and retry" for a stale conflict version
// or decision, whose relationship it is for a not-owner error.
package mcpserver

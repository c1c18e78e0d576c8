package mcpserver

import (
	"net/http"

	"github.com/densemem/densemem"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPServerOf returns the MCP server behind a handler of HTTPHandler, for tests that wait on its
// sessions.
func HTTPServerOf(h http.Handler) *mcp.Server { return h.(*httpHandler).server }

// CharsToBytes exposes the citation conversion to the tests: the byte range item's content that a
// citation in quotes or characters names, or the problem.
func CharsToBytes(content string, quote *string, start, end *int) (int, int, string) {
	return charsToBytes(densemem.EvidenceInput{Content: content}, citationInput{Quote: quote, Start: start, End: end})
}

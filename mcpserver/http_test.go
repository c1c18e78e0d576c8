package mcpserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds "Authorization: Bearer <token>" to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// The HTTP handler refuses a missing or wrong bearer token with 401 and runs no tool; a right token
// opens a session bound to its principal.
func TestHTTPHandlerBearerTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "tokens.json")
	file := fmt.Sprintf(`[{"token_sha256": %q, "team_id": %q, "profile_id": %q},
		{"token_sha256": %q, "team_id": %q, "profile_id": %q}]`,
		mcpserver.HashToken("alice-secret"), f.A.TeamID, f.A.ProfileID, strings.ToUpper(mcpserver.HashToken("bob-secret")),
		f.B.TeamID, f.B.ProfileID)
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := mcpserver.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := mcpserver.HTTPHandler(f.client, tokens, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// Plain POSTs: no token, a wrong token, a malformed header.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{}}}`
	for name, header := range map[string]string{"missing": "", "wrong": "Bearer alice-secretx", "hash as token": "Bearer " +
		mcpserver.HashToken("alice-secret"), "basic": "Basic YWxpY2U6c2VjcmV0"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token: status %d, want 401", name, resp.StatusCode)
		}
		if ch := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer ") {
			t.Errorf("%s token: WWW-Authenticate %q, want a Bearer challenge", name, ch)
		}
	}

	// The SDK's client with a wrong token cannot even initialize.
	wrong := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{"nope", http.DefaultTransport}}}
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "intruder"}, nil).Connect(t.Context(), wrong, nil); err == nil {
		_ = cs.Close()
		t.Errorf("a session opened with a wrong token")
	}

	// The right tokens: each session acts as its token's profile.
	alice := httpSession(t, srv.URL, "alice-secret")
	out := onlyOutcome(t, call[densemem.Placement](t, alice, mcpserver.ToolRemember,
		deployment("Production deploys from main.", "main", nil, nil)).out)
	bob := httpSession(t, srv.URL, "bob-secret")
	rec := call[densemem.RecallResponse](t, bob, mcpserver.ToolRecall, densemem.RecallRequest{Query: "production"})
	if len(rec.out.Results) != 1 || rec.out.Results[0].Relationship.OwnerProfileID != f.A.ProfileID {
		t.Fatalf("bob's recall over HTTP: %+v, want alice's relationship", rec.out.Results)
	}
	msg := callErr(t, bob, mcpserver.ToolForget, map[string]any{"relationship_id": string(out.RelationshipID), "idempotency_key": nextKey()})
	mustContain(t, "bob forgetting alice's relationship over HTTP", msg, "not the owner", string(f.A.ProfileID))
}

func httpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A token file is refused when an entry is malformed, names no principal, repeats a token or has
// fields the format does not know.
func TestParseTokensRefusesBadFiles(t *testing.T) {
	t.Parallel()
	h := mcpserver.HashToken("t")
	for name, file := range map[string]string{
		"not json":      `{`,
		"short hash":    `[{"token_sha256": "abcd", "team_id": "t", "profile_id": "p"}]`,
		"no profile":    fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t"}]`, h),
		"duplicate":     fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "profile_id": "p"}, {"token_sha256": %q, "team_id": "t", "profile_id": "q"}]`, h, h),
		"host field":    fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "profile_id": "p", "host": true}]`, h),
		"plain token":   `[{"token": "t", "team_id": "t", "profile_id": "p"}]`,
		"trailing data": fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "profile_id": "p"}] []`, h),
	} {
		if _, err := mcpserver.ParseTokens([]byte(file)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	s, err := mcpserver.ParseTokens([]byte(fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "profile_id": "p"}]`, h)))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := s.Lookup("t"); !ok || p != (densemem.Principal{TeamID: "t", ProfileID: "p"}) {
		t.Errorf("Lookup(t) = %+v, %v", p, ok)
	}
	for _, tok := range []string{"", "T", h} {
		if _, ok := s.Lookup(tok); ok {
			t.Errorf("Lookup(%q) found a principal", tok)
		}
	}
}

// A host token is refused: the MCP server serves agents, which act through a profile.
func TestParseTokensRefusesHostTokens(t *testing.T) {
	t.Parallel()
	file := fmt.Sprintf(`[{"token_sha256": %q, "team_id": "t", "host": true}]`, mcpserver.HashToken("h"))
	if _, err := mcpserver.ParseTokens([]byte(file)); err == nil || !strings.Contains(err.Error(), "host principal") {
		t.Errorf("a host token: %v, want refused as a host principal", err)
	}
}

package mcpserver_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer serves HTTPHandler with opts for alice's token, "alice-secret".
func httpServer(t *testing.T, f *fixture, opts *mcpserver.HTTPOptions) (*httptest.Server, *mcp.Server) {
	return tokenServer(t, f, "alice-secret", opts)
}

// tokenServer serves HTTPHandler with opts, token binding alice.
func tokenServer(t *testing.T, f *fixture, token string, opts *mcpserver.HTTPOptions) (*httptest.Server, *mcp.Server) {
	t.Helper()
	tokens, err := mcpserver.NewTokenStore([]mcpserver.Token{{TokenSHA256: mcpserver.HashToken(token),
		TeamID: f.A.TeamID, ProfileID: f.A.ProfileID}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := mcpserver.HTTPHandler(f.client, tokens, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, mcpserver.HTTPServerOf(h)
}

// serverSession is the server's session of a client session.
func serverSession(t *testing.T, s *mcp.Server, cs *mcp.ClientSession) *mcp.ServerSession {
	t.Helper()
	for ss := range s.Sessions() {
		if ss.ID() == cs.ID() {
			return ss
		}
	}
	t.Fatalf("no server session %q", cs.ID())
	return nil
}

// A session idle for the configured time is closed by the server (the SDK's timer, on the wall
// clock: the test waits for the close, it asserts no duration), and its next request fails. The
// handshake itself must finish within the timeout: on a loaded machine it may not, so a handshake
// whose session already expired is tried again (with a timeout of 50 ms one CI run lost it).
func TestHTTPSessionsExpireWhenIdle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, server := httpServer(t, f, &mcpserver.HTTPOptions{SessionTimeout: 200 * time.Millisecond})
	var cs *mcp.ClientSession
	for attempt := 1; cs == nil; attempt++ {
		tr := &mcp.StreamableClientTransport{Endpoint: srv.URL,
			HTTPClient: &http.Client{Transport: bearer{"alice-secret", http.DefaultTransport}}}
		c, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(t.Context(), tr, nil)
		switch {
		case err == nil:
			cs = c
			t.Cleanup(func() { _ = cs.Close() })
		case attempt == 10:
			t.Fatalf("no handshake finished within the session timeout in %d attempts: %v", attempt, err)
		}
	}
	if err := serverSession(t, server, cs).Wait(); err != nil {
		t.Logf("session ended: %v", err)
	}
	for range server.Sessions() {
		t.Fatal("an expired session is still open on the server")
	}
	if _, err := cs.ListTools(t.Context(), nil); err == nil {
		t.Error("a call on an expired session succeeded")
	}
}

// The server opens at most MaxSessions sessions at once: one more gets 503 with a JSON-RPC error,
// and a session that closes makes room.
func TestHTTPSessionsAreCapped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, server := httpServer(t, f, &mcpserver.HTTPOptions{MaxSessions: 2})
	first := httpSession(t, srv.URL, "alice-secret")
	httpSession(t, srv.URL, "alice-secret")
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{"alice-secret", http.DefaultTransport}}}
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "third"}, nil).Connect(t.Context(), tr, nil); err == nil {
		_ = cs.Close()
		t.Fatal("a third session opened past MaxSessions 2")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("the third session's error %q does not say the server is full", err)
	}
	ss := serverSession(t, server, first)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	_ = ss.Wait()
	third := httpSession(t, srv.URL, "alice-secret")
	if _, err := third.ListTools(t.Context(), nil); err != nil {
		t.Errorf("a session after one closed: %v", err)
	}
}

// A request body that does not arrive within BodyTimeout gets 408, and one larger than
// MaxMessageBytes 413, before the MCP handler sees it.
func TestHTTPBoundsRequestBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, _ := httpServer(t, f, &mcpserver.HTTPOptions{BodyTimeout: 100 * time.Millisecond, MaxMessageBytes: 1024})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A slow body: the headers promise 100 bytes, 10 arrive, and the client stays silent.
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer alice-secret\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", srv.Listener.Addr())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a slow body: status %d, want 408", resp.StatusCode)
	}

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(strings.Repeat(" ", 2048)))
	req.Header.Set("Authorization", "bearer alice-secret") // the scheme is case-insensitive (RFC 9110 §11.1)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 KiB body past a 1 KiB bound: status %d, want 413", resp.StatusCode)
	}
}

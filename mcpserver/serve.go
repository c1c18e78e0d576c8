package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/bearer"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves the tools on standard input and output, every call acting as principal (one
// profile of one team, fixed for the process), until ctx is done or the client disconnects. A line
// that is not a valid JSON-RPC message gets an error reply and the server goes on (LineTransport).
func ServeStdio(ctx context.Context, client *densemem.Client, principal densemem.Principal) error {
	return Serve(ctx, client, principal, &LineTransport{Reader: os.Stdin, Writer: os.Stdout})
}

// CodeStartupFailed is the JSON-RPC error code of every answer of ServeStartupError: a server error
// (the range -32000..-32099 JSON-RPC leaves to implementations).
const CodeStartupFailed = -32000

// ServeStartupError serves one session on t that answers every request, initialize first, with the
// JSON-RPC error CodeStartupFailed and the message "Dense-Mem could not start: " and reason, until the
// client disconnects or ctx is done. A command that cannot start the real server (no database, an
// unknown profile, an unmigrated schema) serves it on its stdio, so that an MCP client shows the user
// the reason and its fix instead of "connection closed".
func ServeStartupError(ctx context.Context, t mcp.Transport, reason error) error {
	s := mcp.NewServer(&mcp.Implementation{Name: DefaultName, Title: "Dense-Mem", Version: DefaultVersion}, nil)
	msg := "Dense-Mem could not start: " + reason.Error()
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			return nil, &jsonrpc.Error{Code: CodeStartupFailed, Message: msg}
		}
	})
	return s.Run(ctx, t)
}

// CheckPrincipal reports why p cannot serve an agent, naming the fix: a host principal, a missing
// team or profile, a profile that is not one of the team's (or a team that does not exist), or a
// disabled profile. It reads the team's profiles as the host, so it needs no scope of p's.
func CheckPrincipal(ctx context.Context, client *densemem.Client, p densemem.Principal) error {
	if err := checkAgent(p); err != nil {
		return err
	}
	page := densemem.ListProfilesRequest{Limit: 500}
	for {
		res, err := client.ListProfiles(ctx, densemem.HostPrincipal(p.TeamID), page)
		switch {
		case errors.Is(err, densemem.ErrNotFound):
			return fmt.Errorf("there is no team %q in this database: check the team ID (densemem team list)", p.TeamID)
		case err != nil:
			return err
		}
		for _, pf := range res.Profiles {
			if pf.ProfileID != p.ProfileID {
				continue
			}
			if pf.Status != identity.ProfileActive {
				return fmt.Errorf("profile %q of team %q is %s: bind an active profile (densemem profile list --team %s)",
					p.ProfileID, p.TeamID, pf.Status, p.TeamID)
			}
			return nil
		}
		if res.NextAfter == "" {
			return fmt.Errorf("team %q has no profile %q: check the profile ID (densemem profile list --team %s)",
				p.TeamID, p.ProfileID, p.TeamID)
		}
		page.After = res.NextAfter
	}
}

// Serve serves the tools on one transport (one session), every call acting as principal.
func Serve(ctx context.Context, client *densemem.Client, principal densemem.Principal, t mcp.Transport) error {
	if err := checkAgent(principal); err != nil {
		return err
	}
	s, err := New(client, Options{Principal: Fixed(principal)})
	if err != nil {
		return err
	}
	return s.Run(ctx, t)
}

// Fixed returns an Options.Principal that binds every call to p.
func Fixed(p densemem.Principal) func(context.Context, *mcp.CallToolRequest) (densemem.Principal, error) {
	return func(context.Context, *mcp.CallToolRequest) (densemem.Principal, error) { return p, nil }
}

// checkAgent refuses a principal an agent may not act as: the host itself, or one without a team
// and a profile.
func checkAgent(p densemem.Principal) error {
	switch {
	case p.Host:
		return errors.New("mcpserver: a host principal never serves agents; bind a profile of the team")
	case p.TeamID == "" || p.ProfileID == "":
		return errors.New("mcpserver: the principal needs a team ID and a profile ID")
	}
	return nil
}

// Token is one entry of a token file: the hex SHA-256 of a bearer token (HashToken; the token itself
// is never stored) and the principal it authenticates. The MCP server refuses host tokens (Host set):
// agents act through a profile.
type Token = bearer.Token

// TokenStore maps bearer tokens to principals, by their SHA-256 hashes, compared in constant time.
// It is immutable and safe for concurrent use.
type TokenStore = bearer.Store

// HashToken returns the hex SHA-256 of a bearer token, as a token file stores it.
func HashToken(token string) string { return bearer.Hash(token) }

// LoadTokens reads a token file: a JSON array of Token ([{"token_sha256": "<hex>", "team_id": "...",
// "profile_id": "..."}]).
func LoadTokens(path string) (*TokenStore, error) {
	s, err := bearer.Load(path)
	return agentTokens(s, err)
}

// ParseTokens parses the contents of a token file (see LoadTokens). Unknown fields, malformed
// hashes, entries without a team or profile, host tokens and duplicate hashes are errors.
func ParseTokens(data []byte) (*TokenStore, error) {
	return agentTokens(bearer.Parse(data))
}

// NewTokenStore returns a store of tokens (see ParseTokens for what is refused).
func NewTokenStore(tokens []Token) (*TokenStore, error) {
	return agentTokens(bearer.New(tokens))
}

// agentTokens refuses a token store holding a principal an agent may not act as.
func agentTokens(s *TokenStore, err error) (*TokenStore, error) {
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	for i, p := range s.Principals() {
		if err := checkAgent(p); err != nil {
			return nil, fmt.Errorf("mcpserver: token %d: %w", i, err)
		}
	}
	return s, nil
}

// principalKey is the key of the principal in a bearer token's auth.TokenInfo.Extra.
const principalKey = "densemem.principal"

// Defaults of HTTPOptions.
const (
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxSessions    = 1000
	DefaultBodyTimeout    = 30 * time.Second
)

// HTTPOptions bound the sessions and requests of HTTPHandler. Zero fields take the defaults.
type HTTPOptions struct {
	// SessionTimeout closes a session that received no request for this long (DefaultSessionTimeout;
	// negative: never). A closed session's next request gets 404 and the client starts a new one.
	SessionTimeout time.Duration
	// MaxSessions bounds the sessions open at once (DefaultMaxSessions): a request that would open
	// one more gets 503 with a JSON-RPC error until a session closes or expires.
	MaxSessions int
	// BodyTimeout bounds the reading of one request's body (DefaultBodyTimeout), and MaxMessageBytes
	// its size (DefaultMaxMessageBytes): a slower body gets 408, a larger one 413. Responses,
	// including long-lived event streams, are not bounded by either.
	BodyTimeout     time.Duration
	MaxMessageBytes int64
	// Logger receives the SDK's HTTP logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns o with every zero field set to its default.
func (o *HTTPOptions) withDefaults() HTTPOptions {
	var out HTTPOptions
	if o != nil {
		out = *o
	}
	if out.SessionTimeout == 0 {
		out.SessionTimeout = DefaultSessionTimeout
	}
	if out.MaxSessions <= 0 {
		out.MaxSessions = DefaultMaxSessions
	}
	if out.BodyTimeout <= 0 {
		out.BodyTimeout = DefaultBodyTimeout
	}
	if out.MaxMessageBytes <= 0 {
		out.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}

// HTTPHandler serves the tools over the SDK's streamable HTTP transport. Every request must carry
// "Authorization: Bearer <token>" with a token of tokens: a missing or unknown token gets 401 with
// "WWW-Authenticate: Bearer" and no tool runs; a session stays bound to the principal of the token
// that opened it (another token's request on it gets 403). Sessions expire when idle and are capped,
// and request bodies are bounded in time and size (opts, nil for the defaults).
func HTTPHandler(client *densemem.Client, tokens *TokenStore, opts *HTTPOptions) (http.Handler, error) {
	if tokens.Len() == 0 {
		return nil, errors.New("mcpserver: HTTPHandler needs at least one token")
	}
	o := opts.withDefaults()
	s, err := New(client, Options{Principal: TokenPrincipal, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	timeout := o.SessionTimeout
	if timeout < 0 {
		timeout = 0
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{SessionTimeout: timeout, Logger: o.Logger})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, ok := tokens.Lookup(token)
		if !ok {
			return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: string(p.TeamID) + "/" + string(p.ProfileID),
			Extra: map[string]any{principalKey: p}}, nil
	}
	authed := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sdk)
	return &httpHandler{server: s, tokens: tokens, next: authed, opts: o}, nil
}

// httpHandler is HTTPHandler's front: the bearer challenge, the session cap and the body bounds, in
// front of the SDK's bearer-token middleware and streamable handler.
type httpHandler struct {
	server *mcp.Server
	tokens *TokenStore
	next   http.Handler
	opts   HTTPOptions

	// opening serialises the requests that may open a session (POSTs without a session ID), so that
	// counting the open sessions and opening one is one step. Their bodies are read before it is
	// taken, and their answers are short, so a slow client cannot hold it long.
	opening sync.Mutex
}

// ServeHTTP implements http.Handler.
func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, hasToken := bearer.FromHeader(r.Header.Get("Authorization"))
	if _, ok := h.tokens.Lookup(token); !ok {
		challenge := `Bearer realm="dense-mem"`
		if hasToken {
			challenge += `, error="invalid_token", error_description="unknown bearer token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "a known bearer token is required (Authorization: Bearer <token>)", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost {
		if !h.readBody(w, r) {
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" {
			h.opening.Lock()
			defer h.opening.Unlock()
			if h.full() {
				w.Header().Set("Retry-After", "60")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write(errorReply(nil, CodeStartupFailed,
					fmt.Sprintf("the server has %d sessions open, its limit: retry later", h.opts.MaxSessions)))
				return
			}
		}
	}
	h.next.ServeHTTP(w, r)
}

// readBody reads r's body within the body timeout and size bound and replaces it by what was read;
// false when it answered the request instead.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request) bool {
	rc := http.NewResponseController(w)
	timed := rc.SetReadDeadline(time.Now().Add(h.opts.BodyTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxMessageBytes))
	if timed {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("the request body is longer than %d bytes", h.opts.MaxMessageBytes), http.StatusRequestEntityTooLarge)
		return false
	case err != nil:
		w.Header().Set("Connection", "close")
		http.Error(w, "the request body was not received in time", http.StatusRequestTimeout)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// full reports whether the open sessions reach the cap.
func (h *httpHandler) full() bool {
	open := 0
	for range h.server.Sessions() {
		open++
	}
	return open >= h.opts.MaxSessions
}

// TokenPrincipal is the Options.Principal of the server behind HTTPHandler: the principal of the
// bearer token the request was authenticated with.
func TokenPrincipal(_ context.Context, req *mcp.CallToolRequest) (densemem.Principal, error) {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return densemem.Principal{}, errors.New("the request carries no bearer token")
	}
	p, ok := req.Extra.TokenInfo.Extra[principalKey].(densemem.Principal)
	if !ok {
		return densemem.Principal{}, errors.New("the bearer token names no principal")
	}
	return p, nil
}

package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/bearer"
)

// TokenStore maps bearer tokens to principals by their SHA-256 hashes (the same type as
// mcpserver.TokenStore). A console token may be bound to a profile of a team or, with "host": true
// and no profile_id, to the team's host.
type TokenStore = bearer.Store

// Token is one entry of a token file.
type Token = bearer.Token

// LoadTokens reads a token file: a JSON array of {"token_sha256": "<hex>", "team_id": "...",
// "profile_id": "..."} or {"token_sha256": "<hex>", "team_id": "...", "host": true}.
func LoadTokens(path string) (*TokenStore, error) { return bearer.Load(path) }

// NewTokenStore returns a store of tokens (malformed hashes, entries without a principal and
// duplicates are refused).
func NewTokenStore(tokens []Token) (*TokenStore, error) { return bearer.New(tokens) }

// HashToken returns the hex SHA-256 of a bearer token, as a token file stores it.
func HashToken(token string) string { return bearer.Hash(token) }

// Defaults of Options.
const (
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxSessions    = 1000
	DefaultPageSize       = 20
)

// Options configure Handler. Tokens is required; zero fields take the defaults.
type Options struct {
	// Tokens authenticates every request (a bearer header, or the token posted to the sign-in form).
	Tokens *TokenStore
	// SessionTimeout ends a browser session idle this long (DefaultSessionTimeout).
	SessionTimeout time.Duration
	// MaxSessions bounds the browser sessions held at once (DefaultMaxSessions): past it, the
	// session idle longest is ended.
	MaxSessions int
	// PageSize is the items of one page of a list (DefaultPageSize; at most the API's
	// Limits.MaxPageItems, which the client enforces).
	PageSize int
	// SecureCookies marks the session cookie Secure even when the request did not arrive over TLS
	// (behind a TLS-terminating proxy). Requests over TLS always get a Secure cookie.
	SecureCookies bool
	// Clock is the time the console reads (session expiry, which floor applies to a case); nil means
	// time.Now. Pass the Client's clock.
	Clock func() time.Time
	// Logger receives errors the pages could not show in detail; nil discards them.
	Logger *slog.Logger
}

// Handler returns the console for client, read-only, authenticated by opts.Tokens.
func Handler(client *densemem.Client, opts *Options) (http.Handler, error) {
	if client == nil {
		return nil, errors.New("console: Handler needs a client")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Tokens.Len() == 0 {
		return nil, errors.New("console: Handler needs at least one token (Options.Tokens)")
	}
	o.SessionTimeout = positive(o.SessionTimeout, DefaultSessionTimeout)
	o.MaxSessions = positive(o.MaxSessions, DefaultMaxSessions)
	o.PageSize = positive(o.PageSize, DefaultPageSize)
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	views, err := parseViews()
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := &console{client: client, opts: o, views: views, sessions: newSessions(o.SessionTimeout, o.MaxSessions, o.Clock)}
	return secure(http.NewCrossOriginProtection().Handler(c.routes())), nil
}

// positive returns v, or def when v is not positive.
func positive[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// console is the handler's state: the client, the options, the parsed views and the sessions.
type console struct {
	client   *densemem.Client
	opts     Options
	views    views
	sessions *sessions
}

// routes maps every page. Reading pages need a principal; only sign-in and sign-out take a POST.
func (c *console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/console.css", serveCSS)
	mux.HandleFunc("GET /login", c.loginForm)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	mux.Handle("GET /{$}", c.page(func(r *request) error { return r.redirect("/cases") }))
	mux.Handle("GET /cases", c.page(c.casesPage))
	mux.Handle("GET /cases/{id}", c.page(c.casePage))
	mux.Handle("GET /review", c.page(c.reviewPage))
	mux.Handle("GET /relationships/{id}", c.page(c.tracePage))
	mux.Handle("GET /relationships/{id}/timeline", c.page(c.timelinePage))
	mux.Handle("GET /nightly", c.page(c.nightlyPage))
	mux.Handle("GET /search", c.page(c.searchPage))
	return mux
}

// csp is every response's Content-Security-Policy: nothing but the handler's own stylesheet and
// images, no script, no frames, forms posting only to the console.
const csp = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'"

// secure sets the security headers of every response.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

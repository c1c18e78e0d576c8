package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/mcpserver"
)

// Bounds of the MCP HTTP server, beside mcpserver.HTTPOptions'.
const (
	defaultReadHeaderTimeout = 10 * time.Second
	defaultIdleTimeout       = 2 * time.Minute
	maxHeaderBytes           = 64 << 10
)

// mcp serves the MCP adapter: over stdio for one principal (--team, --profile), or over HTTP with
// bearer tokens mapped to principals by a token file (tokens stored hashed; mcpserver.HashToken).
func (c *cli) mcp(ctx context.Context, args []string) error {
	s := c.sub("mcp", "")
	fs := s.fs
	stdio := fs.Bool("stdio", false, "serve on standard input and output, as one principal")
	team := fs.String("team", "", "with --stdio: the team of the principal (required)")
	profile := fs.String("profile", "", "with --stdio: the profile the session acts as (required)")
	addr := fs.String("http", "", "serve the streamable HTTP transport on this address, e.g. 127.0.0.1:8080")
	tokensPath := fs.String("tokens", "", "with --http: the token file, a JSON array of "+
		`{"token_sha256": "<hex>", "team_id": "...", "profile_id": "..."} (required)`)
	hash := fs.String("hash-token", "", "print the token_sha256 of this token for a token file, and exit")
	sessionTimeout := fs.Duration("session-timeout", mcpserver.DefaultSessionTimeout, "with --http: close a session idle this long")
	maxSessions := fs.Int("max-sessions", mcpserver.DefaultMaxSessions, "with --http: the most sessions open at once")
	bodyTimeout := fs.Duration("body-timeout", mcpserver.DefaultBodyTimeout, "with --http: the longest a request body may take to arrive")
	headerTimeout := fs.Duration("read-header-timeout", defaultReadHeaderTimeout, "with --http: the longest request headers may take to arrive")
	idleTimeout := fs.Duration("idle-timeout", defaultIdleTimeout, "with --http: close a keep-alive connection idle this long")
	if _, err := s.parse(args, 0); err != nil {
		return err
	}
	switch {
	case *hash != "":
		return c.print(mcpHash{TokenSHA256: mcpserver.HashToken(*hash)}, func() { fmt.Fprintln(c.stdout, mcpserver.HashToken(*hash)) })
	case *stdio == (*addr != ""):
		return fmt.Errorf("%w: exactly one of --stdio and --http", errUsage)
	case *stdio:
		return c.serveStdio(ctx, *s.url, *team, *profile)
	}
	tokens, client, done, err := c.tokenClient(ctx, *s.url, *tokensPath, mcpserver.LoadTokens, mcpserver.CheckPrincipal)
	if err != nil {
		return err
	}
	defer done()
	h, err := mcpserver.HTTPHandler(client, tokens, &mcpserver.HTTPOptions{SessionTimeout: *sessionTimeout,
		MaxSessions: *maxSessions, BodyTimeout: *bodyTimeout, Logger: c.logger()})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: *headerTimeout, IdleTimeout: *idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	return c.serveHTTP(ctx, srv, *addr, "mcp")
}

// tokenClient loads the token file at path (required) with load, opens the database at url and
// checks every token's principal there; done closes the client.
func (c *cli) tokenClient(ctx context.Context, url, path string, load func(string) (*mcpserver.TokenStore, error),
	check func(context.Context, *densemem.Client, densemem.Principal) error) (*mcpserver.TokenStore, *densemem.Client, func(), error) {
	if err := required(map[string]string{"tokens": path}); err != nil {
		return nil, nil, nil, err
	}
	tokens, err := load(path)
	if err != nil {
		return nil, nil, nil, err
	}
	client, done, err := c.client(ctx, url, "")
	if err != nil {
		return nil, nil, nil, err
	}
	for i, p := range tokens.Principals() {
		if err := check(ctx, client, p); err != nil {
			done()
			return nil, nil, nil, fmt.Errorf("token file entry %d: %w", i, err)
		}
	}
	return tokens, client, done, nil
}

// mcpHash is what mcp --hash-token --json prints.
type mcpHash struct {
	TokenSHA256 string `json:"token_sha256"`
}

// serveStdio serves the adapter on stdio as the principal team/profile. A failure to start (no
// database, an unmigrated schema, a missing flag, an unknown or disabled profile) is served to the
// MCP client as the error of its initialize request, naming the fix, and then returned.
func (c *cli) serveStdio(ctx context.Context, url, team, profile string) error {
	fail := func(reason error) error {
		reason = redactErr(reason, url)
		fmt.Fprintf(c.stderr, "densemem mcp: %v\n", reason)
		_ = mcpserver.ServeStartupError(ctx, c.stdioTransport(), reason)
		return reason
	}
	if err := required(map[string]string{"team": team, "profile": profile}); err != nil {
		return fail(fmt.Errorf("%w: add \"--team\", \"<team ID>\", \"--profile\", \"<profile ID>\" to the server's args "+
			"(densemem team list, densemem profile list --team T)", err))
	}
	client, done, err := c.client(ctx, url, "")
	if err != nil {
		return fail(startupFix(err))
	}
	defer done()
	p := densemem.Principal{TeamID: densemem.TeamID(team), ProfileID: densemem.ProfileID(profile)}
	if err := mcpserver.CheckPrincipal(ctx, client, p); err != nil {
		return fail(err)
	}
	return mcpserver.Serve(ctx, client, p, c.stdioTransport())
}

// stdioTransport is the MCP transport on the command's standard input and output.
func (c *cli) stdioTransport() *mcpserver.LineTransport {
	return &mcpserver.LineTransport{Reader: c.stdin, Writer: c.stdout}
}

// startupFix adds to an error opening the database what the user should do about it.
func startupFix(err error) error {
	switch {
	case errors.Is(err, densemem.ErrNotMigrated):
		return err // its text names `densemem migrate up`
	case errors.Is(err, densemem.ErrUnavailable):
		return fmt.Errorf("%w: is PostgreSQL running where %s points? Check the host and port", err, envDatabaseURL)
	case errors.Is(err, densemem.ErrMisconfigured):
		return fmt.Errorf("%w: check %s (user, password, database name, parameters)", err, envDatabaseURL)
	}
	return err
}

// serveHTTP serves srv on addr until ctx is done; name is the subcommand, for its first line.
func (c *cli) serveHTTP(ctx context.Context, srv *http.Server, addr, name string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "densemem %s: serving on http://%s\n", name, ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

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

// mcp serves the MCP adapter: over stdio for one principal (--team, --profile), or over HTTP with
// bearer tokens mapped to principals by a token file (tokens stored hashed; mcpserver.HashToken).
func (c *cli) mcp(ctx context.Context, args []string) error {
	fs, url := c.flags("mcp", "")
	stdio := fs.Bool("stdio", false, "serve on standard input and output, as one principal")
	team := fs.String("team", "", "with --stdio: the team of the principal (required)")
	profile := fs.String("profile", "", "with --stdio: the profile the session acts as (required)")
	addr := fs.String("http", "", "serve the streamable HTTP transport on this address, e.g. :8080")
	tokensPath := fs.String("tokens", "", "with --http: the token file, a JSON array of "+
		`{"token_sha256": "<hex>", "team_id": "...", "profile_id": "..."} (required)`)
	hash := fs.String("hash-token", "", "print the token_sha256 of this token for a token file, and exit")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *hash != "":
		fmt.Fprintln(c.stdout, mcpserver.HashToken(*hash))
		return nil
	case *stdio == (*addr != ""):
		return fmt.Errorf("%w: exactly one of --stdio and --http", errUsage)
	case *stdio:
		if err := required(map[string]string{"team": *team, "profile": *profile}); err != nil {
			return err
		}
	default:
		if err := required(map[string]string{"tokens": *tokensPath}); err != nil {
			return err
		}
	}
	client, done, err := c.client(ctx, *url, "")
	if err != nil {
		return err
	}
	defer done()
	if *stdio {
		return mcpserver.ServeStdio(ctx, client, densemem.Principal{TeamID: densemem.TeamID(*team), ProfileID: densemem.ProfileID(*profile)})
	}
	return c.serveHTTP(ctx, client, *addr, *tokensPath)
}

// serveHTTP serves the adapter's HTTP handler on addr until ctx is done.
func (c *cli) serveHTTP(ctx context.Context, client *densemem.Client, addr, tokensPath string) error {
	tokens, err := mcpserver.LoadTokens(tokensPath)
	if err != nil {
		return err
	}
	h, err := mcpserver.HTTPHandler(client, tokens)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(c.stderr, "densemem mcp: serving on http://%s\n", ln.Addr())
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

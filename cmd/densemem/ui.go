package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/console"
	"github.com/densemem/densemem/mcpserver"
)

// ui serves the operator console (package console) on --http, read-only, for the principals of a
// token file: a profile of a team, or a team's host ("host": true).
func (c *cli) ui(ctx context.Context, args []string) error {
	s := c.sub("ui", "")
	fs := s.fs
	addr := fs.String("http", "127.0.0.1:8080", "the address to serve the console on")
	tokensPath := fs.String("tokens", "", "the token file, a JSON array of "+
		`{"token_sha256": "<hex>", "team_id": "...", "profile_id": "..."} or {"token_sha256": "<hex>", "team_id": "...", "host": true} (required)`)
	hash := fs.String("hash-token", "", "print the token_sha256 of this token for a token file, and exit")
	sessionTimeout := fs.Duration("session-timeout", console.DefaultSessionTimeout, "end a browser session idle this long")
	secure := fs.Bool("secure-cookies", false, "mark the session cookie Secure (behind a TLS-terminating proxy)")
	if _, err := s.parse(args, 0); err != nil {
		return err
	}
	if *hash != "" {
		return c.print(mcpHash{TokenSHA256: console.HashToken(*hash)}, func() { fmt.Fprintln(c.stdout, console.HashToken(*hash)) })
	}
	tokens, client, done, err := c.tokenClient(ctx, *s.url, *tokensPath, console.LoadTokens, checkConsolePrincipal)
	if err != nil {
		return err
	}
	defer done()
	h, err := console.Handler(client, &console.Options{Tokens: tokens, SessionTimeout: *sessionTimeout, SecureCookies: *secure,
		Logger: c.logger()})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: defaultReadHeaderTimeout, IdleTimeout: defaultIdleTimeout,
		MaxHeaderBytes: maxHeaderBytes}
	return c.serveHTTP(ctx, srv, *addr, "ui")
}

// checkConsolePrincipal reports why p cannot sign in to the console: a host token's team that does
// not exist, or a profile that is not an active profile of its team (mcpserver.CheckPrincipal).
func checkConsolePrincipal(ctx context.Context, client *densemem.Client, p densemem.Principal) error {
	if !p.Host {
		return mcpserver.CheckPrincipal(ctx, client, p)
	}
	_, err := client.TeamPolicy(ctx, p)
	if errors.Is(err, densemem.ErrNotFound) {
		return fmt.Errorf("there is no team %q in this database: check the team ID (densemem team list)", p.TeamID)
	}
	return err
}

// Package console is Dense-Mem's operator console: an http.Handler a host mounts (or `densemem ui`
// serves) showing one team's conflict cases, review items, traces, the nightly reviewer's decisions
// and search, as server-rendered pages with server-drawn SVG pictures.
//
// It reads through the public densemem.Client API only, as the principal of the bearer token that
// signed in (a profile of the team, or the team's host), so it sees exactly what that principal may
// read, one team at a time, every list a page within the API's bounds. It never writes.
//
// Authentication is the MCP HTTP server's: a token file of SHA-256 hashes, each bound to a principal
// (LoadTokens). A request may carry "Authorization: Bearer <token>"; a browser signs in once through
// a form that posts the token, and gets an HttpOnly, SameSite=Strict session cookie bound to the
// token's principal, kept in memory, expiring when idle.
//
// Pages need no JavaScript and load nothing from elsewhere: every response carries a strict
// Content-Security-Policy (default-src 'none'; the one stylesheet is served by the handler).
package console

package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem/console"
)

// get fetches path with the bearer token (none when ""), and returns the status and body.
func (s *seeded) get(token, path string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.server.URL+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return s.do(req)
}

func (s *seeded) do(req *http.Request) (int, string) {
	s.t.Helper()
	res, err := s.server.Client().Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		s.t.Errorf("%s %s: Content-Security-Policy %q, want default-src 'none'", req.Method, req.URL.Path, csp)
	}
	return res.StatusCode, string(b)
}

// page fetches path as the team's host and fails unless it is 200 with every want.
func (s *seeded) page(path string, wants ...string) string {
	s.t.Helper()
	status, body := s.get(hostToken, path)
	if status != http.StatusOK {
		s.t.Fatalf("GET %s: %d, want 200:\n%s", path, status, body)
	}
	for _, w := range wants {
		if !strings.Contains(body, w) {
			s.t.Errorf("GET %s lacks %q", path, w)
		}
	}
	return body
}

// TestPages: every page shows what the seeded team holds, read through the API as its host.
func TestPages(t *testing.T) {
	t.Parallel()
	s := seed(t)
	s.page("/cases", s.overdue, "staging", "overdue", "Policy in force", `id="bars"`)
	if body := s.page("/cases"); strings.Contains(body, s.resolved) {
		t.Error("/cases lists the resolved case; want open and overdue only")
	}
	s.page("/cases?status=resolved", s.resolved, "release (preferred)", "production", "meets it")
	s.page("/cases/"+s.resolved, "Event history", "system_conflict_reviewer", "resolved", "post_ttl_majority_floor_met",
		string(s.aliceMain), string(s.bobRelease), `id="bars"`)
	s.page("/review", "relationship_conflict", string(s.held), "Choices and their impact", "needs_review")
	trace := s.page("/relationships/"+string(s.bobRelease), "<mark>Since 2026-01-01 the production environment deploys from release.</mark>",
		`id="lineage"`, "corrects", "entailed", "Identity history", string(s.aliceMain))
	if strings.Contains(trace, "<script") {
		t.Error("the trace page has a script")
	}
	s.page("/relationships/"+string(s.aliceMain), "superseded", "conflict_resolved", "corrects", `id="lineage"`)
	s.page("/relationships/"+string(s.aliceMain)+"/timeline", `id="timeline"`, "cutoff 2026-01-01", "superseded", "bob: production deploys_from release", "carol: production")
	s.page("/relationships/"+string(s.splitInto), "split", string(s.splitFrom), "alice: Mark works_on Billing (retracted)")
	s.page("/nightly", s.resolved, s.overdue, "release", "Run of 2026-01-13", "post_ttl_majority_floor_met", "overdue_no_qualifying_position")
	s.page("/search?q=production+deploys", "release", "current")
	s.page("/search?q=production+deploys&valid_at=2025-09-01", "main")
	if status, body := s.get(hostToken, "/search?q=x&valid_at=yesterday"); status != http.StatusBadRequest || !strings.Contains(body, "valid_at") {
		t.Errorf("a bad valid_at: %d, want 400 naming valid_at:\n%s", status, body)
	}
}

// TestIsolation: no page of one team shows another's rows, whatever ID the URL names, and every
// page refuses a request without a known token.
func TestIsolation(t *testing.T) {
	t.Parallel()
	s := seed(t)
	for _, path := range []string{"/cases/" + s.otherCase, "/relationships/" + string(s.otherRel),
		"/relationships/" + string(s.otherRel) + "/timeline"} {
		if status, body := s.get(hostToken, path); status != http.StatusNotFound || strings.Contains(body, "qa") {
			t.Errorf("acme's host GET %s: %d, want 404 without the other team's data", path, status)
		}
	}
	for _, path := range []string{"/cases/" + s.resolved, "/relationships/" + string(s.bobRelease)} {
		if status, _ := s.get(otherToken, path); status != http.StatusNotFound {
			t.Errorf("the other team's host GET %s: %d, want 404", path, status)
		}
	}
	for _, path := range []string{"/cases", "/nightly", "/review", "/search?q=qa+deploys", "/review?profile=" + string(s.otherProfile),
		"/cases?status=open", "/nightly?status=open"} {
		if _, body := s.get(hostToken, path); strings.Contains(body, s.otherCase) || strings.Contains(body, string(s.otherRel)) {
			t.Errorf("acme's %s shows the other team's rows", path)
		}
	}
	for _, path := range []string{"/", "/cases", "/cases/" + s.resolved, "/review", "/relationships/" + string(s.bobRelease),
		"/relationships/" + string(s.bobRelease) + "/timeline", "/nightly", "/search?q=production"} {
		for _, token := range []string{"", "not-a-token"} {
			status, body := s.get(token, path)
			if status != http.StatusUnauthorized || strings.Contains(body, "production") || !strings.Contains(body, `action="/login"`) {
				t.Errorf("GET %s with token %q: %d, want 401 with the sign-in form and no data", path, token, status)
			}
		}
	}
	if status, _ := s.get(hostToken, "/cases?status=bogus"); status != http.StatusBadRequest {
		t.Errorf("an unknown status filter: %d, want 400", status)
	}
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodPost, s.server.URL+"/cases", nil)
	req.Header.Set("Authorization", "Bearer "+hostToken)
	if status, _ := s.do(req); status != http.StatusMethodNotAllowed {
		t.Errorf("POST /cases: %d, want 405 (read-only)", status)
	}
}

// TestProfileToken: a profile's token reads as that profile: its own review items, not another
// profile's without the vocabulary scope.
func TestProfileToken(t *testing.T) {
	t.Parallel()
	s := seed(t)
	status, body := s.get(aliceToken, "/review")
	if status != http.StatusOK || !strings.Contains(body, string(s.held)) || !strings.Contains(body, "signed in as alice") {
		t.Errorf("alice's review page: %d, want her held item", status)
	}
	if status, _ := s.get(aliceToken, "/review?profile="+string(s.bob.ProfileID)); status != http.StatusForbidden {
		t.Errorf("alice reading bob's items: %d, want 403", status)
	}
}

// TestBrowserSession: signing in with the form sets an HttpOnly, SameSite=Strict cookie bound to
// the token's principal; it expires when idle, sign-out ends it, and a cross-site sign-in is refused.
func TestBrowserSession(t *testing.T) {
	t.Parallel()
	s := seed(t)
	noRedirect := *s.server.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	login := func(token string, header map[string]string) *http.Response {
		req, _ := http.NewRequestWithContext(s.ctx, http.MethodPost, s.server.URL+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := login("wrong", nil); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("sign-in with an unknown token: %d with %d cookies, want 401 and none", res.StatusCode, len(res.Cookies()))
	}
	if res := login(hostToken, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site sign-in: %d, want 403", res.StatusCode)
	}
	res := login(hostToken, nil)
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("sign-in: %d with %d cookies, want 303 and one", res.StatusCode, len(res.Cookies()))
	}
	ck := res.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Value == hostToken || strings.Contains(ck.Value, hostToken) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not the token", ck)
	}
	withCookie := func() int {
		req, _ := http.NewRequestWithContext(s.ctx, http.MethodGet, s.server.URL+"/cases", nil)
		req.AddCookie(ck)
		status, _ := s.do(req)
		return status
	}
	if status := withCookie(); status != http.StatusOK {
		t.Fatalf("a page with the session cookie: %d, want 200", status)
	}
	s.clock.Advance(console.DefaultSessionTimeout)
	if status := withCookie(); status != http.StatusUnauthorized {
		t.Errorf("after %s idle: %d, want 401", console.DefaultSessionTimeout, status)
	}
	ck = login(hostToken, nil).Cookies()[0]
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodPost, s.server.URL+"/logout", nil)
	req.AddCookie(ck)
	if res, err := noRedirect.Do(req); err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %v %v", res, err)
	}
	if status := withCookie(); status != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d, want 401", status)
	}
	_ = time.Now
}

// TestPaging: with one item a page, every list links to its next page with the API's cursor, and
// the next page holds the rest.
func TestPaging(t *testing.T) {
	t.Parallel()
	s := seed(t)
	tokens, err := console.NewTokenStore([]console.Token{{TokenSHA256: console.HashToken(hostToken), TeamID: s.team, Host: true}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := console.Handler(s.client, &console.Options{Tokens: tokens, Clock: s.clock.Now, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.server = httptest.NewServer(h)
	t.Cleanup(s.server.Close)
	first := s.page("/nightly", "Next page")
	next := nextLink(t, first, `/nightly?after=`)
	second := s.page(next)
	if strings.Contains(first, s.resolved) == strings.Contains(second, s.resolved) {
		t.Errorf("the resolved case is on both pages or on neither")
	}
	trace := s.page("/relationships/"+string(s.aliceMain), "Next page of transitions")
	more := s.page(nextLink(t, trace, "/relationships/"+string(s.aliceMain)+"?after.transitions="), "superseded")
	if strings.Contains(more, "Next page of transitions") {
		t.Error("the second page of two transitions links to a third")
	}
	if _, err := console.Handler(s.client, &console.Options{}); err == nil {
		t.Error("Handler without tokens: want an error")
	}
}

// nextLink returns the href in body that starts with prefix, unescaped.
func nextLink(t *testing.T, body, prefix string) string {
	t.Helper()
	i := strings.Index(body, `href="`+prefix)
	if i < 0 {
		t.Fatalf("no link to %s", prefix)
	}
	href := body[i+len(`href="`):]
	return strings.ReplaceAll(href[:strings.Index(href, `"`)], "&amp;", "&")
}

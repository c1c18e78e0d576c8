package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/bearer"
)

// cookieName is the session cookie's name. Its value is 32 random bytes; the server keeps only
// their SHA-256, with the principal of the token that signed in.
const cookieName = "densemem_console"

// sessions are the browser sessions, in memory: a restart signs everyone out.
type sessions struct {
	mu      sync.Mutex
	byHash  map[[sha256.Size]byte]*session
	timeout time.Duration
	max     int
	clock   func() time.Time
}

type session struct {
	principal densemem.Principal
	lastSeen  time.Time
}

func newSessions(timeout time.Duration, maxSessions int, clock func() time.Time) *sessions {
	return &sessions{byHash: map[[sha256.Size]byte]*session{}, timeout: timeout, max: maxSessions, clock: clock}
}

// open starts a session for p and returns the cookie value. Past the cap, the session idle longest
// (after the expired ones) is ended.
func (s *sessions) open(p densemem.Principal) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	value := base64.RawURLEncoding.EncodeToString(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	for h, ss := range s.byHash {
		if now.Sub(ss.lastSeen) >= s.timeout {
			delete(s.byHash, h)
		}
	}
	for len(s.byHash) >= s.max {
		var oldest [sha256.Size]byte
		var at time.Time
		for h, ss := range s.byHash {
			if at.IsZero() || ss.lastSeen.Before(at) {
				oldest, at = h, ss.lastSeen
			}
		}
		delete(s.byHash, oldest)
	}
	s.byHash[sha256.Sum256([]byte(value))] = &session{principal: p, lastSeen: now}
	return value, nil
}

// lookup returns the principal of a live session and keeps it alive; an expired one is ended.
func (s *sessions) lookup(value string) (densemem.Principal, bool) {
	h := sha256.Sum256([]byte(value))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byHash[h]
	if !ok {
		return densemem.Principal{}, false
	}
	now := s.clock()
	if now.Sub(ss.lastSeen) >= s.timeout {
		delete(s.byHash, h)
		return densemem.Principal{}, false
	}
	ss.lastSeen = now
	return ss.principal, true
}

func (s *sessions) close(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byHash, sha256.Sum256([]byte(value)))
}

// principal authenticates r: a known bearer token in its Authorization header, else a live session
// cookie. A request with an Authorization header is judged by it alone.
func (c *console) principal(r *http.Request) (densemem.Principal, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		token, _ := bearer.FromHeader(h)
		return c.opts.Tokens.Lookup(token)
	}
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return densemem.Principal{}, false
	}
	return c.sessions.lookup(ck.Value)
}

// loginForm shows the sign-in form.
func (c *console) loginForm(w http.ResponseWriter, r *http.Request) {
	c.render(w, http.StatusOK, "login", pageData{Title: "Sign in"})
}

// maxLoginBytes bounds the sign-in form's body.
const maxLoginBytes = 4 << 10

// login signs in with the posted token: a known one opens a session bound to its principal.
func (c *console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	p, ok := c.opts.Tokens.Lookup(r.PostFormValue("token"))
	if !ok {
		c.render(w, http.StatusUnauthorized, "login", pageData{Title: "Sign in", Error: "That token is not known to this console."})
		return
	}
	value, err := c.sessions.open(p)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || c.opts.SecureCookies})
	http.Redirect(w, r, "/cases", http.StatusSeeOther)
}

// logout ends the session.
func (c *console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(cookieName); err == nil {
		c.sessions.close(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || c.opts.SecureCookies})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/densemem/densemem"
)

//go:embed templates/*.html static/console.css
var files embed.FS

// views are the parsed pages by name, each the layout with its own content.
type views map[string]*template.Template

// parseViews parses every page of templates/ into the layout.
func parseViews() (views, error) {
	pages, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := views{}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/partials.html", p)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

// funcs are the templates' helpers: formatting only.
var funcs = template.FuncMap{
	"stamp": stamp,
	"stampp": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return stamp(*t)
	},
	"who":  func(id densemem.ProfileID) string { return string(id) },
	"span": span,
	"pct":  func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"query": func(kv ...string) template.URL {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				q.Set(kv[i], kv[i+1])
			}
		}
		return template.URL("?" + q.Encode())
	},
}

// span is a duration as a reader says it: whole days as days, else Go's spelling.
func span(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d > 0 && d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}

// stamp is a time as the console shows it: UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// pageData is what the layout shows around a page's content.
type pageData struct {
	Title string
	// Who names the signed-in principal and Team its team; both empty on the sign-in page.
	Who   string
	Team  densemem.TeamID
	Nav   string
	Error string
	Body  any
}

// render executes view into a buffer first, so a template error never sends half a page. who names
// profiles (nil: by their IDs).
func (c *console) render(w http.ResponseWriter, status int, view string, d pageData, who ...func(densemem.ProfileID) string) {
	var buf bytes.Buffer
	t := c.views[view]
	if len(who) > 0 {
		var err error
		if t, err = t.Clone(); err == nil {
			t = t.Funcs(template.FuncMap{"who": who[0]})
		}
	}
	if err := t.Execute(&buf, d); err != nil {
		c.opts.Logger.Error("console: render", "view", view, "err", err)
		http.Error(w, "the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// request is one authenticated page request.
type request struct {
	ctx       context.Context
	w         http.ResponseWriter
	r         *http.Request
	c         *console
	principal densemem.Principal
	names     map[densemem.ProfileID]string
}

// who names a profile of the team by its name, read once per request (the first page of
// ListProfiles, Limits.MaxPageItems of them; a profile past it is named by its ID).
func (rq *request) who(id densemem.ProfileID) string {
	if rq.names == nil {
		rq.names = map[densemem.ProfileID]string{}
		page, err := rq.c.client.ListProfiles(rq.ctx, rq.principal, densemem.ListProfilesRequest{Limit: maxProfileNames})
		if err == nil {
			for _, p := range page.Profiles {
				rq.names[p.ProfileID] = p.Name
			}
		}
	}
	if n, ok := rq.names[id]; ok && n != "" {
		return n
	}
	return string(id)
}

// maxProfileNames is the one page of profiles a request reads to name them.
const maxProfileNames = 500

// show renders a page of the principal's team.
func (rq *request) show(view, title, nav string, body any) error {
	who := string(rq.principal.ProfileID)
	if rq.principal.Host {
		who = "host"
	}
	if !rq.principal.Host {
		who = rq.who(rq.principal.ProfileID)
	}
	rq.c.render(rq.w, http.StatusOK, view, pageData{Title: title, Who: who, Team: rq.principal.TeamID, Nav: nav, Body: body}, rq.who)
	return nil
}

func (rq *request) redirect(to string) error {
	http.Redirect(rq.w, rq.r, to, http.StatusSeeOther)
	return nil
}

// page wraps a page: it authenticates the request (401 with the sign-in form otherwise) and turns
// the page's error into a status and a message.
func (c *console) page(fn func(*request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := c.principal(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dense-mem console"`)
			c.render(w, http.StatusUnauthorized, "login", pageData{Title: "Sign in"})
			return
		}
		if err := fn(&request{ctx: r.Context(), w: w, r: r, c: c, principal: p}); err != nil {
			c.fail(w, r, err)
		}
	})
}

// fail answers a page's error: what the reader may fix is shown, anything else logged.
func (c *console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "the console could not read this page; the server log has the cause"
	var ve *densemem.ValidationError
	var ie *inputError
	switch {
	case errors.As(err, &ve), errors.As(err, &ie):
		status, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, densemem.ErrNotFound):
		status, msg = http.StatusNotFound, "there is no such item in this team"
	case errors.Is(err, densemem.ErrForbidden):
		status, msg = http.StatusForbidden, "the signed-in principal may not read this: "+err.Error()
	default:
		c.opts.Logger.Error("console: page", "path", r.URL.Path, "err", err)
	}
	c.render(w, status, "error", pageData{Title: http.StatusText(status), Error: msg})
}

// serveCSS serves the console's one stylesheet.
func serveCSS(w http.ResponseWriter, _ *http.Request) {
	css, _ := files.ReadFile("static/console.css")
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(css)
}

// inputError is a query parameter the console itself cannot read.
type inputError struct{ field, message string }

func (e *inputError) Error() string { return e.field + ": " + e.message }

func badInput(field, message string) error { return &inputError{field: field, message: message} }

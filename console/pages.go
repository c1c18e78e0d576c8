package console

import (
	"net/url"
	"strings"
	"time"

	"github.com/densemem/densemem"
)

// reviewBody is one page of open review items, grouped by profile as the list orders them.
type reviewBody struct {
	Profile string
	Groups  []reviewGroup
	Next    string
}

type reviewGroup struct {
	Profile densemem.ProfileID
	Items   []densemem.ReviewItem
}

// reviewPage lists a page of open review items: every profile's for the host (or one profile's with
// ?profile=), the signed-in profile's own otherwise.
func (c *console) reviewPage(rq *request) error {
	q := rq.r.URL.Query()
	profile := densemem.ProfileID(q.Get("profile"))
	page, err := c.client.ListReviewItems(rq.ctx, rq.principal, densemem.ListReviewItemsRequest{ProfileID: profile,
		Limit: c.opts.PageSize, After: q.Get("after")})
	if err != nil {
		return err
	}
	body := reviewBody{Profile: string(profile), Next: page.NextAfter}
	for _, it := range page.ReviewItems {
		if n := len(body.Groups); n == 0 || body.Groups[n-1].Profile != it.ProfileID {
			body.Groups = append(body.Groups, reviewGroup{Profile: it.ProfileID})
		}
		g := &body.Groups[len(body.Groups)-1]
		g.Items = append(g.Items, it)
	}
	return rq.show("review", "Open review items", "review", body)
}

// searchBody is the search form and, when a query was given, Recall's answer.
type searchBody struct {
	Query, ValidAt, KnownAt string
	Asked                   bool
	Result                  *densemem.RecallResponse
}

// searchPage runs Recall with the form's query and optional valid_at and known_at instants.
func (c *console) searchPage(rq *request) error {
	q := rq.r.URL.Query()
	body := searchBody{Query: q.Get("q"), ValidAt: q.Get("valid_at"), KnownAt: q.Get("known_at")}
	if strings.TrimSpace(body.Query) == "" {
		return rq.show("search", "Search", "search", body)
	}
	req := densemem.RecallRequest{Query: body.Query}
	var err error
	if req.ValidAt, err = instant("valid_at", body.ValidAt); err != nil {
		return err
	}
	if req.KnownAt, err = instant("known_at", body.KnownAt); err != nil {
		return err
	}
	if body.Result, err = c.client.Recall(rq.ctx, rq.principal, req); err != nil {
		return err
	}
	body.Asked = true
	return rq.show("search", "Search: "+body.Query, "search", body)
}

// instant reads a form's time: empty for none, a date (midnight UTC), a browser's local date-time
// (taken as UTC) or RFC 3339.
func instant(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, badInput(field, "is not a date (2026-01-05), a date and time (2026-01-05T14:30) or an RFC 3339 instant")
}

// traceAfter reads a trace page's cursors: every query parameter "after.<list>".
func traceAfter(q url.Values) map[string]string {
	var out map[string]string
	for k, v := range q {
		if list, ok := strings.CutPrefix(k, "after."); ok && len(v) > 0 && v[0] != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[list] = v[0]
		}
	}
	return out
}

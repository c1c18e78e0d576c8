package console

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem/conflict"
)

// wellFormed fails unless svg parses as XML.
func wellFormed(t *testing.T, name, svg string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Errorf("%s: not well-formed: %v\n%s", name, err, svg)
			}
			return
		}
	}
}

func TestDrawBars(t *testing.T) {
	svg := string(DrawBars(Bars{Title: "case <1>", Floor: conflict.MajorityFloor, Bars: []Bar{
		{Label: `main & "old"`, Groups: 1, Needed: 3}, {Label: "release", Groups: 2, Needed: 2, Preferred: true}}}))
	wellFormed(t, "bars", svg)
	for _, want := range []string{`role="img"`, "<title", "case &lt;1&gt;", "main &amp; &#34;old&#34;", "floor 2 groups, &gt;50%",
		`fill="#2e7d4f"`, "main &amp; &#34;old&#34;: 1 group(s), needs 3."} {
		if !strings.Contains(svg, want) {
			t.Errorf("bars lack %q:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "style=") {
		t.Error("bars use a style attribute, which the Content-Security-Policy refuses")
	}
	// One tick for the position short of the floor, none for the one that meets it, plus the floor.
	if n := strings.Count(svg, `stroke="#b3261e" stroke-width="2"`); n != 1 {
		t.Errorf("%d shortfall ticks, want 1", n)
	}
}

func TestDrawTimeline(t *testing.T) {
	d := func(s string) *time.Time { v, _ := time.Parse(time.DateOnly, s); return &v }
	svg := string(DrawTimeline(Timeline{Title: "production deploys_from", Now: *d("2026-02-01"), Cutoff: d("2026-01-01"), Rows: []TimelineRow{
		{Label: "alice: main", ValidFrom: d("2025-06-01"), ValidTo: d("2026-01-01"), LearntAt: *d("2025-06-02"), ClosedAt: d("2026-01-13"), ClosedBy: "superseded"},
		{Label: "bob: release", ValidFrom: d("2026-01-01"), LearntAt: *d("2026-01-05")},
	}}))
	wellFormed(t, "timeline", svg)
	for _, want := range []string{"cutoff 2026-01-01", "superseded", "alice: main valid 2025-06-01 to 2026-01-01, recorded 2025-06-02, superseded 2026-01-13.",
		"bob: release valid 2026-01-01 to now"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if n := strings.Count(svg, `class="valid"`); n != 2 {
		t.Errorf("%d validity bars, want 2", n)
	}
	if n := strings.Count(svg, "<path"); n != 1 {
		t.Errorf("%d closing crosses, want 1 (only main was closed)", n)
	}
}

func TestDrawLineage(t *testing.T) {
	svg := string(DrawLineage(Lineage{Title: "lineage", Center: LineageNode{ID: "rel_b", Label: "bob: release"},
		Nodes: []LineageNode{{ID: "rel_c", Label: "carol", Href: "/relationships/rel_c"}, {ID: "rel_a", Label: "alice", Href: "/relationships/rel_a"}},
		Edges: []LineageEdge{{From: "rel_c", To: "rel_b", Kind: "confirms"}, {From: "rel_b", To: "rel_a", Kind: "corrects"},
			{From: "rel_c", To: "rel_b", Kind: "adopts_evidence_from"}}}))
	wellFormed(t, "lineage", svg)
	for _, want := range []string{`<a href="/relationships/rel_c">`, `<a href="/relationships/rel_a">`, "confirms, adopts_evidence_from",
		"corrects", "rel_b corrects rel_a."} {
		if !strings.Contains(svg, want) {
			t.Errorf("lineage lacks %q", want)
		}
	}
	if n := strings.Count(svg, "<rect"); n != 3 {
		t.Errorf("%d nodes, want 3 (each relationship once)", n)
	}
}

func TestClip(t *testing.T) {
	if got := clip("production deploys_from", 10); got != "productio…" {
		t.Errorf("clip = %q", got)
	}
	if got := clip("ok", 10); got != "ok" {
		t.Errorf("clip = %q", got)
	}
}

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7 days", 24 * time.Hour: "1 day", 36 * time.Hour: "36h0m0s"} {
		if got := span(d); got != want {
			t.Errorf("span(%s) = %q, want %q", d, got, want)
		}
	}
}

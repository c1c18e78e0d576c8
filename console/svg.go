package console

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/densemem/densemem/conflict"
)

// The pictures are drawn as inline SVG from plain structs, with presentation attributes only (no
// style attributes, which the Content-Security-Policy refuses) and a <title> and <desc> for readers
// that cannot see them; each page also shows the same facts as text.

// svgDoc accumulates one SVG picture.
type svgDoc struct {
	b strings.Builder
}

func newSVG(width, height int, label, id, desc string) *svgDoc {
	d := &svgDoc{}
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" class="picture" id="%s" role="img" width="%d" height="%d" viewBox="0 0 %d %d" aria-labelledby="%s-title %s-desc">`,
		esc(id), width, height, width, height, esc(id), esc(id))
	fmt.Fprintf(&d.b, `<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`, esc(id), esc(label), esc(id), esc(desc))
	return d
}

func (d *svgDoc) add(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

func (d *svgDoc) text(x, y float64, anchor, class, s string) {
	d.add(`<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, esc(s))
}

// html closes the picture. Every text in it went through esc.
func (d *svgDoc) html() template.HTML {
	d.b.WriteString(`</svg>`)
	return template.HTML(d.b.String()) //nolint:gosec // built from escaped parts only
}

func esc(s string) string { return html.EscapeString(s) }

// Bars is a case's positions as bars of counted source groups against the floor that applies.
type Bars struct {
	Title string
	Floor conflict.Floor
	Bars  []Bar
}

// Bar is one position: its counted groups, the groups it would need to meet the floor (Groups when
// it meets it), and whether a resolution preferred it.
type Bar struct {
	Label     string
	Groups    int
	Needed    int
	Preferred bool
}

// DrawBars draws b: one horizontal bar per position, a dashed line at the floor's group count and,
// for a position short of the floor, a tick where it would meet it.
func DrawBars(b Bars) template.HTML {
	const left, width, rowH, top = 150.0, 460.0, 34.0, 26.0
	scale := float64(max(b.Floor.Groups, 1))
	for _, bar := range b.Bars {
		scale = max(scale, float64(bar.Groups), float64(bar.Needed))
	}
	scale *= 1.3 // room right of the longest bar and the floor for their labels
	unit := (width - 20) / scale
	height := int(top + rowH*float64(len(b.Bars)) + 30)
	desc := fmt.Sprintf("Floor: at least %d groups and more than %.0f%% of them.", b.Floor.Groups, b.Floor.Share*100)
	for _, bar := range b.Bars {
		desc += fmt.Sprintf(" %s: %d group(s), needs %d.", bar.Label, bar.Groups, bar.Needed)
	}
	d := newSVG(int(left+width+10), height, b.Title, "bars", desc)
	for i, bar := range b.Bars {
		y := top + rowH*float64(i)
		fill := "#5b7db1"
		if bar.Preferred {
			fill = "#2e7d4f"
		}
		d.text(left-8, y+17, "end", "label", clip(bar.Label, 22))
		d.add(`<rect x="%.1f" y="%.1f" width="%.1f" height="22" fill="%s"/>`, left, y+3, float64(bar.Groups)*unit, fill)
		d.text(left+float64(bar.Groups)*unit+6, y+18, "start", "value", fmt.Sprintf("%d", bar.Groups))
		if bar.Needed > bar.Groups {
			x := left + float64(bar.Needed)*unit
			d.add(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#b3261e" stroke-width="2"/>`, x, y, x, y+28)
		}
	}
	fx := left + float64(b.Floor.Groups)*unit
	d.add(`<line x1="%.1f" y1="12" x2="%.1f" y2="%d" stroke="#b3261e" stroke-dasharray="5 4" stroke-width="1.5"/>`, fx, fx, height-14)
	d.text(fx, 10, "middle", "floor", fmt.Sprintf("floor %d groups, >%.0f%%", b.Floor.Groups, b.Floor.Share*100))
	return d.html()
}

// Timeline is the bitemporal history of one key: each relationship's validity in the world
// against the interval in which the system recorded it as current.
type Timeline struct {
	Title string
	Rows  []TimelineRow
	// Cutoff is a resolved case's cutoff, marked across every row.
	Cutoff *time.Time
	// Now ends the open intervals.
	Now time.Time
}

// TimelineRow is one relationship: ValidFrom..ValidTo in the world (nil: since always, until
// further notice), LearntAt..ClosedAt in the system's record (ClosedAt nil while it is current),
// and why it closed ("superseded", "retracted", …).
type TimelineRow struct {
	Label              string
	ValidFrom, ValidTo *time.Time
	LearntAt           time.Time
	ClosedAt           *time.Time
	ClosedBy           string
}

// span returns the axis of t: from its earliest instant to Now, padded.
func (t Timeline) span() (time.Time, time.Time) {
	lo, hi := t.Now, t.Now
	see := func(at *time.Time) {
		if at != nil && at.Before(lo) {
			lo = *at
		}
		if at != nil && at.After(hi) {
			hi = *at
		}
	}
	for _, r := range t.Rows {
		see(r.ValidFrom)
		see(r.ValidTo)
		see(&r.LearntAt)
		see(r.ClosedAt)
	}
	see(t.Cutoff)
	pad := max(hi.Sub(lo)/20, time.Hour)
	return lo.Add(-pad), hi.Add(pad)
}

// DrawTimeline draws t: per relationship, a thick bar for its validity in the world and a thin bar
// below for the time the system held it, a cross where it was closed, and the cutoff as a line.
func DrawTimeline(t Timeline) template.HTML {
	const left, width, rowH, top = 270.0, 620.0, 44.0, 52.0
	lo, hi := t.span()
	x := func(at time.Time) float64 { return left + width*float64(at.Sub(lo))/float64(hi.Sub(lo)) }
	xp := func(at *time.Time, open float64) float64 {
		if at == nil {
			return open
		}
		return x(*at)
	}
	height := int(top + rowH*float64(len(t.Rows)) + 34)
	d := newSVG(int(left+width+110), height, t.Title, "timeline", timelineDesc(t))
	d.add(`<rect x="%.1f" y="4" width="14" height="10" fill="#5b7db1"/>`, left)
	d.text(left+18, 13, "start", "note", "true in the world")
	d.add(`<rect x="%.1f" y="6" width="14" height="6" fill="#8a8a8a"/>`, left+140)
	d.text(left+158, 13, "start", "note", "held by the system (× closed)")
	for i := 0; i <= 5; i++ {
		at := lo.Add(time.Duration(float64(hi.Sub(lo)) * float64(i) / 5))
		tx := x(at)
		d.add(`<line x1="%.1f" y1="34" x2="%.1f" y2="%d" stroke="#e3e6eb" stroke-width="1"/>`, tx, tx, height-16)
		d.text(tx, 30, "middle", "axis", at.UTC().Format(time.DateOnly))
	}
	for i, r := range t.Rows {
		y := top + rowH*float64(i)
		d.text(left-8, y+14, "end", "label", clip(r.Label, 40))
		vx1, vx2 := xp(r.ValidFrom, left), xp(r.ValidTo, left+width)
		d.add(`<rect class="valid" x="%.1f" y="%.1f" width="%.1f" height="14" fill="#5b7db1"/>`, vx1, y+2, max(vx2-vx1, 2))
		kx1, kx2 := x(r.LearntAt), xp(r.ClosedAt, x(t.Now))
		d.add(`<rect class="known" x="%.1f" y="%.1f" width="%.1f" height="7" fill="#8a8a8a"/>`, kx1, y+21, max(kx2-kx1, 3))
		if r.ClosedAt != nil {
			cx := x(*r.ClosedAt)
			d.add(`<path d="M%.1f %.1f l8 8 m0 -8 l-8 8" stroke="#b3261e" stroke-width="2"/>`, cx-4, y+20)
			d.text(cx+8, y+28, "start", "note", r.ClosedBy)
		}
	}
	if t.Cutoff != nil {
		cx := x(*t.Cutoff)
		d.add(`<line x1="%.1f" y1="36" x2="%.1f" y2="%d" stroke="#2e7d4f" stroke-dasharray="6 3" stroke-width="2"/>`, cx, cx, height-14)
		d.text(cx, float64(height-2), "middle", "floor", "cutoff "+t.Cutoff.UTC().Format(time.DateOnly))
	}
	return d.html()
}

func timelineDesc(t Timeline) string {
	var b strings.Builder
	b.WriteString("Thick bars: validity in the world. Thin bars: when the system held it.")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, " %s valid %s to %s, recorded %s", r.Label, day(r.ValidFrom, "always"), day(r.ValidTo, "now"), r.LearntAt.UTC().Format(time.DateOnly))
		if r.ClosedAt != nil {
			fmt.Fprintf(&b, ", %s %s", r.ClosedBy, r.ClosedAt.UTC().Format(time.DateOnly))
		}
		b.WriteString(".")
	}
	return b.String()
}

func day(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.DateOnly)
}

// Lineage is the graph around one relationship: supersessions, cross-references (corrects,
// challenges, confirms, adopts_evidence_from) and splits or merges, one hop out.
type Lineage struct {
	Title  string
	Center LineageNode
	Nodes  []LineageNode
	Edges  []LineageEdge
}

// LineageNode is one relationship: its ID, a short label, and the link to its trace.
type LineageNode struct {
	ID, Label, Href string
}

// LineageEdge is one arrow From → To with its kind.
type LineageEdge struct {
	From, To, Kind string
}

// DrawLineage draws g: the centre in the middle, relationships with an arrow into it on the left,
// those it points to on the right, each a link to its trace.
func DrawLineage(g Lineage) template.HTML {
	const w, nodeW, nodeH, rowH = 1000.0, 260.0, 40.0, 56.0
	var in, out []LineageNode
	kinds := map[string]string{}
	for _, e := range g.Edges {
		switch g.Center.ID {
		case e.To:
			kinds["in:"+e.From] = joinKind(kinds["in:"+e.From], e.Kind)
		case e.From:
			kinds["out:"+e.To] = joinKind(kinds["out:"+e.To], e.Kind)
		}
	}
	for _, n := range g.Nodes {
		if _, ok := kinds["in:"+n.ID]; ok {
			in = append(in, n)
		}
		if _, ok := kinds["out:"+n.ID]; ok {
			out = append(out, n)
		}
	}
	rows := max(len(in), len(out), 1)
	height := 20 + rowH*float64(rows)
	d := newSVG(int(w), int(height), g.Title, "lineage", lineageDesc(g))
	d.add(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#444"/></marker></defs>`)
	cx, cy := (w-nodeW)/2, (height-nodeH)/2
	for i, n := range in {
		y := 10 + rowH*float64(i) + (rowH-nodeH)/2
		d.edge(10+nodeW, y+nodeH/2, cx, cy+nodeH/2, kinds["in:"+n.ID])
		d.node(10, y, nodeW, nodeH, n, false)
	}
	for i, n := range out {
		y := 10 + rowH*float64(i) + (rowH-nodeH)/2
		d.edge(cx+nodeW, cy+nodeH/2, w-10-nodeW, y+nodeH/2, kinds["out:"+n.ID])
		d.node(w-10-nodeW, y, nodeW, nodeH, n, false)
	}
	d.node(cx, cy, nodeW, nodeH, g.Center, true)
	return d.html()
}

// clip shortens s to n characters, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func joinKind(a, b string) string {
	if a == "" || strings.Contains(a, b) {
		return a + b
	}
	return a + ", " + b
}

func (d *svgDoc) edge(x1, y1, x2, y2 float64, kind string) {
	d.add(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444" stroke-width="1.5" marker-end="url(#arrow)"/>`, x1, y1, x2, y2)
	d.text((x1+x2)/2, (y1+y2)/2-5, "middle", "note", kind)
}

func (d *svgDoc) node(x, y, w, h float64, n LineageNode, center bool) {
	fill, stroke := "#f4f6fa", "#5b7db1"
	if center {
		fill, stroke = "#e3ecf7", "#1f3f6e"
	}
	if n.Href != "" {
		d.add(`<a href="%s">`, esc(n.Href))
	}
	d.add(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6" fill="%s" stroke="%s" stroke-width="1.5"/>`, x, y, w, h, fill, stroke)
	d.text(x+w/2, y+16, "middle", "label", clip(n.Label, int(w/7)))
	d.text(x+w/2, y+32, "middle", "note", n.ID)
	if n.Href != "" {
		d.add(`</a>`)
	}
}

func lineageDesc(g Lineage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Lineage of %s (%s).", g.Center.ID, g.Center.Label)
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, " %s: %s.", n.ID, n.Label)
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, " %s %s %s.", e.From, e.Kind, e.To)
	}
	return b.String()
}

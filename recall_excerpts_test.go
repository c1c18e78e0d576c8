package densemem_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// TestRecallResultCapsItsExcerpts: a Recall result carries at most Limits.MaxRecallExcerpts (10)
// excerpts, the first in Trace's order, says how many it left out and gives the cursor of Trace's
// evidence list after its last; Trace from that cursor returns exactly the rest. At the default no
// result reaches 64 KiB, even with every excerpt at its longest and escaped in JSON at every byte's
// worst.
func TestRecallResultCapsItsExcerpts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const supports = densemem.DefaultMaxRecallExcerpts + 10 // uncapped, well over 64 KiB
	var id densemem.RelationshipID
	for i := range supports {
		f := deploy("excerpts", "main")
		// Each cited span is longer than an excerpt and made of characters JSON escapes to six bytes.
		f = withContent(f, fmt.Sprintf("%s %s %02d", f.content, strings.Repeat("<&>", 300), i))
		out := e.remember(e.A, f)
		if id != "" && out.RelationshipID != id {
			t.Fatalf("support %d made relationship %s, want %s", i, out.RelationshipID, id)
		}
		id = out.RelationshipID
		e.clock.Advance(time.Minute)
	}
	res := e.recall(e.A, "excerpts", nil, nil)
	r := resultFor(res, id)
	if r == nil {
		t.Fatalf("recall: %s not found", id)
	}
	if len(r.Evidence) != densemem.DefaultMaxRecallExcerpts || r.EvidenceOmitted != supports-densemem.DefaultMaxRecallExcerpts ||
		r.EvidenceNextAfter == "" {
		t.Fatalf("result: %d excerpts, %d omitted, cursor %q; want %d, %d and a cursor", len(r.Evidence), r.EvidenceOmitted,
			r.EvidenceNextAfter, densemem.DefaultMaxRecallExcerpts, supports-densemem.DefaultMaxRecallExcerpts)
	}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 64<<10 {
		t.Errorf("result is %d bytes of JSON, want at most 64 KiB", len(body))
	}
	// The excerpts are Trace's first evidence entries, and its page after the cursor is the rest.
	all := e.trace(e.A, id)
	var first, rest []densemem.FragmentID
	for _, ev := range all.Evidence {
		first = append(first, ev.FragmentID)
	}
	var shown []densemem.FragmentID
	for _, ex := range r.Evidence {
		shown = append(shown, ex.FragmentID)
	}
	if !slices.Equal(shown, first[:len(shown)]) {
		t.Errorf("excerpts %v, want Trace's first %v", shown, first[:len(shown)])
	}
	page, err := e.client.Trace(e.ctx, e.A, densemem.TraceRequest{RelationshipID: id,
		After: map[string]string{densemem.TraceListEvidence: r.EvidenceNextAfter}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Evidence {
		rest = append(rest, ev.FragmentID)
	}
	if !slices.Equal(rest, first[len(shown):]) {
		t.Errorf("Trace after the cursor: %v, want %v", rest, first[len(shown):])
	}
}

package densemem_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// TestRecallRanksACommonWordByRelevance: a word in many fragments is ranked by ts_rank of the
// evidence (decision 139), not found in creation order: the fragments that say it three and two
// times come first although they were recorded last, then the earliest of those that say it once.
func TestRecallRanksACommonWordByRelevance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	say := func(branch string, times int) densemem.RelationshipID {
		f := deploy("env-"+branch, branch)
		f = withContent(f, f.content+" Notes:"+strings.Repeat(" kestrel", times))
		e.clock.Advance(time.Minute)
		return e.remember(e.A, f).RelationshipID
	}
	var once []densemem.RelationshipID
	for i := range 40 {
		once = append(once, say(fmt.Sprintf("b%02d", i), 1))
	}
	thrice, twice := say("thrice", 3), say("twice", 2)
	res, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "kestrel", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if d := diff([]densemem.RelationshipID{thrice, twice, once[0]}, inOrder(res)); d != "" {
		t.Errorf("recall kestrel (-want +got):\n%s", d)
	}
}

// inOrder returns the IDs of a recall's results in rank order.
func inOrder(r *densemem.RecallResponse) []densemem.RelationshipID {
	out := []densemem.RelationshipID{}
	for _, x := range r.Results {
		out = append(out, x.Relationship.RelationshipID)
	}
	return out
}

// TestRecallFindsARareWordBesideACommonOne: an AND of a word in one fragment and a word in every
// fragment is driven by the rare one, so its match is found however many fragments hold the common
// word; a rare word and a common one that never meet find nothing. None of the words names an
// entity, so only the full-text branch can find them.
func TestRecallFindsARareWordBesideACommonOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 40 {
		e.clock.Advance(time.Minute)
		f := deploy(fmt.Sprintf("env-%02d", i), "main")
		e.remember(e.A, withContent(f, f.content+" Notes: kestrel."))
	}
	e.clock.Advance(time.Minute)
	f := deploy("quokka", "release")
	rare := e.remember(e.A, withContent(f, f.content+" Notes: wombat.")).RelationshipID
	res, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "what does wombat deploy from", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if d := diff([]densemem.RelationshipID{rare}, inOrder(res)); d != "" {
		t.Errorf("recall wombat AND deploy (-want +got):\n%s", d)
	}
	none, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "wombat kestrel", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Results) != 0 {
		t.Errorf("recall wombat AND kestrel: %v, want nothing", inOrder(none))
	}
}

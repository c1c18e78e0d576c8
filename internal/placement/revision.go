package placement

import (
	"fmt"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/store"
)

// Source revisions (DESIGN §13, decisions 111–114). An evidence item with previous_source_revision
// makes its call a revision of its source_key: at intake, under the source's lock, the call retires
// every fragment of the previous revision that is not retired yet, and the fragments it names in
// supersedes_fragment_ids, for the whole team; the ledger recomputes every relationship they
// supported (any owner's) before the call's own proposals are placed, so a relationship the new
// revision states again regains support from it in the same transaction.

// revision is one source revision of the request: its first item (the index problems name and whose
// fragment replaces the retired ones) and the fragments it names, with the path that names each.
type revision struct {
	store.SourceRevision
	item  int
	named map[evidence.FragmentID]string
}

// revisions returns the request's source revisions, one per revised source key, in item order.
func (in *Intake) revisions() []revision {
	var out []revision
	for i, ev := range in.req.Evidence {
		if !ev.Revises() {
			continue
		}
		k := slices.IndexFunc(out, func(r revision) bool { return r.Key == ev.SourceKey })
		if k < 0 {
			out = append(out, revision{SourceRevision: store.SourceRevision{Key: ev.SourceKey, Previous: ev.PreviousSourceRevision},
				item: i, named: map[evidence.FragmentID]string{}})
			k = len(out) - 1
		}
		for j, id := range ev.SupersedesFragmentIDs {
			if _, ok := out[k].named[id]; !ok {
				out[k].named[id] = fmt.Sprintf("evidence[%d].supersedes_fragment_ids[%d]", i, j)
				out[k].Supersedes = append(out[k].Supersedes, id)
			}
		}
	}
	return out
}

// Revisions returns the source revisions the request makes, for IntakeLock to lock and read.
func (in *Intake) Revisions() []store.SourceRevision {
	var out []store.SourceRevision
	for _, r := range in.revisions() {
		out = append(out, r.SourceRevision)
	}
	return out
}

// Revise checks the request's source revisions against the sources' states read under their locks
// (in the order Revisions returned them) and keeps the fragments to retire; it returns the conflict
// keys of every relationship they support, which the transaction must lock. A revision of a source
// another profile owns, of a previous revision with no fragment left to retire, naming a fragment
// that is not the caller's unretired fragment of that source, or supporting more than max
// relationships fails the call with a *ValidationError.
func (pl *Planner) Revise(states []store.SourceState, max int) ([]conflict.Key, error) {
	var ps request.Problems
	var keys []conflict.Key
	seen := map[conflict.Key]bool{}
	pl.retiring = nil
	for i, rev := range pl.in.revisions() {
		if i >= len(states) {
			break
		}
		st := states[i]
		p := fmt.Sprintf("evidence[%d]", rev.item)
		if st.Owner != "" && st.Owner != pl.Profile {
			ps.Add(p+".source_key", "source_key %q is owned by profile %s (it stored the first revision): only its owner may revise it",
				rev.Key, st.Owner)
			continue
		}
		retire := pl.checkFragments(&ps, p, rev, st.Fragments)
		if len(st.Relationships) > max {
			ps.Add(p+".previous_source_revision", "the fragments this revision retires support more than %d relationships "+
				"(Limits.MaxRevisionRelationships)", max)
			continue
		}
		pl.retiring = append(pl.retiring, retiring{revision: rev, fragments: retire})
		for _, r := range st.Relationships {
			if !seen[r.Key] {
				seen[r.Key] = true
				keys = append(keys, r.Key)
			}
		}
	}
	return keys, ps.Err()
}

// checkFragments checks the stored fragments of one revision and returns those it retires: the
// previous revision's unretired ones (at least one must be left) and the named ones, each of which
// must exist, be the caller's, belong to the revised source and not be retired.
func (pl *Planner) checkFragments(ps *request.Problems, p string, rev revision, frags []store.SourceFragment) []store.SourceFragment {
	var out []store.SourceFragment
	previous := 0
	byID := map[evidence.FragmentID]store.SourceFragment{}
	for _, f := range frags {
		byID[f.ID] = f
		if f.SourceKey == rev.Key && f.Revision == rev.Previous && !f.Retired {
			previous++
			out = append(out, f)
		}
	}
	if previous == 0 {
		ps.Add(p+".previous_source_revision", "source_key %q has no fragment of revision %q left to retire "+
			"(never stored, or already retired by another revision)", rev.Key, rev.Previous)
	}
	for _, id := range rev.Supersedes {
		f, ok := byID[id]
		q := rev.named[id]
		switch {
		case !ok:
			ps.Add(q, "no fragment %s in the team", id)
		case f.Author != pl.Profile:
			ps.Add(q, "fragment %s is profile %s's: a revision supersedes only the caller's own fragments", id, f.Author)
		case f.SourceKey != rev.Key:
			ps.Add(q, "fragment %s is not of source_key %q", id, rev.Key)
		case f.Retired:
			ps.Add(q, "fragment %s is already retired", id)
		case f.Revision != rev.Previous:
			out = append(out, f)
		}
	}
	return out
}

// retiring is one checked revision and the fragments it retires.
type retiring struct {
	revision
	fragments []store.SourceFragment
}

// retire writes the retirement of every fragment the request's revisions retire (once each), each
// replaced by the revision's first new fragment, and lets the ledger recompute what they supported.
// It runs after the call's fragments are planned and before its proposals are placed.
func (pl *Planner) retire(out *memtype.Placement) {
	var rows []store.RetirementRow
	done := map[evidence.FragmentID]bool{}
	for _, r := range pl.retiring {
		by := pl.fragments[r.item].ID
		for _, f := range r.fragments {
			if done[f.ID] {
				continue
			}
			done[f.ID] = true
			row := store.RetirementRow{Team: pl.Team, ID: pl.newID("ret"), FragmentID: f.ID, Cause: store.RetiredBySourceRevision,
				ReplacedBy: by, ActorKind: store.ActorProfile, ActorProfile: pl.Profile,
				Reason:   fmt.Sprintf("revision %q of source %q replaces revision %q", pl.req.Evidence[r.item].SourceRevision, r.Key, f.Revision),
				IngestID: pl.ingestID, CreatedAt: pl.Now}
			rows = append(rows, row)
			out.Retired = append(out.Retired, memtype.RetiredFragment{FragmentID: f.ID, RetirementID: row.ID, ReplacedBy: by})
		}
	}
	if len(rows) == 0 {
		return
	}
	first := len(pl.l.WS.Transitions)
	pl.l.Retire(rows)
	out.Recomputed = append(out.Recomputed, pl.l.Changes()[first:]...)
}

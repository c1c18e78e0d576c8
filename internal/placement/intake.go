package placement

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Intake is a validated Remember request reshaped for identity and predicate resolution: its
// mentions, the names it may write (to look up and to lock) and the entities it names by ID.
type Intake struct {
	req      *memtype.RememberRequest
	mentions map[string]identity.Mention // by ref
	order    []string                    // refs in request order
	// Names are the lookups of every name the call may write for a new entity: its name and aliases.
	Names []store.NameLookup
	// Known are the entities the request names by known_entity_id.
	Known []identity.EntityID
	// Adopt are the fragments the request adopts (evidence[i].adopt_fragment_id), each once.
	Adopt []evidence.FragmentID
	// adopted are the adopted fragments with their content, by evidence index (CheckAdopted).
	adopted map[int]store.FragmentRow
}

// NewIntake reshapes a validated request stated by profile by.
func NewIntake(req *memtype.RememberRequest, by identity.ProfileID) *Intake {
	in := &Intake{req: req, mentions: map[string]identity.Mention{}, adopted: map[int]store.FragmentRow{}}
	for _, ev := range req.Evidence {
		if ev.Adopts() && !slices.Contains(in.Adopt, ev.AdoptFragmentID) {
			in.Adopt = append(in.Adopt, ev.AdoptFragmentID)
		}
	}
	seen := map[store.NameLookup]bool{}
	for _, e := range req.Proposal.Entities {
		m := identity.Mention{Ref: e.Ref, Name: strings.TrimSpace(e.Name), Kind: e.EntityKind, Aliases: e.Aliases,
			Context: identity.NormalizeContext(e.IdentityContext), KnownID: e.KnownEntityID, DistinctFrom: e.DistinctFromEntityIDs, By: by}
		in.mentions[e.Ref] = m
		in.order = append(in.order, e.Ref)
		// Entities a mention is distinct from are read like known ones, so CheckKnown sees them exist.
		for _, id := range e.DistinctFromEntityIDs {
			if !slices.Contains(in.Known, id) {
				in.Known = append(in.Known, id)
			}
		}
		if m.KnownID != "" {
			in.Known = append(in.Known, m.KnownID)
			continue
		}
		// Every name the call may write for a new entity is locked: its name and its aliases.
		for _, name := range append([]string{m.Name}, m.Aliases...) {
			key := identity.NormalizeName(name)
			n := store.NameLookup{Kind: m.Kind, Normalized: key, Skeleton: identity.Skeleton(key)}
			if !seen[n] {
				seen[n] = true
				in.Names = append(in.Names, n)
			}
		}
	}
	return in
}

// Responses returns the conflict cases the request responds to.
func (in *Intake) Responses() []conflict.ID {
	var out []conflict.ID
	for _, r := range in.req.Proposal.Relationships {
		if r.ConflictResponse != nil && !slices.Contains(out, conflict.ID(r.ConflictResponse.ConflictID)) {
			out = append(out, conflict.ID(r.ConflictResponse.ConflictID))
		}
	}
	return out
}

// CheckKnown fails the call when a known_entity_id is not an entity of the caller's team of that
// kind, or a distinct_from_entity_ids entry is not an entity of the caller's team.
func (in *Intake) CheckKnown(known []identity.Entity) error {
	var ps request.Problems
	byID := map[identity.EntityID]identity.Entity{}
	for _, e := range known {
		byID[e.ID] = e
	}
	for i, e := range in.req.Proposal.Entities {
		for j, id := range e.DistinctFromEntityIDs {
			if _, ok := byID[id]; !ok {
				ps.Add(fmt.Sprintf("proposal.entities[%d].distinct_from_entity_ids[%d]", i, j), "%s is not an entity of the caller's team", id)
			}
		}
		if e.KnownEntityID == "" {
			continue
		}
		path := fmt.Sprintf("proposal.entities[%d].known_entity_id", i)
		switch k, ok := byID[e.KnownEntityID]; {
		case !ok:
			ps.Add(path, "%s is not an entity of the caller's team", e.KnownEntityID)
		case k.Kind != e.EntityKind:
			ps.Add(path, "%s is a %s, not a %s", e.KnownEntityID, k.Kind, e.EntityKind)
		}
	}
	return ps.Err()
}

// AdoptSources returns the source keys of the adopted fragments (after CheckAdopted), sorted, each
// once: the call locks them, so a source revision never misses a support it adds.
func (in *Intake) AdoptSources() []string {
	var out []string
	for _, f := range in.adopted {
		if f.SourceKey != "" && !slices.Contains(out, f.SourceKey) {
			out = append(out, f.SourceKey)
		}
	}
	slices.Sort(out)
	return out
}

// CheckAdopted fails the call when an adopted fragment is not one the caller's team may adopt
// (missing, another team's: the same problem, so nothing says whether it exists elsewhere), or when
// a citation of an adopted item does not fit the fragment's stored content. adoptable are the
// fragments read for the request (store.RememberPrepared.Adoptable), with their content, which the
// verifier's claims then cite.
func (in *Intake) CheckAdopted(adoptable []store.FragmentRow) error {
	var ps request.Problems
	byID := map[evidence.FragmentID]store.FragmentRow{}
	for _, f := range adoptable {
		byID[f.ID] = f
	}
	for i, ev := range in.req.Evidence {
		if !ev.Adopts() {
			continue
		}
		f, ok := byID[ev.AdoptFragmentID]
		if !ok {
			ps.Add(fmt.Sprintf("evidence[%d].adopt_fragment_id", i), "%s is not a fragment of the caller's team that may be adopted",
				ev.AdoptFragmentID)
			continue
		}
		in.adopted[i] = f
	}
	for i, r := range in.req.Proposal.Relationships {
		for j, c := range r.Evidence {
			if f, ok := in.adopted[c.EvidenceIndex]; ok {
				request.CheckSpan(&ps, fmt.Sprintf("proposal.relationships[%d].evidence[%d]", i, j), f.Content, c.EvidenceIndex,
					c.Start, c.End)
			}
		}
	}
	return ps.Err()
}

// content returns the text of request evidence item i: its content, or the adopted fragment's.
func (in *Intake) content(i int) string {
	if f, ok := in.adopted[i]; ok {
		return f.Content
	}
	return in.req.Evidence[i].Content
}

// resolution is one mention's resolution within a call.
type resolution struct {
	identity.Resolution
	entity identity.Entity // the resolved entity (reused, known or to be created)
}

// resolve resolves every mention in request order. A mention that creates an entity makes that
// entity a candidate for later mentions of the same call, so one call never creates twins.
func (in *Intake) resolve(candidates, known []identity.Entity) map[string]resolution {
	out := map[string]resolution{}
	byID := map[identity.EntityID]identity.Entity{}
	for _, e := range known {
		byID[e.ID] = e
	}
	pool := append([]identity.Entity{}, candidates...)
	for _, ref := range in.order {
		m := in.mentions[ref]
		if m.KnownID != "" {
			out[ref] = resolution{Resolution: identity.Resolution{Decision: identity.DecisionKnown, EntityID: m.KnownID}, entity: byID[m.KnownID]}
			continue
		}
		r := identity.Resolve(m, pool)
		res := resolution{Resolution: r}
		switch r.Decision {
		case identity.DecisionReused:
			for _, e := range pool {
				if e.ID == r.EntityID {
					res.entity = e
				}
			}
		case identity.DecisionCreated:
			// A placeholder ID marks the entity until the planner allocates the real one.
			res.entity = newEntity(identity.EntityID("new:"+ref), m)
			pool = append(pool, res.entity)
		}
		out[ref] = res
	}
	return out
}

// newEntity is the entity a mention creates: its name as canonical name and each alias whose key
// differs from every earlier name's key.
func newEntity(id identity.EntityID, m identity.Mention) identity.Entity {
	e := identity.Entity{ID: id, Kind: m.Kind, Context: m.Context,
		Names: []identity.Name{{Name: m.Name, Normalized: identity.NormalizeName(m.Name), Kind: identity.NameCanonical}}}
	for _, a := range m.Aliases {
		key := identity.NormalizeName(a)
		if !slices.ContainsFunc(e.Names, func(n identity.Name) bool { return n.Normalized == key }) {
			e.Names = append(e.Names, identity.Name{Name: strings.TrimSpace(a), Normalized: key, Kind: identity.NameAlias})
		}
	}
	return e
}

// Claims builds the verifier claims of every statement whose entities resolve among the candidates
// and known entities read before the transaction and whose predicate matched. The verdict concerns
// the proposal's text, so it stays valid if the transaction later maps a name to another entity.
func (in *Intake) Claims(preds []relationship.Predicate, candidates, known []identity.Entity) []evidence.Claim {
	res := in.resolve(candidates, known)
	var out []evidence.Claim
	for _, r := range in.req.Proposal.Relationships {
		_, mod, _ := request.Normalize(r)
		if mod != relationship.ModalityStatement {
			continue
		}
		if _, ok := relationship.MatchPredicate(r.Predicate, preds); !ok {
			continue
		}
		if res[r.SubjectRef].Decision == identity.DecisionAmbiguous ||
			(r.ObjectRef != "" && res[r.ObjectRef].Decision == identity.DecisionAmbiguous) {
			continue
		}
		out = append(out, in.claim(r))
	}
	return out
}

func (in *Intake) claim(r memtype.ProposedRelationship) evidence.Claim {
	pol, _, _ := request.Normalize(r)
	cl := evidence.Claim{ProposalID: r.ProposalID, PredicatePhrase: r.Predicate, Negated: pol == relationship.PolarityNegative,
		ValidFrom: r.ValidFrom, SubjectNames: mentionNames(in.mentions[r.SubjectRef])}
	if r.ObjectValue != nil {
		cl.ObjectValue = strings.TrimSpace(r.ObjectValue.Value)
	} else {
		cl.ObjectNames = mentionNames(in.mentions[r.ObjectRef])
	}
	for _, cit := range r.Evidence {
		content := in.content(cit.EvidenceIndex)
		if cit.Start < 0 || cit.End > len(content) || cit.Start >= cit.End {
			continue // an adopted item's citations are checked by CheckAdopted, which runs first
		}
		cl.Cited = append(cl.Cited, evidence.CitedText{EvidenceIndex: cit.EvidenceIndex, Start: cit.Start, End: cit.End,
			Text: content[cit.Start:cit.End]})
	}
	return cl
}

func mentionNames(m identity.Mention) []string {
	return append([]string{m.Name}, m.Aliases...)
}

// Speculation returns what RememberPrepare may read, before identities and predicates are resolved,
// of the conflict keys the request's statements can fall on (store.KeySpeculation): every statement
// with its mentions' lookups, predicate phrase, scope and object. It returns nil when the request's
// placement is never planned from such a read: it adopts, revises a source, answers a case, or states
// a mention distinct from an entity (whose identity cases lie on other keys), or it has no statement.
func (in *Intake) Speculation(team identity.TeamID) *store.KeySpeculation {
	if len(in.Adopt) > 0 || len(in.revisions()) > 0 || len(in.Responses()) > 0 {
		return nil
	}
	for _, m := range in.mentions {
		if len(m.DistinctFrom) > 0 {
			return nil
		}
	}
	sp := &store.KeySpeculation{}
	for _, r := range in.req.Proposal.Relationships {
		if r.CorrectsRelationshipID != "" && !slices.Contains(sp.Named, r.CorrectsRelationshipID) {
			sp.Named = append(sp.Named, r.CorrectsRelationshipID)
		}
		_, mod, scope := request.Normalize(r)
		if mod != relationship.ModalityStatement {
			continue
		}
		s := store.SpeculatedStatement{Subject: in.lookup(r.SubjectRef), Predicate: relationship.NormalizePhrase(r.Predicate), Scope: scope}
		switch {
		case r.ObjectValue != nil:
			text, _ := request.CanonicalValue(*r.ObjectValue, math.MaxInt)
			s.ObjectValue = valueID(team, r.ObjectValue.Type, text)
		case r.ObjectRef != "":
			s.Object = in.lookup(r.ObjectRef)
		}
		sp.Statements = append(sp.Statements, s)
	}
	if len(sp.Statements) == 0 {
		return nil
	}
	return sp
}

// lookup is how mention ref's entity is found: its known entity, or its names and aliases.
func (in *Intake) lookup(ref string) store.MentionLookup {
	m := in.mentions[ref]
	if m.KnownID != "" {
		return store.MentionLookup{Known: m.KnownID}
	}
	var out store.MentionLookup
	for _, name := range mentionNames(m) {
		key := identity.NormalizeName(name)
		n := store.NameLookup{Kind: m.Kind, Normalized: key, Skeleton: identity.Skeleton(key)}
		if !slices.Contains(out.Names, n) {
			out.Names = append(out.Names, n)
		}
	}
	return out
}

// Package identity owns who is speaking and what is spoken about: the team and profile identifiers
// of principals, and entities with their kinds, identity contexts and names. It resolves a proposal's
// entity mention to reuse, create or ambiguous. It is pure: no SQL, no clock reads, no I/O.
package identity

import (
	"slices"
)

// TeamID identifies a team, the tenant boundary.
type TeamID string

// ProfileID identifies a profile (an author) inside a team.
type ProfileID string

// EntityID identifies an entity inside a team.
type EntityID string

// Scope is a permission a profile holds.
type Scope string

// Profile scopes.
const (
	ScopeRead       Scope = "read"
	ScopeWrite      Scope = "write"
	ScopeVocabulary Scope = "vocabulary"
	ScopeErasure    Scope = "erasure"
)

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool {
	switch s {
	case ScopeRead, ScopeWrite, ScopeVocabulary, ScopeErasure:
		return true
	}
	return false
}

// Scopes returns every profile scope.
func Scopes() []Scope { return []Scope{ScopeRead, ScopeWrite, ScopeVocabulary, ScopeErasure} }

// ProfileStatus is whether a profile may act.
type ProfileStatus string

// Profile statuses.
const (
	ProfileActive   ProfileStatus = "active"
	ProfileDisabled ProfileStatus = "disabled"
)

// Valid reports whether s is a known profile status.
func (s ProfileStatus) Valid() bool { return s == ProfileActive || s == ProfileDisabled }

// NameKind says whether a name is an entity's canonical name or an alias.
type NameKind string

// Name kinds.
const (
	NameCanonical NameKind = "canonical"
	NameAlias     NameKind = "alias"
)

// Name is one name of an entity.
type Name struct {
	Name       string
	Normalized string
	Kind       NameKind
}

// Entity is a thing with identity inside a team.
type Entity struct {
	ID      EntityID
	Kind    string
	Context map[string]string
	Names   []Name
	// CreatedBy is the profile whose mention created the entity.
	CreatedBy ProfileID
}

// CanonicalName returns the entity's canonical name, or its first name when none is canonical.
func (e Entity) CanonicalName() string {
	for _, n := range e.Names {
		if n.Kind == NameCanonical {
			return n.Name
		}
	}
	if len(e.Names) > 0 {
		return e.Names[0].Name
	}
	return ""
}

// NormalizeContext folds identity-context keys and values the way names are folded, dropping empty
// ones. When several keys fold to one, the value of the first key in byte order wins, so the result
// never depends on map iteration order.
func NormalizeContext(c map[string]string) map[string]string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]string, len(c))
	for _, k := range keys {
		fk, v := NormalizeName(k), NormalizeName(c[k])
		if _, taken := out[fk]; fk != "" && v != "" && !taken {
			out[fk] = v
		}
	}
	return out
}

// ContextsAgree reports whether two normalised identity contexts do not contradict: every key present
// in both has the same value.
func ContextsAgree(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			return false
		}
	}
	return true
}

// Mention is one proposal entity as the caller stated it.
type Mention struct {
	Ref     string
	Name    string
	Kind    string
	Aliases []string
	Context map[string]string
	// KnownID, when set, names a server-known entity of the caller's team to reuse.
	KnownID EntityID
	// DistinctFrom are server-known entities the caller's evidence shows the mention is not: they
	// are never its candidates.
	DistinctFrom []EntityID
	// By is the profile stating the mention; "" when it does not matter (every entity is its own).
	By ProfileID
}

// Decision is how a mention was resolved.
type Decision string

// Resolution decisions.
const (
	DecisionKnown     Decision = "known"
	DecisionReused    Decision = "reused"
	DecisionCreated   Decision = "created"
	DecisionAmbiguous Decision = "ambiguous"
)

// MaxCandidates bounds the candidates an ambiguous resolution lists.
const MaxCandidates = 20

// Resolution is the outcome of resolving one mention.
type Resolution struct {
	Decision Decision
	// EntityID is the reused or known entity; empty for created and ambiguous (the caller allocates
	// the new ID for created).
	EntityID   EntityID
	Candidates []EntityID
	// Truncated reports that more than MaxCandidates entities matched.
	Truncated bool
	// LookAlike reports an ambiguity made of look-alike names (Confusable), not of equal ones.
	LookAlike bool
	// Broader reports an ambiguity made of one entity of another profile whose identity context
	// lacks discriminators the mention states: the mention may name it or a narrower identity.
	Broader bool
}

// Resolve decides a mention without a known ID against the team's entities that share one of its
// name keys or their skeletons. Candidates are entities of the same kind whose identity context does
// not contradict the mention's, that it is not distinct from (DistinctFrom), and that hold a name
// whose key equals the mention's key. When several are candidates and exactly one states every
// discriminator of the mention's context, it is reused; otherwise several are ambiguous. One
// candidate is reused, unless it is another profile's entity whose context lacks a discriminator
// the mention states: a narrower mention of a broader entity someone else created (the
// specification's two Marks) is an identity question for its caller, never a silent reuse (Broader).
// With none, entities holding a name that is Confusable with the mention's key make the mention
// ambiguous too (a look-alike never silently becomes a second entity); otherwise the mention creates
// an entity. Same name with different kinds never merges.
func Resolve(m Mention, known []Entity) Resolution {
	want := NormalizeName(m.Name)
	ctx := NormalizeContext(m.Context)
	var exact, lookAlike []Entity
	for _, e := range known {
		if e.Kind != m.Kind || !ContextsAgree(ctx, NormalizeContext(e.Context)) || slices.Contains(m.DistinctFrom, e.ID) ||
			slices.ContainsFunc(exact, func(x Entity) bool { return x.ID == e.ID }) {
			continue
		}
		switch {
		case slices.ContainsFunc(e.Names, func(n Name) bool { return n.Normalized == want }):
			exact = append(exact, e)
		case slices.ContainsFunc(e.Names, func(n Name) bool { return Confusable(n.Normalized, want) }):
			lookAlike = append(lookAlike, e)
		}
	}
	if len(exact) > 1 {
		if covering := slices.DeleteFunc(slices.Clone(exact), func(e Entity) bool { return !covers(e.Context, ctx) }); len(covering) == 1 {
			return Resolution{Decision: DecisionReused, EntityID: covering[0].ID}
		}
	}
	if len(exact) == 1 && (m.By == "" || exact[0].CreatedBy == "" || exact[0].CreatedBy == m.By || covers(exact[0].Context, ctx)) {
		return Resolution{Decision: DecisionReused, EntityID: exact[0].ID} // the common case, without a copy
	}
	ids, similar, broader := entityIDs(exact), false, false
	if len(ids) == 0 && len(lookAlike) > 0 {
		ids, similar = entityIDs(lookAlike), true
	}
	if len(ids) == 1 && !similar {
		e := exact[slices.IndexFunc(exact, func(x Entity) bool { return x.ID == ids[0] })]
		broader = m.By != "" && e.CreatedBy != "" && e.CreatedBy != m.By && !covers(e.Context, ctx)
	}
	switch {
	case len(ids) == 0:
		return Resolution{Decision: DecisionCreated}
	case len(ids) == 1 && !similar && !broader:
		return Resolution{Decision: DecisionReused, EntityID: ids[0]}
	}
	r := Resolution{Decision: DecisionAmbiguous, Candidates: ids, LookAlike: similar, Broader: broader}
	if len(ids) > MaxCandidates {
		r.Candidates, r.Truncated = ids[:MaxCandidates], true
	}
	return r
}

// covers reports whether an entity's normalised context states every discriminator of a mention's
// (they agree, so the values are equal).
func covers(entity, mention map[string]string) bool {
	ec := NormalizeContext(entity)
	for k := range mention {
		if _, ok := ec[k]; !ok {
			return false
		}
	}
	return true
}

// entityIDs returns the entities' IDs sorted, each once.
func entityIDs(es []Entity) []EntityID {
	ids := make([]EntityID, 0, len(es))
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

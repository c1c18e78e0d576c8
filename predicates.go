package densemem

import (
	"context"
	"fmt"
	"slices"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// PredicateDefinition is one registered predicate version.
type PredicateDefinition struct {
	Key                string                   `json:"key"`
	Version            int                      `json:"version"`
	RelationshipKind   relationship.Kind        `json:"relationship_kind"`
	CurrentCardinality relationship.Cardinality `json:"current_cardinality"`
	Aliases            []string                 `json:"aliases,omitempty"`
	// SubjectKinds and ObjectKinds restrict entity kinds; empty allows any.
	SubjectKinds []string `json:"subject_kinds,omitempty"`
	ObjectKinds  []string `json:"object_kinds,omitempty"`
	// ValueObject makes the object a literal value instead of an entity.
	ValueObject bool   `json:"value_object,omitempty"`
	Description string `json:"description,omitempty"`
}

// RegisterPredicate registers a new immutable version of a predicate key (the first is version 1).
// The key and aliases are normalised like any predicate phrase, and each must name this predicate
// alone: a key equal to another predicate's alias, an alias equal to another predicate's key or alias,
// or two aliases alike are refused (a new version of a key may keep its own aliases, and an alias may
// spell out its own key, as "deploys from" does deploys_from).
//
// Errors: *ValidationError, ErrForbidden (vocabulary scope, or a host principal), ErrNotFound (the
// host principal's team does not exist).
func (c *Client) RegisterPredicate(ctx context.Context, p Principal, def PredicateDefinition) (PredicateDefinition, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return PredicateDefinition{}, err
	}
	var ps problems
	def.Key = relationship.NormalizePhrase(def.Key)
	if !kindPattern.MatchString(def.Key) {
		ps.Add("key", "must normalise to %s", kindPattern)
	}
	if !def.RelationshipKind.Valid() {
		ps.Add("relationship_kind", "unknown relationship kind%s (%s)", quoted(string(def.RelationshipKind), 64), oneOf(relationship.Kinds()))
	}
	if !def.CurrentCardinality.Valid() {
		ps.Add("current_cardinality", "unknown cardinality%s (%s)", quoted(string(def.CurrentCardinality), 64), oneOf(relationship.Cardinalities()))
	}
	if !checkCount(&ps, "aliases", len(def.Aliases), MaxListItems) || !checkCount(&ps, "subject_kinds", len(def.SubjectKinds), MaxListItems) ||
		!checkCount(&ps, "object_kinds", len(def.ObjectKinds), MaxListItems) {
		return def, ps.Err()
	}
	// The caller's slice is not rewritten in place.
	raw := def.Aliases
	def.Aliases = slices.Clone(def.Aliases)
	for i, a := range def.Aliases {
		checkText(&ps, fmt.Sprintf("aliases[%d]", i), a, true, c.cfg.Limits.MaxTextBytes)
		def.Aliases[i] = relationship.NormalizePhrase(a)
	}
	for i, k := range def.SubjectKinds {
		if !kindPattern.MatchString(k) {
			ps.Add(fmt.Sprintf("subject_kinds[%d]", i), "must match %s", kindPattern)
		}
	}
	for i, k := range def.ObjectKinds {
		if !kindPattern.MatchString(k) {
			ps.Add(fmt.Sprintf("object_kinds[%d]", i), "must match %s", kindPattern)
		}
	}
	if def.ValueObject && len(def.ObjectKinds) > 0 {
		ps.Add("object_kinds", "must be empty when value_object is set")
	}
	checkText(&ps, "description", def.Description, false, 4096)
	pred := relationship.Predicate{Key: def.Key, Kind: def.RelationshipKind, Cardinality: def.CurrentCardinality,
		Aliases: def.Aliases, SubjectKinds: def.SubjectKinds, ObjectKinds: def.ObjectKinds, ValueObject: def.ValueObject,
		Description: def.Description}
	addPhraseConflicts(&ps, raw, relationship.PhraseConflicts(pred, nil)) // aliases repeating each other
	if err := ps.Err(); err != nil {
		return def, err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeVocabulary); err != nil {
		return def, err
	}
	// Every phrase must name this predicate alone among the team's, checked under the lock that
	// orders the team's registrations, so two registrations cannot take one phrase together.
	stored, err := c.store.PredicateAppend(ctx, store.PredicateAppendParams{Team: p.TeamID, CreatedBy: p.actor(),
		CreatedAt: c.now(), Predicate: pred, Check: func(registered []relationship.Predicate) error {
			var ps problems
			addPhraseConflicts(&ps, raw, relationship.PhraseConflicts(pred, registered))
			return ps.Err()
		}})
	def.Version = stored.Version
	return def, err
}

// addPhraseConflicts adds a problem for each phrase of a predicate definition that would not name it
// alone (relationship.PhraseConflicts); raw holds the aliases as the caller spelt them.
func addPhraseConflicts(ps *problems, raw []string, conflicts []relationship.PhraseConflict) {
	const allowed = "a key or alias must name one predicate: use a phrase that no other predicate's key or alias normalises to"
	for _, pc := range conflicts {
		switch {
		case pc.Alias < 0:
			ps.Add("key", "%q is an alias of predicate %s; %s (or register %s again without it first)", pc.Phrase,
				pc.OtherKey, allowed, pc.OtherKey)
		case pc.Repeats >= 0:
			ps.Add(fmt.Sprintf("aliases[%d]", pc.Alias), "%q normalises to %q, as aliases[%d] does; list each alias once",
				raw[pc.Alias], pc.Phrase, pc.Repeats)
		case pc.OtherIsAlias:
			ps.Add(fmt.Sprintf("aliases[%d]", pc.Alias), "%q normalises to %q, an alias of predicate %s; %s", raw[pc.Alias],
				pc.Phrase, pc.OtherKey, allowed)
		default:
			ps.Add(fmt.Sprintf("aliases[%d]", pc.Alias), "%q normalises to %q, the key of predicate %s; %s", raw[pc.Alias],
				pc.Phrase, pc.OtherKey, allowed)
		}
	}
}

// ListPredicatesRequest asks for a page of the team's registered predicates, in key order.
type ListPredicatesRequest struct {
	// Limit is the most predicates returned: 0 means DefaultPageItems; 1..Limits.MaxPageItems.
	Limit int `json:"limit,omitempty"`
	// After is a previous response's NextAfter ("" for the first page).
	After string `json:"after,omitempty"`
}

// ListPredicatesResponse is one page of the team's predicates: the latest version of each key.
type ListPredicatesResponse struct {
	Predicates []PredicateDefinition `json:"predicates"`
	// NextAfter, when set, is the After of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// ListPredicates returns a page of the principal's team's predicates, the latest version of each
// key, in key order.
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (a host principal's team does not
// exist).
func (c *Client) ListPredicates(ctx context.Context, p Principal, req ListPredicatesRequest) (*ListPredicatesResponse, error) {
	ctx, limit, key, err := c.keyedPage(ctx, p, listPredicates, req.Limit, req.After)
	if err != nil {
		return nil, err
	}
	after := string(key)
	page, err := c.store.PredicateListPage(ctx, store.PredicateListPageParams{Team: p.TeamID, After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &ListPredicatesResponse{Predicates: make([]PredicateDefinition, 0, len(page.Items))}
	for _, pd := range page.Items {
		out.Predicates = append(out.Predicates, predicateDefinition(pd))
	}
	if page.More {
		out.NextAfter = listCursor{List: listPredicates, Keys: []string{page.Items[len(page.Items)-1].Key}}.encode()
	}
	return out, nil
}

// predicateDefinition is a stored predicate version as the API shows it.
func predicateDefinition(pd relationship.Predicate) PredicateDefinition {
	return PredicateDefinition{Key: pd.Key, Version: pd.Version, RelationshipKind: pd.Kind, CurrentCardinality: pd.Cardinality,
		Aliases: slices.Clone(pd.Aliases), SubjectKinds: slices.Clone(pd.SubjectKinds), ObjectKinds: slices.Clone(pd.ObjectKinds),
		ValueObject: pd.ValueObject, Description: pd.Description}
}

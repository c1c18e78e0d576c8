package relationship

// PhraseConflict is a phrase of a predicate definition that would not name that predicate alone: a
// phrase MatchPredicate would resolve to another predicate, or silently to one of two.
type PhraseConflict struct {
	// Alias is the index in the definition's Aliases of the conflicting alias, or -1 for its key.
	Alias int
	// Phrase is the conflicting phrase, normalised (NormalizePhrase).
	Phrase string
	// OtherKey is the registered predicate whose key or alias is the same phrase ("" when the phrase
	// repeats an earlier alias of the definition itself).
	OtherKey string
	// OtherIsAlias reports whether the phrase is one of OtherKey's aliases rather than its key.
	OtherIsAlias bool
	// Repeats is the index of the definition's earlier alias that normalises to the same phrase, or -1.
	Repeats int
}

// PhraseConflicts lists what makes def's phrases ambiguous among the team's predicates, in the
// definition's order: its key equal to another predicate's alias, an alias equal to another
// predicate's key or alias, and an alias equal to an earlier alias of def. Phrases compare after
// NormalizePhrase, as MatchPredicate compares them. registered holds the latest version of each
// registered key (as MatchPredicate takes them); the versions of def's own key are not another
// predicate, so a new version may keep its aliases. An alias equal to def's own key ("deploys from"
// for deploys_from) names def either way and is no conflict, but two aliases that normalise alike
// are (the second repeats the first). With registered empty, only the repeats within def are found.
func PhraseConflicts(def Predicate, registered []Predicate) []PhraseConflict {
	type owner struct {
		key   string
		alias bool
	}
	key := NormalizePhrase(def.Key)
	taken := map[string]owner{}
	for _, p := range registered {
		if pk := NormalizePhrase(p.Key); pk != key {
			taken[pk] = owner{key: p.Key}
		}
	}
	for _, p := range registered {
		if NormalizePhrase(p.Key) == key {
			continue
		}
		for _, a := range p.Aliases {
			if _, ok := taken[NormalizePhrase(a)]; !ok { // a key wins over an alias, as in MatchPredicate
				taken[NormalizePhrase(a)] = owner{key: p.Key, alias: true}
			}
		}
	}
	var out []PhraseConflict
	if o, ok := taken[key]; ok && o.alias {
		out = append(out, PhraseConflict{Alias: -1, Phrase: key, OtherKey: o.key, OtherIsAlias: true, Repeats: -1})
	}
	first := map[string]int{}
	for i, a := range def.Aliases {
		phrase := NormalizePhrase(a)
		if j, ok := first[phrase]; ok {
			out = append(out, PhraseConflict{Alias: i, Phrase: phrase, Repeats: j})
			continue
		}
		first[phrase] = i
		if o, ok := taken[phrase]; ok && phrase != key {
			out = append(out, PhraseConflict{Alias: i, Phrase: phrase, OtherKey: o.key, OtherIsAlias: o.alias, Repeats: -1})
		}
	}
	return out
}

package relationship_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/relationship"
)

// TestPhraseConflicts: every phrase of a definition that MatchPredicate would resolve to another
// predicate, or to one of two, is listed with what it clashes with; a new version of a key keeps its
// own aliases, and an alias spelling out the key is no clash.
func TestPhraseConflicts(t *testing.T) {
	registered := []relationship.Predicate{
		{Key: "deploys_from", Version: 2, Aliases: []string{"deploys_from", "ships_from"}},
		{Key: "works_on", Version: 1, Aliases: []string{"works_at"}},
	}
	def := func(key string, aliases ...string) relationship.Predicate {
		return relationship.Predicate{Key: key, Aliases: aliases}
	}
	clash := func(alias int, phrase, other string, isAlias bool) relationship.PhraseConflict {
		return relationship.PhraseConflict{Alias: alias, Phrase: phrase, OtherKey: other, OtherIsAlias: isAlias, Repeats: -1}
	}
	for _, c := range []struct {
		name string
		def  relationship.Predicate
		want []relationship.PhraseConflict
	}{
		{"fresh phrases", def("owns", "owner of", "maintains"), nil},
		{"an alias spelling out the key", def("released_by", "released by"), nil},
		{"a new version keeps its aliases", def("deploys_from", "deploys from", "Ships-From"), nil},
		{"an alias equal to another key", def("owns", "Works On"), []relationship.PhraseConflict{clash(0, "works_on", "works_on", false)}},
		{"an alias equal to another alias", def("owns", "x", "ships from"),
			[]relationship.PhraseConflict{clash(1, "ships_from", "deploys_from", true)}},
		{"a new version taking another's alias", def("deploys_from", "works at"),
			[]relationship.PhraseConflict{clash(0, "works_at", "works_on", true)}},
		{"a key equal to another alias", def("ships-from"), []relationship.PhraseConflict{clash(-1, "ships_from", "deploys_from", true)}},
		{"two aliases alike", def("owns", "owner of", "x", "Owner-Of"),
			[]relationship.PhraseConflict{{Alias: 2, Phrase: "owner_of", Repeats: 0}}},
		{"two aliases spelling out the key", def("owns", "owns", "OWNS"), []relationship.PhraseConflict{{Alias: 1, Phrase: "owns", Repeats: 0}}},
		{"every clash, in order", def("works_at", "ships from", "deploys_from", "ships_from"), []relationship.PhraseConflict{
			clash(-1, "works_at", "works_on", true), clash(0, "ships_from", "deploys_from", true),
			clash(1, "deploys_from", "deploys_from", false), {Alias: 2, Phrase: "ships_from", Repeats: 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, relationship.PhraseConflicts(c.def, registered)); d != "" {
				t.Errorf("PhraseConflicts (-want +got):\n%s", d)
			}
			// Without the registered predicates only the repeats within the definition are left.
			var repeats []relationship.PhraseConflict
			for _, pc := range c.want {
				if pc.Repeats >= 0 {
					repeats = append(repeats, pc)
				}
			}
			if d := cmp.Diff(repeats, relationship.PhraseConflicts(c.def, nil)); d != "" {
				t.Errorf("PhraseConflicts without registered predicates (-want +got):\n%s", d)
			}
		})
	}
}

package densemem

import (
	"sync"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// seenNames is what a Client knows of its teams' entity names without asking: the (team, kind,
// skeleton) of every name a read showed held by an entity, or a placement wrote. Entities and their
// names are append-only, so a name seen stays held; a name not seen may be held all the same (another
// process wrote it). Remember speculates on its keys' state only for a statement whose subject may
// exist (decision 156): a fresh-data call, every name new, does not pay for a read that would find
// nothing, and a call about an entity this process has not seen yet places under the locks once.
// The set is bounded: past maxSeenNames it starts again empty (a name then costs one locked
// placement more).
type seenNames struct {
	mu    sync.Mutex
	names map[seenName]struct{}
}

type seenName struct {
	team           identity.TeamID
	kind, skeleton string
}

// maxSeenNames bounds a Client's seenNames.
const maxSeenNames = 100_000

// add records names of team as held.
func (s *seenNames) add(team identity.TeamID, names ...store.NameLookup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil || len(s.names)+len(names) > maxSeenNames {
		s.names = map[seenName]struct{}{}
	}
	for _, n := range names {
		s.names[seenName{team, n.Kind, n.Skeleton}] = struct{}{}
	}
}

// addEntities records the names of entities of team as held.
func (s *seenNames) addEntities(team identity.TeamID, entities []identity.Entity) {
	var names []store.NameLookup
	for _, e := range entities {
		for _, n := range e.Names {
			names = append(names, store.NameLookup{Kind: e.Kind, Skeleton: identity.Skeleton(n.Normalized)})
		}
	}
	if len(names) > 0 {
		s.add(team, names...)
	}
}

// mayExist reports whether a statement of sp may fall on an existing entity's key: its subject is
// named by ID, or one of its names was seen held.
func (s *seenNames) mayExist(team identity.TeamID, sp *store.KeySpeculation) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range sp.Statements {
		if st.Subject.Known != "" {
			return true
		}
		for _, n := range st.Subject.Names {
			if _, ok := s.names[seenName{team, n.Kind, n.Skeleton}]; ok {
				return true
			}
		}
	}
	return false
}

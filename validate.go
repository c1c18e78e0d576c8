package densemem

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
)

// The checks several requests share: text, counts, names, times, evidence items (Remember, Resolve,
// Split and Merge), entity mentions and the principal. Each request's own validation sits beside its
// call: validateRemember in remember.go, validateRecall in recall.go, validateTrace in trace.go,
// validateResolve in resolve.go, validateReassign in split.go.

// kindPattern is the form of an entity kind and of a predicate key.
var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// checkText reports a problem unless s is valid UTF-8 without NUL bytes, within max bytes, and
// non-blank when required.
func checkText(ps *problems, path, s string, required bool, max int) {
	switch {
	case !utf8.ValidString(s):
		ps.Add(path, "must be valid UTF-8")
	case strings.ContainsRune(s, 0):
		ps.Add(path, "must not contain NUL bytes")
	case required && strings.TrimSpace(s) == "":
		ps.Add(path, "is required")
	case len(s) > max:
		ps.Add(path, "is %d bytes, more than the limit of %d", len(s), max)
	}
}

// MaxListItems bounds the short lists of administrative requests: a profile's scopes, a team
// policy's authoritative profiles, a predicate's aliases and its subject and object kinds.
const MaxListItems = 64

// checkCount reports a problem and returns false when a list has more than max items, so the caller
// skips its per-item checks.
func checkCount(ps *problems, path string, n, max int) bool {
	if n > max {
		ps.Add(path, "has %d items, more than the limit of %d", n, max)
		return false
	}
	return true
}

// checkName is checkText for an entity name or alias, which must also be able to identify something
// (identity.NameProblem: no control characters, a visible character).
func checkName(ps *problems, path, s string, max int) {
	n := ps.Count()
	checkText(ps, path, s, true, max)
	if ps.Count() == n {
		if why := identity.NameProblem(s); why != "" {
			ps.Add(path, "%s", why)
		}
	}
}

// checkEvidence checks the evidence items: content within its byte limit and valid text, known
// source type and authority, and the source labels; or, for an item that adopts an existing
// fragment, the fragment's ID and nothing else (the fragment brings its own). adopt says whether
// the call takes adopted items (Remember does; Resolve and the identity calls store their evidence).
func checkEvidence(ps *problems, items []EvidenceInput, l Limits, adopt bool) {
	if len(items) == 0 {
		ps.Add("evidence", "at least one evidence item is required")
	}
	for i, ev := range items {
		p := fmt.Sprintf("evidence[%d]", i)
		if ev.Adopts() {
			checkAdoption(ps, p, ev, l, adopt)
			continue
		}
		switch {
		case len(ev.Content) == 0:
			ps.Add(p+".content", "is required")
		case len(ev.Content) > l.MaxContentBytes:
			ps.Add(p+".content", "is %d bytes, more than the limit of %d", len(ev.Content), l.MaxContentBytes)
		default:
			checkText(ps, p+".content", ev.Content, false, l.MaxContentBytes)
		}
		if !ev.SourceType.Valid() {
			ps.Add(p+".source_type", "unknown source type%s (%s)", quoted(string(ev.SourceType), 64), oneOf(evidence.SourceTypes()))
		}
		if ev.Authority != "" && !ev.Authority.Valid() {
			ps.Add(p+".authority", "unknown authority%s (%s)", quoted(string(ev.Authority), 64), oneOf(evidence.Authorities()))
		}
		checkText(ps, p+".source_group", ev.SourceGroup, false, l.MaxTextBytes)
		checkText(ps, p+".source_key", ev.SourceKey, false, l.MaxTextBytes)
		checkText(ps, p+".source_revision", ev.SourceRevision, false, l.MaxTextBytes)
		if ev.SourceRevision != "" && ev.SourceKey == "" {
			ps.Add(p+".source_revision", "requires source_key")
		}
		checkRevision(ps, p, ev, l)
	}
	checkRevisionsAgree(ps, items)
}

// MaxSupersededFragments bounds supersedes_fragment_ids of one evidence item.
const MaxSupersededFragments = 100

// checkRevision checks an evidence item's revision fields at path p: previous_source_revision needs
// source_key and a different source_revision; supersedes_fragment_ids needs previous_source_revision,
// and lists distinct IDs within MaxSupersededFragments.
func checkRevision(ps *problems, p string, ev EvidenceInput, l Limits) {
	if ev.PreviousSourceRevision == "" && len(ev.SupersedesFragmentIDs) == 0 {
		return // no revision: nothing to check (and no field paths to build)
	}
	checkText(ps, p+".previous_source_revision", ev.PreviousSourceRevision, false, l.MaxTextBytes)
	if ev.Revises() {
		switch {
		case ev.SourceKey == "":
			ps.Add(p+".previous_source_revision", "requires source_key")
		case ev.SourceRevision == "":
			ps.Add(p+".source_revision", "is required with previous_source_revision")
		case ev.SourceRevision == ev.PreviousSourceRevision:
			ps.Add(p+".source_revision", "must differ from previous_source_revision %q", ev.PreviousSourceRevision)
		}
	}
	if len(ev.SupersedesFragmentIDs) > 0 && !ev.Revises() {
		ps.Add(p+".supersedes_fragment_ids", "requires previous_source_revision")
	}
	if !checkCount(ps, p+".supersedes_fragment_ids", len(ev.SupersedesFragmentIDs), MaxSupersededFragments) {
		return
	}
	seen := map[FragmentID]bool{}
	for j, id := range ev.SupersedesFragmentIDs {
		q := fmt.Sprintf("%s.supersedes_fragment_ids[%d]", p, j)
		checkText(ps, q, string(id), true, l.MaxTextBytes)
		if seen[id] {
			ps.Add(q, "duplicate fragment ID %q", id)
		}
		seen[id] = true
	}
}

// checkRevisionsAgree checks that the items of one source_key in a request that revises it state one
// revision: the same source_revision and previous_source_revision (a call revises a source once).
func checkRevisionsAgree(ps *problems, items []EvidenceInput) {
	first := map[string]int{}
	for i, ev := range items {
		if ev.SourceKey == "" {
			continue
		}
		j, ok := first[ev.SourceKey]
		if !ok {
			first[ev.SourceKey] = i
			continue
		}
		o := items[j]
		if (ev.Revises() || o.Revises()) && (ev.SourceRevision != o.SourceRevision || ev.PreviousSourceRevision != o.PreviousSourceRevision) {
			ps.Add(fmt.Sprintf("evidence[%d].previous_source_revision", i),
				"revises source_key %q differently from evidence[%d]: one call states one revision of a source", ev.SourceKey, j)
		}
	}
}

// checkAdoption checks an item at path p that adopts an existing fragment (DESIGN §13): a
// fragment ID, and none of the fields the adopted fragment brings itself. Whether the fragment is
// the team's is checked once it is read (placement.Intake.CheckAdopted).
func checkAdoption(ps *problems, p string, ev EvidenceInput, l Limits, adopt bool) {
	if !adopt {
		ps.Add(p+".adopt_fragment_id", "adoption goes through Remember: this call stores its own evidence")
		return
	}
	checkText(ps, p+".adopt_fragment_id", string(ev.AdoptFragmentID), true, l.MaxTextBytes)
	for _, f := range []struct{ name, value string }{{"content", ev.Content}, {"source_type", string(ev.SourceType)},
		{"authority", string(ev.Authority)}, {"source_group", ev.SourceGroup}, {"source_key", ev.SourceKey},
		{"source_revision", ev.SourceRevision}} {
		if f.value != "" {
			ps.Add(p+"."+f.name, "must be empty with adopt_fragment_id: the adopted fragment keeps its own")
		}
	}
}

// checkContext checks an identity context at path p: each key non-empty and distinct from the
// others after case and space folding, keys and values within the text limit.
func checkContext(ps *problems, p string, ctx map[string]string, l Limits) {
	folded := map[string]bool{}
	for _, k := range sortedKeys(ctx) {
		checkText(ps, p, k, true, l.MaxTextBytes)
		if fk := identity.NormalizeName(k); folded[fk] {
			ps.Add(fmt.Sprintf("%s.%s", p, k), "duplicates another key after case and space folding")
		} else {
			folded[fk] = true
		}
		checkText(ps, fmt.Sprintf("%s.%s", p, k), ctx[k], false, l.MaxTextBytes)
	}
}

// checkEntities checks the proposal's entity mentions and returns their refs.
func checkEntities(ps *problems, entities []ProposedEntity, l Limits) map[string]bool {
	refs := map[string]bool{}
	for i, e := range entities {
		p := fmt.Sprintf("proposal.entities[%d]", i)
		checkText(ps, p+".ref", e.Ref, true, l.MaxTextBytes)
		if refs[e.Ref] {
			ps.Add(p+".ref", "duplicate ref %q", e.Ref)
		}
		refs[e.Ref] = true
		checkName(ps, p+".name", e.Name, l.MaxTextBytes)
		if !kindPattern.MatchString(e.EntityKind) {
			ps.Add(p+".entity_kind", "must match %s", kindPattern)
		}
		for j, a := range e.Aliases {
			checkName(ps, fmt.Sprintf("%s.aliases[%d]", p, j), a, l.MaxTextBytes)
		}
		checkContext(ps, p+".identity_context", e.IdentityContext, l)
		checkText(ps, p+".known_entity_id", string(e.KnownEntityID), false, l.MaxTextBytes)
		if checkCount(ps, p+".distinct_from_entity_ids", len(e.DistinctFromEntityIDs), MaxListItems) {
			for j, id := range e.DistinctFromEntityIDs {
				checkText(ps, fmt.Sprintf("%s.distinct_from_entity_ids[%d]", p, j), string(id), true, l.MaxTextBytes)
			}
		}
		if e.KnownEntityID != "" && len(e.DistinctFromEntityIDs) > 0 {
			ps.Add(p+".distinct_from_entity_ids", "cannot go with known_entity_id")
		}
	}
	return refs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// storedTime is t as PostgreSQL stores it: UTC at microsecond precision.
func storedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// checkTime reports a problem unless t is absent or within years 0001..9999 in UTC.
func checkTime(ps *problems, path string, t *time.Time) {
	if t != nil {
		if y := t.UTC().Year(); y < 1 || y > 9999 {
			ps.Add(path, "must be within years 0001..9999 (UTC)")
		}
	}
}

// normalizeTimes rewrites the request's times as they will be stored (UTC, microseconds), so the
// verifier, the planner and the database all see the same instants.
func normalizeTimes(req *RememberRequest) {
	// The relationships slice is shared with the caller; rewrite a copy, never the caller's request.
	req.Proposal.Relationships = slices.Clone(req.Proposal.Relationships)
	for i := range req.Proposal.Relationships {
		r := &req.Proposal.Relationships[i]
		if r.ValidFrom != nil {
			t := storedTime(*r.ValidFrom)
			r.ValidFrom = &t
		}
		if r.ValidTo != nil {
			t := storedTime(*r.ValidTo)
			r.ValidTo = &t
		}
	}
}

// checkPrincipal rejects, before anything is read, a principal whose IDs cannot name a stored
// profile, and a host principal that names a profile or asks for scope write: the host administers
// and reads a team, it never authors knowledge.
func checkPrincipal(p Principal, scope identity.Scope) error {
	if p.Host {
		switch {
		case p.TeamID == "" || !utf8.ValidString(string(p.TeamID)) || strings.ContainsRune(string(p.TeamID), 0) ||
			len(p.TeamID) > DefaultMaxTextBytes:
			return fmt.Errorf("%w: host principal of team %q: no such team", ErrForbidden, p.TeamID)
		case p.ProfileID != "":
			return fmt.Errorf("%w: a host principal names no profile (got %q); use HostPrincipal(team), or a profile's principal",
				ErrForbidden, p.ProfileID)
		case scope == identity.ScopeWrite:
			return fmt.Errorf("%w: the host principal cannot author knowledge: Remember and Forget need a profile of team %s with the write scope",
				ErrForbidden, p.TeamID)
		}
		return nil
	}
	for _, s := range []string{string(p.TeamID), string(p.ProfileID)} {
		if s == "" || !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > DefaultMaxTextBytes {
			return fmt.Errorf("%w: principal %q/%q is not a profile of a team", ErrForbidden, p.TeamID, p.ProfileID)
		}
	}
	return nil
}

// quoted returns " " and s quoted for a problem's message, or "" when s is too long or not text
// to repeat.
// oneOf lists an enumeration's values for an error message: "one of: a, b, c".
func oneOf[T ~string](values []T) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	return "one of: " + strings.Join(s, ", ")
}

func quoted(s string, max int) string {
	if len(s) > max || !utf8.ValidString(s) {
		return ""
	}
	return fmt.Sprintf(" %q", s)
}

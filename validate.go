package densemem

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

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

// validateRemember checks the whole request without the database and returns its problems. Counts
// are checked first: a request over a count limit is refused with those problems alone, before any
// per-item work, so its cost never grows with how far over the limits it is.
func validateRemember(req *RememberRequest, l Limits) error {
	if err := checkRememberCounts(req, l); err != nil {
		return err
	}
	var ps problems
	checkText(&ps, "idempotency_key", req.IdempotencyKey, true, l.MaxTextBytes)
	checkEvidence(&ps, req.Evidence, l, true)
	refs := checkEntities(&ps, req.Proposal.Entities, l)
	cited := make([]bool, len(req.Evidence))
	ids := map[string]bool{}
	if len(req.Proposal.Relationships) == 0 {
		ps.Add("proposal.relationships", "at least one relationship is required")
	}
	for i, r := range req.Proposal.Relationships {
		p := fmt.Sprintf("proposal.relationships[%d]", i)
		checkText(&ps, p+".proposal_id", r.ProposalID, true, l.MaxTextBytes)
		if ids[r.ProposalID] {
			ps.Add(p+".proposal_id", "duplicate proposal_id %q", r.ProposalID)
		}
		ids[r.ProposalID] = true
		checkRelationship(&ps, p, r, refs, l)
		if len(r.Evidence) == 0 {
			ps.Add(p+".evidence", "at least one citation is required")
		}
		for j, c := range r.Evidence {
			if checkCitation(&ps, fmt.Sprintf("%s.evidence[%d]", p, j), c, req.Evidence) {
				cited[c.EvidenceIndex] = true
			}
		}
	}
	for i, ok := range cited {
		if !ok {
			ps.Add(fmt.Sprintf("evidence[%d]", i), "is not cited by any relationship")
		}
	}
	checkRevisionAlone(&ps, req)
	return ps.Err()
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

// checkRevisionAlone refuses a request that mixes a source revision with a profile-local correction
// (DESIGN §13): a relationship naming corrects_relationship_id (the caller's correction of its own
// or another profile's relationship) or a conflict_response (the caller's answer to a team case at
// the version it read). A revision recomputes other profiles' relationships and cases by system
// transitions; a correction or an answer is the caller's own decision about one key. In one call the
// two could not be told apart in the ledger, and the answer would be judged against a case the same
// call changes; they go in separate calls.
func checkRevisionAlone(ps *problems, req *RememberRequest) {
	revision := slices.ContainsFunc(req.Evidence, EvidenceInput.Revises)
	if !revision {
		return
	}
	for i, r := range req.Proposal.Relationships {
		p := fmt.Sprintf("proposal.relationships[%d]", i)
		if r.CorrectsRelationshipID != "" {
			ps.Add(p+".corrects_relationship_id", "cannot go with a source revision (previous_source_revision): "+
				"a profile-local correction and a team-wide source retirement are separate calls")
		}
		if r.ConflictResponse != nil {
			ps.Add(p+".conflict_response", "cannot go with a source revision (previous_source_revision): "+
				"answer the case in a separate call")
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

// checkRelationship checks one proposed relationship at path p, its citations aside: its refs name
// proposal entities, exactly one object, known polarity and modality, a conflict response naming a
// case version, and a validity that ends after it starts.
func checkRelationship(ps *problems, p string, r ProposedRelationship, refs map[string]bool, l Limits) {
	if !refs[r.SubjectRef] {
		ps.Add(p+".subject_ref", "does not name a proposal entity ref")
	}
	checkText(ps, p+".predicate", r.Predicate, true, l.MaxTextBytes)
	switch {
	case r.ObjectRef != "" && r.ObjectValue != nil:
		ps.Add(p, "set exactly one of object_ref and object_value, not both")
	case r.ObjectRef == "" && r.ObjectValue == nil:
		ps.Add(p, "set exactly one of object_ref and object_value")
	case r.ObjectRef != "" && !refs[r.ObjectRef]:
		ps.Add(p+".object_ref", "does not name a proposal entity ref")
	case r.ObjectValue != nil:
		if _, err := request.CanonicalValue(*r.ObjectValue, DefaultMaxTextBytes); err != nil {
			ps.Add(p+".object_value", "%v", err)
		}
	}
	if r.Polarity != "" && !r.Polarity.Valid() {
		ps.Add(p+".polarity", "unknown polarity%s (%s)", quoted(string(r.Polarity), 64), oneOf(relationship.Polarities()))
	}
	if r.Modality != "" && !r.Modality.Valid() {
		ps.Add(p+".modality", "unknown modality%s (%s)", quoted(string(r.Modality), 64), oneOf(relationship.Modalities()))
	}
	checkText(ps, p+".scope", r.Scope, false, l.MaxTextBytes)
	checkText(ps, p+".corrects_relationship_id", string(r.CorrectsRelationshipID), false, l.MaxTextBytes)
	if cr := r.ConflictResponse; cr != nil {
		checkText(ps, p+".conflict_response.conflict_id", cr.ConflictID, true, l.MaxTextBytes)
		if cr.ExpectedVersion < 1 {
			ps.Add(p+".conflict_response.expected_version", "must be a case version (1 or more)")
		}
	}
	checkTime(ps, p+".valid_from", r.ValidFrom)
	checkTime(ps, p+".valid_to", r.ValidTo)
	if r.ValidFrom != nil && r.ValidTo != nil && !storedTime(*r.ValidFrom).Before(storedTime(*r.ValidTo)) {
		ps.Add(p+".valid_to", "must be after valid_from (at microsecond precision)")
	}
}

// checkCitation checks one citation at path cp: an evidence index, and a non-empty byte span of that
// item on UTF-8 character boundaries. The span of an adopted item is checked against the fragment's
// content once it is read (placement.Intake.CheckAdopted); here only that it is non-empty. It
// reports whether the citation names an evidence item.
func checkCitation(ps *problems, cp string, c Citation, items []EvidenceInput) bool {
	if c.EvidenceIndex < 0 || c.EvidenceIndex >= len(items) {
		ps.Add(cp+".evidence_index", "%d is not an index of evidence", c.EvidenceIndex)
		return false
	}
	if items[c.EvidenceIndex].Adopts() {
		switch {
		case c.Start < 0:
			ps.Add(cp+".start", "must not be negative")
		case c.Start >= c.End:
			ps.Add(cp+".end", "must be greater than start")
		}
		return true
	}
	request.CheckSpan(ps, cp, items[c.EvidenceIndex].Content, c.EvidenceIndex, c.Start, c.End)
	return true
}

// checkRememberCounts refuses a request over any count limit: evidence items, entities, aliases per
// entity, identity-context keys, names, relationships and citations per relationship. It reads only
// lengths (the per-entity and per-relationship loops run only once their lists are within limits).
func checkRememberCounts(req *RememberRequest, l Limits) error {
	var ps problems
	over := func(path string, n, max int, what string) {
		if n > max {
			ps.Add(path, "has %d %s, more than the limit of %d", n, what, max)
		}
	}
	over("evidence", len(req.Evidence), l.MaxEvidence, "items")
	over("proposal.entities", len(req.Proposal.Entities), l.MaxEntities, "items")
	over("proposal.relationships", len(req.Proposal.Relationships), l.MaxRelationships, "items")
	if ps.Any() {
		return ps.Err()
	}
	names := 0
	for i, e := range req.Proposal.Entities {
		over(fmt.Sprintf("proposal.entities[%d].aliases", i), len(e.Aliases), l.MaxAliasesPerEntity, "aliases")
		over(fmt.Sprintf("proposal.entities[%d].identity_context", i), len(e.IdentityContext), MaxIdentityContextKeys, "keys")
		if e.KnownEntityID == "" {
			names += 1 + len(e.Aliases)
		}
	}
	over("proposal.entities", names, l.MaxNames, "names (names and aliases of entities without known_entity_id)")
	for i, r := range req.Proposal.Relationships {
		over(fmt.Sprintf("proposal.relationships[%d].evidence", i), len(r.Evidence), l.MaxCitations, "citations")
	}
	return ps.Err()
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

// traceLists are the names TraceRequest.After accepts besides a case's events.
var traceLists = []string{TraceListEvidence, TraceListObservations, TraceListVerifications, TraceListTransitions,
	TraceListIdentityResolutions, TraceListReviewItems, TraceListCrossReferences, TraceListConflicts}

// validateTrace checks a Trace request without the database and returns every problem, or the page
// size and where each list's page starts.
func validateTrace(req *TraceRequest, l Limits) (int, store.TraceAfter, error) {
	var ps problems
	var after store.TraceAfter
	checkText(&ps, "relationship_id", string(req.RelationshipID), true, l.MaxTextBytes)
	if req.MaxDepth < 0 || req.MaxDepth > 4 {
		ps.Add("max_depth", "must be within 0..4")
	}
	if req.MaxEdges < 0 || req.MaxEdges > 100 {
		ps.Add("max_edges", "must be within 0..100")
	}
	limit := req.Limit
	switch {
	case limit == 0:
		limit = min(DefaultTraceItems, l.MaxTraceItems)
	case limit < 0 || limit > l.MaxTraceItems:
		ps.Add("limit", "must be within 1..%d (0 means %d)", l.MaxTraceItems, min(DefaultTraceItems, l.MaxTraceItems))
	}
	// Eight lists and the events of each case of a page; more entries than that cannot all be used.
	if n := len(req.After); n > len(traceLists)+l.MaxTraceItems {
		ps.Add("after", "has %d entries, more than the limit of %d", n, len(traceLists)+l.MaxTraceItems)
		return 0, after, ps.Err()
	}
	for _, list := range sortedKeys(req.After) {
		path := "after." + list
		if !utf8.ValidString(list) || strings.ContainsRune(list, 0) || len(list) > l.MaxTextBytes+len("conflicts..events") {
			ps.Add("after", "%q is not a list name", list)
			continue
		}
		conflictID, isEvents := strings.CutPrefix(list, TraceListConflicts+".")
		conflictID, suffixed := strings.CutSuffix(conflictID, ".events")
		isEvents = isEvents && suffixed && conflictID != "" && len(conflictID) <= l.MaxTextBytes
		if !isEvents && !slices.Contains(traceLists, list) {
			ps.Add(path, "unknown list (want one of %s, or conflicts.<conflict_id>.events)", strings.Join(traceLists, ", "))
			continue
		}
		if list == TraceListVerifications && !req.IncludeVerification {
			ps.Add(path, "pages a list the request does not include (set include_verification)")
			continue
		}
		if list == TraceListTransitions && !req.IncludeTransitions {
			ps.Add(path, "pages a list the request does not include (set include_transitions)")
			continue
		}
		c, err := decodeTraceCursor(list, req.After[list], l)
		if err != nil {
			ps.Add(path, "%v", err)
			continue
		}
		key := &store.TraceKey{At: c.At, IDs: c.IDs}
		switch list {
		case TraceListEvidence:
			after.Supports = key
		case TraceListObservations:
			after.Observations = key
		case TraceListVerifications:
			after.Verifications = key
		case TraceListIdentityResolutions:
			after.Resolutions = key
		case TraceListReviewItems:
			after.ReviewItems = key
		case TraceListCrossReferences:
			after.CrossReferences = key
		case TraceListConflicts:
			after.Cases = key
		case TraceListTransitions:
			after.Transitions = c.Version
		default:
			if after.CaseEvents == nil {
				after.CaseEvents = map[conflict.ID]int{}
			}
			after.CaseEvents[conflict.ID(conflictID)] = c.Version
		}
	}
	return limit, after, ps.Err()
}

// validateRecall checks a Recall request and returns its result limit.
func validateRecall(req *RecallRequest, l Limits) (int, error) {
	var ps problems
	checkText(&ps, "query", req.Query, false, 4*512)
	if utf8.RuneCountInString(req.Query) > 512 {
		ps.Add("query", "is longer than 512 characters")
	}
	if strings.TrimSpace(req.Query) == "" && len(req.ExpandFromEntityIDs) == 0 {
		ps.Add("query", "a query or expand_from_entity_ids is required")
	}
	if n := len(req.ExpandFromEntityIDs); n > MaxExpandEntities {
		// Refused on the count alone: no per-item work for an oversized list.
		ps.Add("expand_from_entity_ids", "has %d entities, more than the limit of %d", n, MaxExpandEntities)
		return 0, ps.Err()
	}
	for i, id := range req.ExpandFromEntityIDs {
		checkText(&ps, fmt.Sprintf("expand_from_entity_ids[%d]", i), string(id), true, l.MaxTextBytes)
	}
	checkTime(&ps, "valid_at", req.ValidAt)
	checkTime(&ps, "known_at", req.KnownAt)
	checkText(&ps, "predicate", req.Predicate, false, l.MaxTextBytes)
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultRecallLimit
	case limit < 1 || limit > MaxRecallLimit:
		ps.Add("limit", "must be within 1..%d", MaxRecallLimit)
	}
	return limit, ps.Err()
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

// ResolveActions returns every action ResolveRequest.Action may name; an item's own choices are a
// subset (ActionForget is allowed on every item about a relationship).
func ResolveActions() []string { return slices.Clone(resolveActions) }

func quoted(s string, max int) string {
	if len(s) > max || !utf8.ValidString(s) {
		return ""
	}
	return fmt.Sprintf(" %q", s)
}

// resolveActions are the review actions a Resolve may name. Every one takes the user's evidence;
// correct alone takes a proposal.
var resolveActions = []string{ActionSelectEntity, ActionConfirmNewEntity, ActionAccept, ActionCorrect, ActionAddEvidence,
	ActionBothValid, ActionSelectPredicate, ActionRejectMapping, ActionProposeVocabularyChange, ActionReject, ActionForget,
	ActionSupersedePrior, ActionKeepPriorRejectNew}

// validateResolve checks a Resolve request without the database: the item's address, a known action,
// the key, the decision's text and times, the evidence (never a source revision), and a proposal only
// for correct.
func validateResolve(req ResolveRequest, l Limits) error {
	var ps problems
	checkText(&ps, "ingest_id", req.IngestID, true, l.MaxTextBytes)
	checkText(&ps, "placement_item_id", req.PlacementItemID, true, l.MaxTextBytes)
	checkText(&ps, "idempotency_key", req.IdempotencyKey, true, l.MaxTextBytes)
	if checkText(&ps, "action", req.Action, true, l.MaxTextBytes); req.Action != "" && !slices.Contains(resolveActions, req.Action) {
		ps.Add("action", "unknown action%s (%s)", quoted(req.Action, 64), oneOf(resolveActions))
	}
	if d := req.Decision; d != nil {
		checkText(&ps, "decision.mention_ref", d.MentionRef, false, l.MaxTextBytes)
		checkText(&ps, "decision.entity_id", string(d.EntityID), false, l.MaxTextBytes)
		checkText(&ps, "decision.predicate_key", d.PredicateKey, false, l.MaxTextBytes)
		checkText(&ps, "decision.reason", d.Reason, false, 4096)
		if d.Scope != nil {
			checkText(&ps, "decision.scope", *d.Scope, false, l.MaxTextBytes)
		}
		checkTime(&ps, "decision.valid_from", d.ValidFrom)
		checkTime(&ps, "decision.valid_to", d.ValidTo)
		if checkCount(&ps, "decision.distinct_from_entity_ids", len(d.DistinctFromEntityIDs), MaxListItems) {
			for i, id := range d.DistinctFromEntityIDs {
				checkText(&ps, fmt.Sprintf("decision.distinct_from_entity_ids[%d]", i), string(id), true, l.MaxTextBytes)
			}
		}
	}
	if checkCount(&ps, "evidence", len(req.Evidence), l.MaxEvidence) && len(req.Evidence) > 0 {
		checkEvidence(&ps, req.Evidence, l, false)
		for i, ev := range req.Evidence {
			if ev.Revises() || len(ev.SupersedesFragmentIDs) > 0 {
				ps.Add(fmt.Sprintf("evidence[%d].previous_source_revision", i),
					"a decision's evidence cannot revise a source: a source revision goes through Remember")
			}
		}
	}
	if len(req.Evidence) == 0 && (req.Action == ActionAddEvidence || req.Action == ActionCorrect) {
		ps.Add("evidence", "action %s needs at least one evidence item", req.Action)
	}
	if len(req.Evidence) == 0 && req.Action == ActionConfirmNewEntity {
		ps.Add("evidence", "action confirm_new_entity needs evidence that distinguishes the new identity")
	}
	if req.Proposal == nil && req.Action == ActionCorrect {
		ps.Add("proposal", "action correct needs a proposal: the corrected statement")
	}
	if req.Proposal != nil && req.Action != ActionCorrect {
		ps.Add("proposal", "only action correct takes a proposal")
	}
	return ps.Err()
}

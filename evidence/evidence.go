// Package evidence owns verbatim evidence: fragments and their spans, source types, authority,
// source groups (the counting unit of independent support), and the Verifier contract with the
// deterministic SpanVerifier. It is pure: no SQL, no clock reads, no I/O.
package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
)

// FragmentID identifies one evidence fragment.
type FragmentID string

// SourceType says where an evidence item came from.
type SourceType string

// Source types.
const (
	SourceManual       SourceType = "manual"
	SourceConversation SourceType = "conversation"
	SourceDocument     SourceType = "document"
	SourceMessage      SourceType = "message"
	SourceToolOutput   SourceType = "tool_output"
	SourceWeb          SourceType = "web"
)

// Valid reports whether t is a known source type.
func (t SourceType) Valid() bool {
	switch t {
	case SourceManual, SourceConversation, SourceDocument, SourceMessage, SourceToolOutput, SourceWeb:
		return true
	}
	return false
}

// SourceTypes returns every source type, in the order error messages and schemas list them.
func SourceTypes() []SourceType {
	return []SourceType{SourceManual, SourceConversation, SourceDocument, SourceMessage, SourceToolOutput, SourceWeb}
}

// Authority is the submitter's label for how authoritative an evidence item is. It counts as
// authority only when the author is one of the team policy's authoritative profiles.
type Authority string

// Authority labels.
const (
	AuthorityAuthoritative Authority = "authoritative"
	AuthorityStandard      Authority = "standard"
)

// Valid reports whether a is a known authority label.
func (a Authority) Valid() bool { return a == AuthorityAuthoritative || a == AuthorityStandard }

// Authorities returns every authority label.
func Authorities() []Authority { return []Authority{AuthorityStandard, AuthorityAuthoritative} }

// Span is a cited byte range [Start, End) of one evidence item of a request.
type Span struct {
	EvidenceIndex int
	Start         int
	End           int
}

// ContentHash returns the hex SHA-256 of content normalised for copy detection: lower case, white
// space runs collapsed to one space, trimmed. Two copies of one text share a hash.
func ContentHash(content string) string {
	norm := strings.Join(strings.FieldsFunc(strings.ToLower(content), unicode.IsSpace), " ")
	sum := sha256.Sum256([]byte(norm))
	return hex.EncodeToString(sum[:])
}

// GroupLabel returns a fragment's source-group label: its source key (every revision of one source
// is one group), else the caller's source group, else "content:" and its content hash.
func GroupLabel(sourceKey, sourceGroup, contentHash string) string {
	switch {
	case sourceKey != "":
		return "source:" + sourceKey
	case sourceGroup != "":
		return sourceGroup
	}
	return "content:" + contentHash
}

// Support is one support path as the counting rules see it.
type Support struct {
	// Fragment is the supporting fragment, when known: what a retirement names.
	Fragment    FragmentID
	Group       string
	ContentHash string
	// AllowedAuthority is true when the fragment is labelled authoritative and its author is one of
	// the team policy's authoritative profiles.
	AllowedAuthority bool
	// Effective is false once the fragment is retired or its verification granted no support.
	Effective bool
}

// CountGroups returns the number of independent source groups among the effective supports and
// whether any of them carries allowed authority. Labels that share a content hash are merged, so
// copies count once whatever their labels.
func CountGroups(supports []Support) (groups int, authority bool) {
	parent := map[string]string{}
	find := func(x string) string {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	add := func(x string) {
		if _, ok := parent[x]; !ok {
			parent[x] = x
		}
	}
	for _, s := range supports {
		if !s.Effective {
			continue
		}
		g, h := "g:"+s.Group, "h:"+s.ContentHash
		add(g)
		add(h)
		if rg, rh := find(g), find(h); rg != rh {
			parent[rg] = rh
		}
		authority = authority || s.AllowedAuthority
	}
	roots := map[string]bool{}
	for x := range parent {
		roots[find(x)] = true
	}
	return len(roots), authority
}

// AllowedAuthority reports whether a fragment counts as authority: it is labelled authoritative and
// its author is one of the team policy's authoritative profiles. A caller's label alone is not enough.
func AllowedAuthority[P ~string](label Authority, author P, authoritative []P) bool {
	if label != AuthorityAuthoritative {
		return false
	}
	for _, p := range authoritative {
		if p == author {
			return true
		}
	}
	return false
}

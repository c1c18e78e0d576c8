// Package bearer is the one owner of the library's bearer tokens: token files holding SHA-256
// hashes (never the tokens), each bound to a principal, and the constant-time lookup of a
// presented token. The MCP HTTP server (mcpserver) and the operator console (console) both
// authenticate through it; each decides which principals it serves.
package bearer

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/densemem/densemem"
)

// Token is one entry of a token file: the hex SHA-256 of a bearer token (Hash; the token itself is
// never stored) and the principal it authenticates: a profile of a team, or, with Host set, the
// host itself acting for the team (no profile). Agents' servers refuse host tokens.
type Token struct {
	TokenSHA256 string             `json:"token_sha256"`
	TeamID      densemem.TeamID    `json:"team_id"`
	ProfileID   densemem.ProfileID `json:"profile_id,omitempty"`
	Host        bool               `json:"host,omitempty"`
}

// Store maps bearer tokens to principals, by their SHA-256 hashes, compared in constant time. It is
// immutable and safe for concurrent use.
type Store struct {
	tokens []stored
}

type stored struct {
	hash      [sha256.Size]byte
	principal densemem.Principal
}

// Hash returns the hex SHA-256 of a bearer token, as a token file stores it.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Load reads a token file: a JSON array of Token.
func Load(path string) (*Store, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	return Parse(data)
}

// Parse parses the contents of a token file (see Load). Unknown fields, malformed hashes, entries
// without a team, a profile token without a profile or a host token with one, and duplicate hashes
// are errors.
func Parse(data []byte) (*Store, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tokens []Token
	if err := dec.Decode(&tokens); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("token file: data after the JSON array")
	}
	return New(tokens)
}

// New returns a store of tokens (see Parse for what is refused).
func New(tokens []Token) (*Store, error) {
	s := &Store{}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range tokens {
		raw, err := hex.DecodeString(strings.ToLower(t.TokenSHA256))
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("token %d: token_sha256 must be 64 hex digits (the hash of the token)", i)
		}
		p := densemem.Principal{TeamID: t.TeamID, ProfileID: t.ProfileID, Host: t.Host}
		switch {
		case p.TeamID == "":
			return nil, fmt.Errorf("token %d: team_id is missing", i)
		case p.Host && p.ProfileID != "":
			return nil, fmt.Errorf("token %d: a host token names no profile_id", i)
		case !p.Host && p.ProfileID == "":
			return nil, fmt.Errorf("token %d: profile_id is missing (or set host: true for the team's host)", i)
		}
		var h [sha256.Size]byte
		copy(h[:], raw)
		if seen[h] {
			return nil, fmt.Errorf("token %d: the same token is listed twice", i)
		}
		seen[h] = true
		s.tokens = append(s.tokens, stored{hash: h, principal: p})
	}
	return s, nil
}

// Len returns the number of tokens.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	return len(s.tokens)
}

// Principals returns the principal of every token, in the order the tokens were given.
func (s *Store) Principals() []densemem.Principal {
	out := make([]densemem.Principal, s.Len())
	for i := range out {
		out[i] = s.tokens[i].principal
	}
	return out
}

// Lookup returns the principal of token, comparing its hash with every stored one in constant time.
func (s *Store) Lookup(token string) (densemem.Principal, bool) {
	if s == nil || token == "" {
		return densemem.Principal{}, false
	}
	sum := sha256.Sum256([]byte(token))
	var found densemem.Principal
	ok := 0
	for _, t := range s.tokens {
		match := subtle.ConstantTimeCompare(sum[:], t.hash[:])
		if match == 1 {
			found = t.principal
		}
		ok |= match
	}
	return found, ok == 1
}

// FromHeader returns the token of an "Authorization: Bearer <token>" header value, and whether the
// header has the Bearer form at all.
func FromHeader(authorization string) (string, bool) {
	fields := strings.Fields(authorization)
	if len(fields) == 2 && strings.EqualFold(fields[0], "Bearer") {
		return fields[1], true
	}
	return "", false
}

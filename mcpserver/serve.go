package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/densemem/densemem"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves the tools on standard input and output, every call acting as principal (one
// profile of one team, fixed for the process), until ctx is done or the client disconnects.
func ServeStdio(ctx context.Context, client *densemem.Client, principal densemem.Principal) error {
	return Serve(ctx, client, principal, &mcp.StdioTransport{})
}

// Serve serves the tools on one transport (one session), every call acting as principal.
func Serve(ctx context.Context, client *densemem.Client, principal densemem.Principal, t mcp.Transport) error {
	if err := checkAgent(principal); err != nil {
		return err
	}
	s, err := New(client, Options{Principal: Fixed(principal)})
	if err != nil {
		return err
	}
	return s.Run(ctx, t)
}

// Fixed returns an Options.Principal that binds every call to p.
func Fixed(p densemem.Principal) func(context.Context, *mcp.CallToolRequest) (densemem.Principal, error) {
	return func(context.Context, *mcp.CallToolRequest) (densemem.Principal, error) { return p, nil }
}

// checkAgent refuses a principal an agent may not act as: the host itself, or one without a team
// and a profile.
func checkAgent(p densemem.Principal) error {
	switch {
	case p.Host:
		return errors.New("mcpserver: a host principal never serves agents; bind a profile of the team")
	case p.TeamID == "" || p.ProfileID == "":
		return errors.New("mcpserver: the principal needs a team ID and a profile ID")
	}
	return nil
}

// Token is one entry of a token file: the hex SHA-256 of a bearer token (HashToken; the token itself
// is never stored) and the principal it authenticates.
type Token struct {
	TokenSHA256 string             `json:"token_sha256"`
	TeamID      densemem.TeamID    `json:"team_id"`
	ProfileID   densemem.ProfileID `json:"profile_id"`
}

// TokenStore maps bearer tokens to principals, by their SHA-256 hashes, compared in constant time.
// It is immutable and safe for concurrent use.
type TokenStore struct {
	tokens []storedToken
}

type storedToken struct {
	hash      [sha256.Size]byte
	principal densemem.Principal
}

// HashToken returns the hex SHA-256 of a bearer token, as a token file stores it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// LoadTokens reads a token file: a JSON array of Token ([{"token_sha256": "<hex>", "team_id": "...",
// "profile_id": "..."}]).
func LoadTokens(path string) (*TokenStore, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: token file: %w", err)
	}
	return ParseTokens(data)
}

// ParseTokens parses the contents of a token file (see LoadTokens). Unknown fields, malformed
// hashes, entries without a team or profile, and duplicate hashes are errors.
func ParseTokens(data []byte) (*TokenStore, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tokens []Token
	if err := dec.Decode(&tokens); err != nil {
		return nil, fmt.Errorf("mcpserver: token file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("mcpserver: token file: data after the JSON array")
	}
	return NewTokenStore(tokens)
}

// NewTokenStore returns a store of tokens (see ParseTokens for what is refused).
func NewTokenStore(tokens []Token) (*TokenStore, error) {
	s := &TokenStore{}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range tokens {
		raw, err := hex.DecodeString(strings.ToLower(t.TokenSHA256))
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("mcpserver: token %d: token_sha256 must be 64 hex digits (mcpserver.HashToken)", i)
		}
		p := densemem.Principal{TeamID: t.TeamID, ProfileID: t.ProfileID}
		if err := checkAgent(p); err != nil {
			return nil, fmt.Errorf("mcpserver: token %d: %w", i, err)
		}
		var h [sha256.Size]byte
		copy(h[:], raw)
		if seen[h] {
			return nil, fmt.Errorf("mcpserver: token %d: the same token is listed twice", i)
		}
		seen[h] = true
		s.tokens = append(s.tokens, storedToken{hash: h, principal: p})
	}
	return s, nil
}

// Lookup returns the principal of token, comparing its hash with every stored one in constant time.
func (s *TokenStore) Lookup(token string) (densemem.Principal, bool) {
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

// principalKey is the key of the principal in a bearer token's auth.TokenInfo.Extra.
const principalKey = "densemem.principal"

// HTTPHandler serves the tools over the SDK's streamable HTTP transport. Every request must carry
// "Authorization: Bearer <token>" with a token of tokens: a missing or unknown token gets 401 and no
// tool runs; a session stays bound to the principal of the token that opened it.
func HTTPHandler(client *densemem.Client, tokens *TokenStore) (http.Handler, error) {
	if tokens == nil || len(tokens.tokens) == 0 {
		return nil, errors.New("mcpserver: HTTPHandler needs at least one token")
	}
	s, err := New(client, Options{Principal: TokenPrincipal})
	if err != nil {
		return nil, err
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, ok := tokens.Lookup(token)
		if !ok {
			return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: string(p.TeamID) + "/" + string(p.ProfileID),
			Extra: map[string]any{principalKey: p}}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h), nil
}

// TokenPrincipal is the Options.Principal of the server behind HTTPHandler: the principal of the
// bearer token the request was authenticated with.
func TokenPrincipal(_ context.Context, req *mcp.CallToolRequest) (densemem.Principal, error) {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return densemem.Principal{}, errors.New("the request carries no bearer token")
	}
	p, ok := req.Extra.TokenInfo.Extra[principalKey].(densemem.Principal)
	if !ok {
		return densemem.Principal{}, errors.New("the bearer token names no principal")
	}
	return p, nil
}

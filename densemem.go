package densemem

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/nightly"
	"github.com/densemem/densemem/store"
)

// Client is the front door of Dense-Mem. It is safe for concurrent use.
type Client struct {
	store store.Store
	cfg   Config

	idMu   sync.Mutex
	lastMS int64
	seq    uint64

	// seen are the entity names this Client saw held: Remember speculates on existing keys only
	// when a subject may be one of them.
	seen seenNames

	// lockedOnly turns the optimistic placement off (tests only: export_test.go).
	lockedOnly bool
	// wholeKeys makes Remember read its keys' closed history too (tests only: export_test.go).
	wholeKeys bool
	// liveKeysWhole makes Remember read its keys' live relationships whole, never by object, under
	// its locks (tests only: export_test.go).
	liveKeysWhole bool
	// reviewLockedOnly turns the nightly reviewer's fenced way off (tests only: export_test.go).
	reviewLockedOnly bool
	// nightlyHooks are the nightly reviewer's test seams (tests only: export_test.go).
	nightlyHooks *nightly.Hooks
}

// New returns a Client over st. cfg may be nil for all defaults.
func New(st store.Store, cfg *Config) (*Client, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: densemem.New needs a store (postgres.Open or postgres.New)", ErrMisconfigured)
	}
	c := cfg.withDefaults()
	if c.AutoWriteThreshold < 0 || c.AutoWriteThreshold > 1 {
		return nil, &ValidationError{Problems: []FieldProblem{{Path: "config.auto_write_threshold", Message: "must be within 0..1"}}}
	}
	if c.ReviewTTL < 24*time.Hour || c.ReviewTTL > 30*24*time.Hour {
		return nil, &ValidationError{Problems: []FieldProblem{{Path: "config.review_ttl", Message: "must be within 1..30 days"}}}
	}
	if err := c.Nightly.validate(); err != nil {
		return nil, err
	}
	if c.Limits.MaxAliasesPerEntity > HardMaxAliasesPerEntity {
		return nil, &ValidationError{Problems: []FieldProblem{{Path: "config.limits.max_aliases_per_entity",
			Message: fmt.Sprintf("must be at most %d", HardMaxAliasesPerEntity)}}}
	}
	if l := c.Limits; l.MaxTraceContentBytes < 2*l.MaxContentBytes {
		return nil, &ValidationError{Problems: []FieldProblem{{Path: "config.limits.max_trace_content_bytes",
			Message: fmt.Sprintf("%d is less than twice max_content_bytes (%d), so one evidence item could never be traced with its content",
				l.MaxTraceContentBytes, l.MaxContentBytes)}}}
	}
	return &Client{store: st, cfg: c}, nil
}

// errZeroClient is what every method of a Client not made by New returns.
var errZeroClient = fmt.Errorf("%w: this Client was not created by densemem.New; create one with densemem.New(store, config)",
	ErrMisconfigured)

// begin starts a call of actor (actorOf, store.ActorHost or store.ReviewerActor): it refuses a
// Client not made by New, and returns ctx carrying the configured statement timeout, which the store
// applies to every statement of the call, and the actor, to which the store binds every transaction
// of the call (the database refuses the writes that actor may not make, migration 26).
func (c *Client) begin(ctx context.Context, actor string) (context.Context, error) {
	if c == nil || c.store == nil {
		return ctx, errZeroClient
	}
	return store.WithActor(store.WithStatementTimeout(ctx, c.cfg.Limits.StatementTimeout), actor), nil
}

// actorOf is the actor of p's calls: the host, or p's profile.
func actorOf(p Principal) string {
	if p.Host {
		return store.ActorHost
	}
	return store.ProfileActor(p.ProfileID)
}

// now reads the configured clock: UTC at microsecond precision, as PostgreSQL stores it.
func (c *Client) now() time.Time {
	return c.cfg.Clock().UTC().Truncate(time.Microsecond)
}

// newID returns a time-ordered identifier (identity.FormatID): the clock's milliseconds, a sequence
// that increases within one millisecond of one Client, and 48 random bits.
func (c *Client) newID(prefix string, at time.Time) string {
	ms := at.UnixMilli()
	var tail [6]byte
	_, _ = rand.Read(tail[:])
	c.idMu.Lock()
	if ms == c.lastMS {
		c.seq++
	} else {
		c.lastMS, c.seq = ms, 0
	}
	seq := c.seq
	c.idMu.Unlock()
	return identity.FormatID(prefix, ms, uint32(seq), tail)
}

// requestHash returns the hex SHA-256 of an operation name and the canonical JSON of its request.
func requestHash(op string, req any) string {
	b, _ := json.Marshal(struct {
		Op  string `json:"op"`
		Req any    `json:"req"`
	}{op, req})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// authorize loads the principal and checks that it is active and holds scope. It is the one place
// (with checkPrincipal and checkProfile, which Remember's and Forget's transactions call again after
// their locks) that decides who may do what. A host principal holds every scope but write, and
// needs only its team to exist (ErrNotFound otherwise); it is returned with a synthetic profile
// holding those scopes and the team's policy in force.
func (c *Client) authorize(ctx context.Context, p Principal, scope identity.Scope) (store.Principal, error) {
	if err := checkPrincipal(p, scope); err != nil {
		return store.Principal{}, err
	}
	if p.Host {
		pol, err := c.store.PolicyGet(ctx, p.TeamID)
		if err != nil {
			if isNotFound(err) {
				return store.Principal{}, fmt.Errorf("%w: team %s", ErrNotFound, p.TeamID)
			}
			return store.Principal{}, err
		}
		return store.Principal{Profile: store.Profile{Team: p.TeamID, Name: hostActor, Status: identity.ProfileActive,
			Scopes: hostScopes}, Policy: pol}, nil
	}
	pr, err := c.store.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: p.TeamID, Profile: p.ProfileID})
	return pr, checkLoaded(pr, err, p, scope)
}

// checkLoaded decides on a profile principal the store loaded (err is the load's error): a profile
// the team does not have is ErrForbidden, then checkProfile. Recall loads the principal in its
// search's round trip and decides here, as authorize does.
func checkLoaded(pr store.Principal, err error, p Principal, scope identity.Scope) error {
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%w: profile %s is not a profile of team %s", ErrForbidden, p.ProfileID, p.TeamID)
		}
		return err
	}
	return checkProfile(pr.Profile.Status, pr.Profile.Scopes, p, scope)
}

// hostScopes are the scopes a host principal holds: every scope but write (it never authors).
var hostScopes = []identity.Scope{identity.ScopeErasure, identity.ScopeRead, identity.ScopeVocabulary}

// checkProfile checks a loaded profile's status and scopes for scope; a host principal has no
// profile and passes with the scopes it holds.
func checkProfile(status identity.ProfileStatus, scopes []identity.Scope, p Principal, scope identity.Scope) error {
	if p.Host {
		return checkPrincipal(p, scope)
	}
	if status != identity.ProfileActive {
		return fmt.Errorf("%w: profile %s is %s", ErrForbidden, p.ProfileID, status)
	}
	if !slices.Contains(scopes, scope) {
		return fmt.Errorf("%w: profile %s lacks the %s scope", ErrForbidden, p.ProfileID, scope)
	}
	return nil
}

func profileStatus(active bool) identity.ProfileStatus {
	if active {
		return identity.ProfileActive
	}
	return identity.ProfileDisabled
}

// replayed returns the result of operation op stored under an idempotency key, or
// ErrIdempotencyConflict when the key served another request (another operation, or another request
// hash). what names the result in the error of an unreadable record.
func replayed[T any](rec *store.IdempotencyRecord, op, hash, what string) (*T, error) {
	if rec.Operation != op || rec.RequestHash != hash {
		return nil, fmt.Errorf("%w: key was used for another %s request", ErrIdempotencyConflict, rec.Operation)
	}
	var out T
	if err := json.Unmarshal(rec.Result, &out); err != nil {
		return nil, fmt.Errorf("densemem: stored %s of %s is unreadable: %v", what, rec.IngestID, err)
	}
	return &out, nil
}

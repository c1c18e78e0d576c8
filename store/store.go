// Package store is the persistence seam of Dense-Mem: the Store contract every backend implements and
// the parameter and row types that cross it. Methods are noun-first and take params structs; each
// documents the sentinel errors it returns. Nothing above this package sees driver types.
//
// The write path is shaped around round trips: RememberPrepare reads everything the pre-transaction
// steps need in one round trip, and inside Store.Tx each Tx method is one round trip that takes its
// locks in the global order (idempotency key, entity names, conflict keys, relationship rows) and then
// reads with fresh statements.
//
// # Other implementations
//
// Implementations outside this module are possible but not supported yet: store/postgres is the one
// implementation the library is built, tested and supported with. The seam is honest, though:
// store/storetest is a conformance suite that exercises the contracts documented here (team scoping,
// sentinel errors, atomic write sets, append-only ledgers, idempotency records, locking, known_at
// reconstruction, claims and leases, paging) through these interfaces alone, and store/postgres
// passes it in CI. A second implementation must pass storetest.Run. Passing it is necessary, not
// sufficient: the suite does not check the transport errors (timeouts, lost commits, an unreachable
// server) nor the costs the library's bounds assume (one round trip per Tx call, reads bounded by
// indexes). Before 1.0 this package is not a stable public contract: its methods, params and row
// types change with the library in any minor version, and an outside implementation has to follow.
package store

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// Store persists Dense-Mem's state. Every method is team-scoped: it never reads or writes a row of
// another team than the one its params name.
type Store interface {
	// TeamCreate creates a team and its first policy version in one transaction.
	TeamCreate(ctx context.Context, p TeamCreateParams) error
	// ProfileCreate creates a profile. ErrNotFound when the team does not exist.
	ProfileCreate(ctx context.Context, p ProfileCreateParams) error
	// ProfileSetStatus changes a profile's status. ErrNotFound when it does not exist.
	ProfileSetStatus(ctx context.Context, p ProfileSetStatusParams) error
	// PrincipalLoad returns a profile and its team's policy in force. ErrNotFound when either is missing.
	PrincipalLoad(ctx context.Context, p PrincipalLoadParams) (Principal, error)
	// PolicyAppend appends the next policy version of a team, only if ExpectVersion is the version in
	// force, and returns it. ErrStaleVersion when another version is in force, ErrNotFound when the
	// team does not exist.
	PolicyAppend(ctx context.Context, p PolicyAppendParams) (Policy, error)
	// PredicateAppend appends the next version of a predicate key and returns it, unless p.Check
	// refuses it (its error is returned as is). ErrNotFound when the team does not exist.
	PredicateAppend(ctx context.Context, p PredicateAppendParams) (relationship.Predicate, error)
	// PredicateList returns the latest version of every predicate key of a team.
	PredicateList(ctx context.Context, team identity.TeamID) ([]relationship.Predicate, error)

	// The List reads page a team's rows by keyset: each reads the rows after its params' key in
	// its documented order, Limit of them, and reports whether more follow. A team without rows (or
	// that does not exist) has an empty page. Errors: only the store's transport sentinels
	// (ErrTimeout, ErrUnavailable, ErrInternal).

	// ProfileList returns a page of a team's profiles in profile ID order.
	ProfileList(ctx context.Context, p ProfileListParams) (Page[Profile], error)
	// PredicateListPage returns a page of a team's predicates, the latest version of each key, in
	// key order.
	PredicateListPage(ctx context.Context, p PredicateListPageParams) (Page[relationship.Predicate], error)
	// CaseList returns a page of a team's conflict cases of the given statuses, status by status in
	// the order given, each status by review_due_at then conflict ID (with DeadlineDesc, every status
	// together by review_due_at then conflict ID, descending), with each case's current membership.
	CaseList(ctx context.Context, p CaseListParams) (Page[CaseListItem], error)
	// CaseGet returns one of a team's conflict cases, of any status, as CaseList shows it (ErrNotFound
	// when the team has none of that ID).
	CaseGet(ctx context.Context, team identity.TeamID, id conflict.ID) (CaseListItem, error)
	// ReviewItemList returns a page of a team's review items of one status (of one profile, or of
	// all), in (profile ID, created_at, review ID) order.
	ReviewItemList(ctx context.Context, p ReviewItemListParams) (Page[ReviewItemView], error)
	// NightlyRunList returns a page of a team's run ledger (one row per reserved run date), newest
	// run date first.
	NightlyRunList(ctx context.Context, p NightlyRunListParams) (Page[NightlyRun], error)

	// RememberPrepare reads, in one round trip, what Remember needs before its transaction.
	// A missing profile or team is reported through a nil Principal, not an error.
	RememberPrepare(ctx context.Context, p RememberPrepareParams) (RememberPrepared, error)
	// RelationshipGet returns one relationship of a team. ErrNotFound when absent.
	RelationshipGet(ctx context.Context, team identity.TeamID, id relationship.ID) (relationship.Relationship, error)
	// TraceLoad returns one page of everything Trace shows about one relationship, read in one
	// read-only REPEATABLE READ transaction, so every list reflects the same instant. ErrNotFound
	// when absent.
	TraceLoad(ctx context.Context, p TraceLoadParams) (TraceData, error)
	// RecallSearch runs the ranked candidate branches of a recall in one round trip.
	RecallSearch(ctx context.Context, p RecallSearchParams) (RecallSearch, error)
	// RecallDetails reads names, effective evidence and conflict cases of relationships in one round trip.
	RecallDetails(ctx context.Context, p RecallDetailsParams) (RecallDetails, error)
	// PolicyGet returns a team's policy in force. ErrNotFound when the team does not exist.
	PolicyGet(ctx context.Context, team identity.TeamID) (Policy, error)
	// PolicyVersions returns the given versions of a team's policy, in force or replaced since (the
	// versions are append-only, so every one stays readable), in version order, each once; a version
	// the team does not have is left out. The nightly reviewer reads the versions its claimed cases
	// pinned with it. Errors: only the store's transport sentinels.
	PolicyVersions(ctx context.Context, team identity.TeamID, versions []int) ([]Policy, error)
	// TeamsWithDueCases lists the teams that have a live case due at now (a maintenance read across
	// teams for the nightly scheduler; it returns team IDs only).
	TeamsWithDueCases(ctx context.Context, now time.Time) ([]identity.TeamID, error)
	// NightlyReserve reserves a team's run date and counts the worker's pass over it started, in one
	// transaction; false when another worker reserved the date first.
	NightlyReserve(ctx context.Context, p NightlyReserveParams) (bool, error)
	// NightlyFinish records one worker's pass over a team's run date in the date's ledger row, in one
	// statement: it adds the pass's counts, counts the pass finished, sets the finish time (the
	// latest of the passes') and appends the pass's failures while the row holds fewer than
	// MaxNightlyFailures. ErrNotFound when the run date was not reserved.
	NightlyFinish(ctx context.Context, p NightlyFinishParams) error
	// CaseClaimDue claims up to Batch due cases whose lease is free or expired and whose attempts of
	// the run date are not exhausted, in one statement (FOR UPDATE SKIP LOCKED), stamping the claim
	// token, lease, attempts and last evaluation time. It never changes a case's version.
	CaseClaimDue(ctx context.Context, p CaseClaimDueParams) ([]ClaimedCase, error)
	// CaseEscalateExhausted gives each case whose attempts of the run date are exhausted one
	// escalation event and schedules it for the next run date; it returns how many it escalated.
	CaseEscalateExhausted(ctx context.Context, p CaseEscalateParams) (int, error)
	// IdempotencyGet returns a stored idempotency record, or nil.
	IdempotencyGet(ctx context.Context, team identity.TeamID, profile identity.ProfileID, key string) (*IdempotencyRecord, error)
	// ReviewItemGet reads the review item of placement item itemID of ingest ingestID; ErrNotFound
	// when the team has none.
	ReviewItemGet(ctx context.Context, team identity.TeamID, ingestID, itemID string) (ReviewItem, error)
	// ObservationGet reads one observation of the team with the fragments of its ingest (content
	// included, by evidence index) and its resolution events (oldest first); ErrNotFound when the
	// team has none.
	ObservationGet(ctx context.Context, team identity.TeamID, id string) (StoredObservation, error)

	// IdentityRead reads, in one read-only round trip, what a split or merge of one entity shows
	// and moves (IdentityRead). A missing entity is a nil Entity, not an error. Errors: only the
	// store's transport sentinels.
	IdentityRead(ctx context.Context, p IdentityReadParams) (IdentityRead, error)
	// ErasureGet reads, in one read-only round trip, the erasure its actor recorded under the key
	// (nil when none) and the tombstones of the named fragments. Errors: only the store's transport
	// sentinels.
	ErasureGet(ctx context.Context, p ErasureGetParams) (ErasureRead, error)

	// KeysRead returns what KeysLock with p would, without taking any lock and outside any
	// transaction, in one round trip (p.Members and p.Predicates are not read). What it returns may
	// be changing meanwhile: a plan made from it is written with Tx.ReviewApplyFenced, whose fence
	// checks under the locks that what the plan relied on still holds.
	KeysRead(ctx context.Context, p KeysLockParams) (KeysLocked, error)

	// Tx runs fn in one transaction and commits when fn returns nil. On a deadlock or serialization
	// failure it retries fn in a new transaction a bounded number of times, so fn must recompute
	// everything from what it reads. Errors: ErrConflict after the retries, ErrUnavailable,
	// ErrCommitUnknown when the COMMIT was sent but its answer was lost (never retried), or fn's.
	// An implementation may open the transaction with fn's first Tx call and commit it with
	// WriteSetApply, to save round trips.
	Tx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Tx is one open transaction. Each method is one round trip; WriteSetApply is the last call of a
// transaction that writes, and may carry its COMMIT. A transaction belongs to one team: its first call
// is IntakeLock, KeysLock or WriteSetApplyFenced, whose params name the team, and a later call or a written row of another
// team fails (nothing of the transaction remains).
type Tx interface {
	// IntakeLock takes the idempotency lock, the entity-name locks (sorted) and the source-key locks
	// of the call's revisions (sorted), then re-reads the idempotency record, the caller's profile
	// (held FOR SHARE), the entities of the named names and the revised sources' states.
	IntakeLock(ctx context.Context, p IntakeLockParams) (IntakeLocked, error)
	// KeysLock takes the conflict-key locks (sorted), then locks and returns every owner's
	// relationships of those keys (FOR UPDATE in ID order) with their supports, then locks and
	// returns the keys' live cases and the named cases (FOR UPDATE in ID order).
	KeysLock(ctx context.Context, p KeysLockParams) (KeysLocked, error)
	// ReviewItemLock reads the review item of placement item itemID of ingest ingestID and holds
	// its row FOR UPDATE until the transaction ends; ErrNotFound when the team has none.
	ReviewItemLock(ctx context.Context, team identity.TeamID, ingestID, itemID string) (ReviewItem, error)
	// IdentityRead is Store.IdentityRead inside the transaction, after its locks: it reads the
	// entity, the observations and the relationships fresh (the relationships are not locked; lock
	// their keys with KeysLock). Like ReviewItemLock it may be the transaction's first call.
	IdentityRead(ctx context.Context, p IdentityReadParams) (IdentityRead, error)
	// EvidenceErase records a privacy erasure and redacts the content of every named fragment not
	// erased before, in one round trip (the database's erasure function: the only path that changes
	// content), and returns every named fragment's tombstone in fragment ID order. It may be the
	// transaction's first call. Errors: ErrNotFound (a fragment the team does not hold),
	// ErrForbidden (a profile actor without the erasure scope, or not active),
	// ErrIdempotencyConflict (the actor's key was recorded meanwhile by another erasure); nothing
	// of the transaction remains after any of them.
	EvidenceErase(ctx context.Context, p EvidenceEraseParams) ([]FragmentTombstone, error)
	// ReviewApplyFenced is the whole transaction of a case review planned from KeysRead, in one
	// round trip: it takes the conflict-key lock of f.Key, locks the key's live relationships and
	// its live cases and f.Case as KeysLock with LiveOnly does, checks f under those locks, and
	// writes ws as WriteSetApply does, COMMIT included. It must be the transaction's first call. A
	// fence that no longer holds fails with ErrStaleVersion, and nothing of the transaction remains.
	ReviewApplyFenced(ctx context.Context, f ReviewFence, ws WriteSet) error
	// ReviewApplyFencedBatch is ReviewApplyFenced for several reviews of one team in one transaction
	// and one round trip: every fence's key lock (in the global order), every fence in turn, then
	// every write set, COMMIT included. The fences' keys must differ. One fence that no longer holds
	// fails them all with ErrStaleVersion, and nothing of the transaction remains; the caller then
	// reviews them one by one.
	ReviewApplyFencedBatch(ctx context.Context, fences []ReviewFence, sets []WriteSet) error
	// WriteSetApplyFenced is the only call of a transaction whose write set was planned from reads
	// made before it (Remember's optimistic plan): in one round trip it starts the transaction, takes
	// the locks IntakeLock takes for f, checks under them that what the plan read still holds (f's
	// fence: the idempotency record absent, the profile as read, no name of f.Names held by an entity
	// name the plan did not read), then, when f.Keys is set, takes the conflict-key locks and locks
	// the rows KeysLock would lock and checks f.Keys under them, then writes ws as WriteSetApply
	// does, COMMIT included. When the
	// fence fails it returns ErrStaleVersion and nothing of the transaction remains: plan again under
	// the locks (IntakeLock, KeysLock, WriteSetApply).
	WriteSetApplyFenced(ctx context.Context, f WriteFence, ws WriteSet) error
	// WriteSetApply writes every row of ws and ends the transaction's work: no Tx call may follow.
	// An update whose expected version no longer matches fails with ErrStaleVersion; a database
	// integrity rule fails with ErrIntegrity. Either way nothing of the transaction remains. When the
	// call carries the COMMIT and its answer is lost, it fails with ErrCommitUnknown: the transaction
	// may or may not have committed.
	WriteSetApply(ctx context.Context, ws WriteSet) error
}

type statementTimeoutKey struct{}

// WithStatementTimeout returns a context whose store calls run every statement under a statement
// timeout of d; a statement past it is cancelled by the database and the call fails with ErrTimeout.
// The Client sets it from Config.Limits.StatementTimeout on every call.
func WithStatementTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, statementTimeoutKey{}, d)
}

// StatementTimeout returns the statement timeout set on ctx by WithStatementTimeout, or 0.
func StatementTimeout(ctx context.Context) time.Duration {
	d, _ := ctx.Value(statementTimeoutKey{}).(time.Duration)
	return d
}

type actorKey struct{}

// ReviewerActor is the actor a nightly review's transactions are bound to (WithActor); the host's
// is ActorHost, a profile's ProfileActor.
const ReviewerActor = "reviewer"

// ProfileActor is the actor of a call made by profile.
func ProfileActor(profile identity.ProfileID) string { return "profile:" + string(profile) }

// WithActor returns a context whose store calls bind their transactions to actor as well as to
// their team (migration 25): the database then refuses the writes that actor may not make (another
// author's evidence, another owner's lifecycle, profiles and policies unless the host, migration 26).
// The Client sets it on every call; a call whose context names no actor is bound to its team only.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// Actor returns the actor set on ctx by WithActor, or "".
func Actor(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// TeamCreateParams creates a team.
type TeamCreateParams struct {
	Team      identity.TeamID
	Name      string
	Policy    Policy
	CreatedAt time.Time
}

// ProfileCreateParams creates a profile.
type ProfileCreateParams struct {
	Team      identity.TeamID
	Profile   identity.ProfileID
	Name      string
	Scopes    []identity.Scope
	CreatedAt time.Time
}

// ProfileSetStatusParams changes a profile's status.
type ProfileSetStatusParams struct {
	Team      identity.TeamID
	Profile   identity.ProfileID
	Status    identity.ProfileStatus
	UpdatedAt time.Time
}

// PrincipalLoadParams names a profile.
type PrincipalLoadParams struct {
	Team    identity.TeamID
	Profile identity.ProfileID
}

// Profile is a stored profile.
type Profile struct {
	Team      identity.TeamID
	ID        identity.ProfileID
	Name      string
	Status    identity.ProfileStatus
	Scopes    []identity.Scope
	CreatedAt time.Time
}

// Policy is one version of a team's policy.
type Policy struct {
	Team                  identity.TeamID
	Version               int
	ReviewTTL             time.Duration
	AutoWriteThreshold    float64
	AuthoritativeProfiles []identity.ProfileID
	TimeZone              string
	CreatedBy             string
	CreatedAt             time.Time
}

// Principal is a profile with its team's policy in force.
type Principal struct {
	Profile Profile
	Policy  Policy
}

// PolicyAppendParams appends a policy version; Policy.Version is ignored and assigned
// (ExpectVersion+1).
type PolicyAppendParams struct {
	Policy Policy
	// ExpectVersion is the version in force that the new one replaces.
	ExpectVersion int
}

// PredicateAppendParams appends a predicate version; Predicate.Version is ignored and assigned.
type PredicateAppendParams struct {
	Team      identity.TeamID
	Predicate relationship.Predicate
	// CreatedBy is the registering profile's ID, or "host" for the host itself.
	CreatedBy string
	CreatedAt time.Time
	// Check, when set, is called under the lock that orders the team's predicate registrations, with
	// the latest version of every key the team has (as PredicateList returns them), so what it checks
	// still holds when the version is appended. When it returns an error nothing is appended and
	// PredicateAppend returns that error as is.
	Check func(registered []relationship.Predicate) error
}

// NameLookup is one name of a mention: its entity kind, its key (identity.NormalizeName) and the
// key's skeleton (identity.Skeleton). Entities are looked up, and names locked, by skeleton, so a
// look-alike name is found (and serialised) with an exact one.
type NameLookup struct {
	Kind       string
	Normalized string
	Skeleton   string
}

// RememberPrepareParams names what Remember reads before its transaction.
type RememberPrepareParams struct {
	Team           identity.TeamID
	Profile        identity.ProfileID
	IdempotencyKey string
	Names          []NameLookup
	KnownEntities  []identity.EntityID
	// AdoptFragments are the fragments the request adopts (evidence[i].adopt_fragment_id).
	AdoptFragments []evidence.FragmentID
	// Speculate, when set, asks for the live state of every conflict key the request's statements
	// can fall on (RememberPrepared.Speculated), read in the same round trip.
	Speculate *KeySpeculation
}

// RememberPrepared is what RememberPrepare read.
type RememberPrepared struct {
	// Principal is nil when the team or profile does not exist.
	Principal   *Principal
	Predicates  []relationship.Predicate
	Candidates  []identity.Entity
	Known       []identity.Entity
	Idempotency *IdempotencyRecord
	// Adoptable are the fragments among AdoptFragments that the team holds and that may be adopted,
	// with their content, in fragment ID order; a missing one is left out.
	Adoptable []FragmentRow
	// Speculated is what RememberPrepareParams.Speculate read, read without locks: a plan made from
	// it is written behind a KeysFence.
	Speculated KeysSpeculated
}

// IdempotencyRecord is a stored call result.
type IdempotencyRecord struct {
	Operation   string
	RequestHash string
	IngestID    string
	Result      json.RawMessage
}

// IntakeLockParams names the intake locks of one call.
type IntakeLockParams struct {
	Team           identity.TeamID
	Profile        identity.ProfileID
	IdempotencyKey string
	// NameLocks are the names that may be created; they are locked in a sorted order (by kind and
	// skeleton), or, past MaxLocks, by the team's name lock taken exclusively.
	NameLocks []NameLookup
	// MaxLocks bounds the advisory locks of one lock class in the transaction (0: no bound).
	MaxLocks int
	// Names are re-read after the locks (a superset of NameLocks).
	Names []NameLookup
	// KnownEntities are re-read after the locks.
	KnownEntities []identity.EntityID
	// DistinctionsOf, when set, asks for the entities mentions resolved to it were stated distinct
	// from (IntakeLocked.Distinctions): the identity cases a change on it may touch.
	DistinctionsOf identity.EntityID
	// AdoptFragments are re-read after the locks, as RememberPrepare reads them (without content).
	AdoptFragments []evidence.FragmentID
	// AdoptSources are the source keys of the adopted fragments (as read before the transaction):
	// they are locked with the revisions' source keys, so an adoption and a revision of the same
	// source serialise and a revision sees every support an adoption added.
	AdoptSources []string
	// Revisions are the source revisions the call makes: their source keys are locked after the
	// entity names (sorted; past MaxLocks, the team's source lock exclusively), then each source's
	// state is read (IntakeLocked.Sources).
	Revisions []SourceRevision
	// MaxRevisionRelationships bounds the relationships IntakeLocked.Sources lists per source: at most
	// one more is read, so the caller sees the bound was passed.
	MaxRevisionRelationships int
}

// SourceRevision is one source revision of a call: the source key, the revision it replaces, and the
// fragments it names besides (supersedes_fragment_ids).
type SourceRevision struct {
	Key        string
	Previous   string
	Supersedes []evidence.FragmentID
}

// SourceState is what IntakeLock read of one revised source under its lock.
type SourceState struct {
	Key string
	// Owner is the author of the source's first stored fragment (by created_at, then fragment ID),
	// "" when the team has none.
	Owner identity.ProfileID
	// Fragments are the fragments of the previous revision and the named ones that exist, in ID
	// order, each with its source key, revision, author and whether it is retired.
	Fragments []SourceFragment
	// Relationships are the relationships of any owner that the fragments support, in ID order: at
	// most MaxRevisionRelationships+1 of them.
	Relationships []RelationshipKey
}

// SourceFragment is a stored fragment as a source revision checks it.
type SourceFragment struct {
	ID        evidence.FragmentID
	SourceKey string
	Revision  string
	Author    identity.ProfileID
	Retired   bool
}

// RelationshipKey names a relationship with its conflict key.
type RelationshipKey struct {
	ID  relationship.ID
	Key conflict.Key
}

// WriteFence is what a write set planned before its transaction relied on (WriteSetApplyFenced):
// the locks to take, as IntakeLockParams names them, and what was read without them.
type WriteFence struct {
	Team           identity.TeamID
	Profile        identity.ProfileID
	IdempotencyKey string
	// NameLocks and MaxLocks are IntakeLockParams' (the names that may be created).
	NameLocks []NameLookup
	MaxLocks  int
	// ProfileStatus and ProfileScopes are the profile as read; the fence holds its row FOR SHARE
	// and fails unless it still has them.
	ProfileStatus identity.ProfileStatus
	ProfileScopes []identity.Scope
	// Names are the names whose entities were read (RememberPrepareParams.Names), and Candidates
	// what was read of them: the fence fails when an entity name matching Names (by kind and
	// skeleton, as the read matched them) is not among the Candidates' names. Entities and their
	// names are append-only, so nothing else about them can change.
	Names      []NameLookup
	Candidates []identity.Entity
	// Keys, when set, is the fence of the conflict keys the plan read (KeysSpeculated.Narrow): their
	// locks are taken after the intake locks (past MaxLocks, the team's key lock), then the rows
	// KeysLock with Keys.Params would lock, and the fence fails unless they are as read.
	Keys *KeysFence
}

// IntakeLocked is what IntakeLock read after its locks.
type IntakeLocked struct {
	Idempotency   *IdempotencyRecord
	ProfileActive bool
	ProfileScopes []identity.Scope
	Candidates    []identity.Entity
	Known         []identity.Entity
	// Distinctions are the entities IntakeLockParams.DistinctionsOf was stated distinct from, sorted.
	Distinctions []identity.EntityID
	// Adoptable are the fragments among IntakeLockParams.AdoptFragments that may still be adopted,
	// as RememberPrepared.Adoptable but without their content.
	Adoptable []FragmentRow
	// Sources are the states of IntakeLockParams.Revisions' sources, in the params' order.
	Sources []SourceState
}

// KeysLockParams names the conflict keys one call touches.
type KeysLockParams struct {
	Team identity.TeamID
	Keys []conflict.Key
	// MaxLocks bounds the conflict-key advisory locks (0: no bound); past it the team's key lock is
	// taken exclusively instead.
	MaxLocks int
	// Cases names conflict cases the call responds to; they are returned whatever their key or status.
	Cases []conflict.ID
	// Predicates asks for the team's predicate list (as PredicateList) in the same round trip.
	Predicates bool
	// LiveOnly asks for only the keys' relationships that are active, pending_evidence or
	// needs_review, with their supports: what a case review needs. A key's closed history
	// (superseded, retracted, rejected) is then not read, so the cost does not grow with it.
	LiveOnly bool
	// Named are relationships the call names by ID (a proposal's corrects_relationship_id): with
	// LiveOnly, those of them that lie on the keys but are closed are returned too, unlocked and
	// without supports (a closed relationship never changes), so the call can tell a closed
	// relationship of the key from one that is not of the key.
	Named []relationship.ID
	// ByObject narrows, with LiveOnly, the read of the keys it names (each of Keys) to what a
	// decision comparing statements by object needs (relationship.Predicate.ComparesByObject): the
	// key's live relationships about one of the objects listed with it, its held (needs_review) ones
	// and the live ones about a held one's object, and the Named ones. Its other keys are read whole.
	ByObject []KeyObject
	// Members asks for the current members of the returned cases that are not relationships of the
	// keys (an identity_correction case's members lie on other keys): locked after the case rows,
	// returned in KeysLocked.Members with their supports in KeysLocked.Supports.
	Members bool
}

// KeyObject is one object of a conflict key whose read KeysLockParams.ByObject narrows.
type KeyObject struct {
	Key    conflict.Key
	Object relationship.Object
	// Adopters, when set, leaves out of the read the relationships about Object that other owners
	// than Adopters.Caller and Adopters.Author state with Adopters.Polarity and that Adopters.Fragment
	// supports: the other adopters of the fragment the caller adopts (decision 155).
	Adopters *KeyAdopters
}

// KeyAdopters names the adopters a KeyObject's read leaves out: the caller adopts Fragment, whose
// author is Author, in every statement it makes about the object, all of them with Polarity.
type KeyAdopters struct {
	Caller   identity.ProfileID
	Fragment evidence.FragmentID
	Author   identity.ProfileID
	Polarity relationship.Polarity
}

// ReviewFence is what a case review planned from KeysRead relied on: the key's live relationships at
// their versions, the number of their supports and of those whose fragment was retired, and the
// key's live cases and the reviewed case at their versions and claim tokens. Every change a writer
// can make to these moves one of them: a relationship's version moves with every change of it,
// supports and retirements are only ever added, and a case's version moves with every change of its
// status, positions or members.
type ReviewFence struct {
	Team          identity.TeamID
	Key           conflict.Key
	Case          conflict.ID
	Relationships []relationship.ID
	Versions      []int
	Supports      int
	Retired       int
	Cases         []conflict.ID
	CaseVersions  []int
	ClaimTokens   []string
}

// NewReviewFence returns the fence of a review of case id on key k planned from kl, a KeysRead of
// the key (ForKey narrows a read of several keys to it).
func NewReviewFence(k conflict.Key, id conflict.ID, kl KeysLocked) ReviewFence {
	f := ReviewFence{Team: k.Team, Key: k, Case: id}
	for _, r := range kl.Relationships {
		f.Relationships, f.Versions = append(f.Relationships, r.ID), append(f.Versions, r.Version)
	}
	f.Supports, f.Retired = kl.supportCounts()
	for _, c := range kl.Cases {
		f.Cases, f.CaseVersions, f.ClaimTokens = append(f.Cases, c.ID), append(f.CaseVersions, c.Version), append(f.ClaimTokens, c.ClaimToken)
	}
	return f
}

// ForKey returns the part of kl a read of key k alone with the named cases would have returned: the
// key's relationships with their supports and object names, and the key's cases and the named ones.
// Its slices are copies: a ledger loaded from it changes none of kl's rows.
func (kl KeysLocked) ForKey(k conflict.Key, cases ...conflict.ID) KeysLocked {
	out := KeysLocked{ObjectNames: map[relationship.ID]string{}, SubjectNames: map[identity.EntityID]string{}}
	if name, ok := kl.SubjectNames[k.Subject]; ok {
		out.SubjectNames[k.Subject] = name
	}
	on := map[relationship.ID]bool{}
	for _, r := range kl.Relationships {
		if r.Subject == k.Subject && r.PredicateKey == k.PredicateKey && r.Scope == k.Scope {
			out.Relationships = append(out.Relationships, r)
			out.ObjectNames[r.ID] = kl.ObjectNames[r.ID]
			on[r.ID] = true
		}
	}
	for _, s := range kl.Supports {
		if on[s.RelationshipID] {
			out.Supports = append(out.Supports, s)
		}
	}
	for _, it := range kl.Items {
		if on[it.RelationshipID] {
			out.Items = append(out.Items, it)
		}
	}
	for _, c := range kl.Cases {
		if c.Key == k || slices.Contains(cases, c.ID) {
			c.Members = slices.Clone(c.Members)
			c.Positions = maps.Clone(c.Positions)
			out.Cases = append(out.Cases, c)
		}
	}
	return out
}

// SupportRow is one stored support link as the counting rules need it.
type SupportRow struct {
	RelationshipID relationship.ID
	// FragmentID is the supporting fragment (an adoption links the adopter's relationship to the other
	// owners' relationships the fragment supports).
	FragmentID evidence.FragmentID
	// Retirement is the ID of the retirement of the support's fragment, "" while it is not retired:
	// a support of a retired fragment is not effective.
	Retirement  string
	Group       string
	ContentHash string
	Authority   evidence.Authority
	Author      identity.ProfileID
	// ConfirmedFrom is the valid_from the support's verification event confirmed, if any.
	ConfirmedFrom *time.Time
	// ObservationID, VerificationID and the span [Start, End) are the link's own: a held statement
	// that becomes a support of its owner's identical current one is linked again from them.
	ObservationID  string
	VerificationID string
	Start, End     int
}

// KeysLocked is what KeysLock read: every owner's relationships of the keys with their supports,
// the keys' live cases and the named cases, each with positions and current membership.
type KeysLocked struct {
	Relationships []relationship.Relationship
	Supports      []SupportRow
	// ObjectNames holds each relationship's object name (entity canonical name or literal text).
	ObjectNames map[relationship.ID]string
	Cases       []CaseRow
	// Members are the current members of the cases on other keys, when KeysLockParams.Members asked.
	Members []relationship.Relationship
	// Predicates is the team's predicate list when KeysLockParams.Predicates asked for it.
	Predicates []relationship.Predicate
	// Items are the open relationship_conflict review items about the keys' held relationships: what
	// each one asks, so a change that moves its question re-asks it.
	Items []ReviewItemRow
	// SubjectNames holds the canonical name of each key's subject, for the questions items ask.
	SubjectNames map[identity.EntityID]string
}

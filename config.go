package densemem

import (
	"log/slog"
	"time"

	"github.com/densemem/densemem/evidence"
)

// Config configures a Client. A nil *Config or a zero field means the documented default.
type Config struct {
	// Clock supplies every recorded time. Default: time.Now. Times are stored in UTC at microsecond
	// precision.
	Clock func() time.Time
	// Verifier judges claims against cited evidence, once per Remember. Default: evidence.SpanVerifier.
	Verifier evidence.Verifier
	// Logger receives debug and warning records. Default: slog.Default().
	Logger *slog.Logger
	// Limits bounds request sizes. Zero fields take their defaults.
	Limits Limits
	// AutoWriteThreshold is the verifier confidence at or above which an entailed claim gains support,
	// written into a new team's first policy. Default 0.7; bounds 0..1. Teams change it with SetTeamPolicy.
	AutoWriteThreshold float64
	// ReviewTTL is the conflict review deadline of a new team's first policy. Default 7 days; bounds 1..30 days.
	ReviewTTL time.Duration
	// Nightly tunes RunNightlyReview.
	Nightly NightlyConfig
}

// Limits bounds one request and the work it may cause. Zero fields take the defaults shown; a
// request past a limit is refused with a *ValidationError naming the field, and nothing is written.
type Limits struct {
	MaxEvidence      int // evidence items per Remember (20)
	MaxContentBytes  int // bytes per evidence item (32 KiB)
	MaxEntities      int // proposal entities per Remember (100)
	MaxRelationships int // proposal relationships per Remember (200)
	MaxCitations     int // citations per relationship (20)
	MaxTextBytes     int // bytes of a name, ref, predicate phrase, scope or key (512)
	// MaxAliasesPerEntity bounds the aliases one entity holds, stored and proposed (32; at most
	// HardMaxAliasesPerEntity, which the database enforces).
	MaxAliasesPerEntity int
	// MaxNames bounds the names and aliases of the entities of one Remember that have no
	// known_entity_id (256): each is looked up by index and takes a name lock.
	MaxNames int
	// MaxAdvisoryLocks bounds the advisory locks one transaction takes per lock class (entity names,
	// conflict keys) (64). Past it the transaction takes its team's lock of that class exclusively
	// instead, so a large request serialises its team's writers of that class rather than filling
	// the server's shared lock table.
	MaxAdvisoryLocks int
	// MaxQueryTerms bounds the words of a recall query that full-text search uses (16); the rest of
	// the query is left out and the response says so.
	MaxQueryTerms int
	// MaxRecallHits bounds the rows each source of recall candidates contributes before ranking
	// (2,000). A recall reads first only as many rows per source as its branches keep (3 × limit,
	// at most 150) and widens toward MaxRecallHits only when the view's filters rejected too many of
	// them (decision 122); whenever a source had more rows than were read, the response reports
	// candidates_truncated.
	MaxRecallHits int
	// MaxRecallExcerpts bounds the evidence excerpts of one Recall result, and of each member of a
	// case position Recall shows (10): the first in Trace's order. A result with more says how many
	// more (EvidenceOmitted) and where Trace's evidence list goes on (EvidenceNextAfter). At the
	// default no result reaches 64 KiB (decision 141).
	MaxRecallExcerpts int
	// StatementTimeout bounds every statement of every store call (5 s); a statement past it is
	// cancelled by PostgreSQL and the call fails with ErrTimeout, writing nothing.
	StatementTimeout time.Duration
	// MaxTraceItems is the most items a Trace request may ask for per list with TraceRequest.Limit
	// (500); a request that says nothing gets DefaultTraceItems (50), or MaxTraceItems when smaller.
	MaxTraceItems int
	// MaxTraceContentBytes bounds the fragment content and excerpt bytes one Trace response carries
	// (1 MiB, or twice MaxContentBytes when that is more); evidence past it has ContentOmitted. It
	// must be at least twice MaxContentBytes, so an evidence item and its excerpt fit on a page
	// alone: New rejects a smaller value.
	MaxTraceContentBytes int
	// MaxPageItems is the most items a page of ListProfiles, ListPredicates, ListConflicts or
	// ListReviewItems may ask for with its Limit (500); a request that says nothing gets
	// DefaultPageItems (50), or MaxPageItems when smaller.
	MaxPageItems int
	// MaxReassignItems bounds a split or merge (200): the observations it lists or moves, and the
	// caller's relationships on the entity it re-derives. A preview past it is truncated and says so; a
	// confirmation past it is refused with a *ValidationError.
	MaxReassignItems int
	// MaxRevisionRelationships bounds the relationships (of every profile) that the fragments one
	// source revision retires may support (10,000). The revision retires them and recomputes them in
	// the one transaction of its Remember (decision 111); a revision past the bound is refused with a
	// *ValidationError naming evidence[i].previous_source_revision, and nothing is written. It bounds
	// an erasure likewise: fragments supporting more relationships are refused at fragment_ids.
	MaxRevisionRelationships int
}

// Defaults.
const (
	DefaultAutoWriteThreshold  = 0.7
	DefaultReviewTTL           = 7 * 24 * time.Hour
	DefaultMaxEvidence         = 20
	DefaultMaxContentBytes     = 32 << 10
	DefaultMaxEntities         = 100
	DefaultMaxRelationships    = 200
	DefaultMaxCitations        = 20
	DefaultMaxTextBytes        = 512
	DefaultMaxAliasesPerEntity = 32
	DefaultMaxNames            = 256
	DefaultMaxAdvisoryLocks    = 64
	DefaultMaxQueryTerms       = 16
	DefaultMaxRecallHits       = 2000
	DefaultMaxRecallExcerpts   = 10
	DefaultStatementTimeout    = 5 * time.Second
	// HardMaxAliasesPerEntity is the most aliases an entity can hold whatever the configuration; a
	// database trigger refuses more.
	HardMaxAliasesPerEntity = 255
	// MaxIdentityContextKeys bounds the keys of one identity_context.
	MaxIdentityContextKeys = 20
	// DefaultTraceItems is the number of items per Trace list when TraceRequest.Limit is 0
	// (Limits.MaxTraceItems when that is smaller).
	DefaultTraceItems           = 50
	DefaultMaxTraceItems        = 500
	DefaultMaxTraceContentBytes = 1 << 20
	// DefaultPageItems is the page size of the List calls when their Limit is 0 (Limits.MaxPageItems
	// when that is smaller).
	DefaultPageItems    = 50
	DefaultMaxPageItems = 500
	// DefaultMaxReassignItems is Limits.MaxReassignItems' default.
	DefaultMaxReassignItems = 200
	// DefaultMaxRevisionRelationships is Limits.MaxRevisionRelationships' default.
	DefaultMaxRevisionRelationships = 10000
)

func (c *Config) withDefaults() Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.Clock == nil {
		out.Clock = time.Now
	}
	if out.Verifier == nil {
		out.Verifier = evidence.SpanVerifier{}
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.AutoWriteThreshold == 0 {
		out.AutoWriteThreshold = DefaultAutoWriteThreshold
	}
	if out.ReviewTTL == 0 {
		out.ReviewTTL = DefaultReviewTTL
	}
	l := &out.Limits
	for _, f := range []struct {
		v   *int
		def int
	}{{&l.MaxEvidence, DefaultMaxEvidence}, {&l.MaxContentBytes, DefaultMaxContentBytes},
		{&l.MaxEntities, DefaultMaxEntities}, {&l.MaxRelationships, DefaultMaxRelationships},
		{&l.MaxCitations, DefaultMaxCitations}, {&l.MaxTextBytes, DefaultMaxTextBytes},
		{&l.MaxAliasesPerEntity, DefaultMaxAliasesPerEntity}, {&l.MaxNames, DefaultMaxNames},
		{&l.MaxAdvisoryLocks, DefaultMaxAdvisoryLocks}, {&l.MaxQueryTerms, DefaultMaxQueryTerms},
		{&l.MaxRecallHits, DefaultMaxRecallHits}, {&l.MaxRecallExcerpts, DefaultMaxRecallExcerpts},
		{&l.MaxTraceItems, DefaultMaxTraceItems},
		{&l.MaxPageItems, DefaultMaxPageItems}, {&l.MaxReassignItems, DefaultMaxReassignItems},
		{&l.MaxRevisionRelationships, DefaultMaxRevisionRelationships}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if l.StatementTimeout <= 0 {
		l.StatementTimeout = DefaultStatementTimeout
	}
	if l.MaxTraceContentBytes <= 0 {
		l.MaxTraceContentBytes = max(DefaultMaxTraceContentBytes, 2*l.MaxContentBytes)
	}
	return out
}

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

// Limits bounds one request. Zero fields take the defaults shown.
type Limits struct {
	MaxEvidence      int // evidence items per Remember (20)
	MaxContentBytes  int // bytes per evidence item (32 KiB)
	MaxEntities      int // proposal entities per Remember (100)
	MaxRelationships int // proposal relationships per Remember (200)
	MaxCitations     int // citations per relationship (20)
	MaxTextBytes     int // bytes of a name, ref, predicate phrase, scope or key (512)
	// MaxTraceItems is the most items a Trace request may ask for per list with TraceRequest.Limit
	// (500); a request that says nothing gets DefaultTraceItems (50), or MaxTraceItems when smaller.
	MaxTraceItems int
	// MaxTraceContentBytes bounds the fragment content and excerpt bytes one Trace response carries
	// (1 MiB, or twice MaxContentBytes when that is more); evidence past it has ContentOmitted. It
	// must be at least twice MaxContentBytes, so an evidence item and its excerpt fit on a page
	// alone: New rejects a smaller value.
	MaxTraceContentBytes int
}

// Defaults.
const (
	DefaultAutoWriteThreshold = 0.7
	DefaultReviewTTL          = 7 * 24 * time.Hour
	DefaultMaxEvidence        = 20
	DefaultMaxContentBytes    = 32 << 10
	DefaultMaxEntities        = 100
	DefaultMaxRelationships   = 200
	DefaultMaxCitations       = 20
	DefaultMaxTextBytes       = 512
	// DefaultTraceItems is the number of items per Trace list when TraceRequest.Limit is 0
	// (Limits.MaxTraceItems when that is smaller).
	DefaultTraceItems           = 50
	DefaultMaxTraceItems        = 500
	DefaultMaxTraceContentBytes = 1 << 20
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
		{&l.MaxTraceItems, DefaultMaxTraceItems}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if l.MaxTraceContentBytes <= 0 {
		l.MaxTraceContentBytes = max(DefaultMaxTraceContentBytes, 2*l.MaxContentBytes)
	}
	return out
}

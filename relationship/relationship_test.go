package relationship_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/relationship"
)

func day(s string) *time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func TestNormalizePhrase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"deploys_from", "deploys_from"},
		{"Deploys From", "deploys_from"},
		{"deploys-from", "deploys_from"},
		{"  deploys   from ", "deploys_from"},
		{"DEPLOYS-FROM", "deploys_from"},
		{"deploys\tfrom\n", "deploys_from"},
		{"works on-call for", "works_on_call_for"},
		{"", ""},
		{"   ", ""},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, relationship.NormalizePhrase(tt.in)); diff != "" {
			t.Errorf("NormalizePhrase(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestNormalizeScope(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"  ", ""},
		{" EU-West ", "eu-west"},
		{"Prod Europe", "prod europe"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, relationship.NormalizeScope(tt.in)); diff != "" {
			t.Errorf("NormalizeScope(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestMatchPredicate(t *testing.T) {
	t.Parallel()
	deploys := relationship.Predicate{Key: "deploys_from", Version: 2, Kind: relationship.KindState,
		Cardinality: relationship.CardinalityOne, Aliases: []string{"Deployed From", "ships-from"}}
	ships := relationship.Predicate{Key: "ships_from", Version: 1, Kind: relationship.KindEvent,
		Cardinality: relationship.CardinalityMany}
	worksOn := relationship.Predicate{Key: "works_on", Version: 1, Kind: relationship.KindState,
		Cardinality: relationship.CardinalityMany, Aliases: []string{"contributes to"}}
	preds := []relationship.Predicate{deploys, ships, worksOn}

	tests := []struct {
		name   string
		phrase string
		want   relationship.Predicate
		found  bool
	}{
		{"key", "deploys_from", deploys, true},
		{"key from a spoken phrase", " Deploys From ", deploys, true},
		{"key from a hyphenated phrase", "deploys-from", deploys, true},
		{"alias", "deployed from", deploys, true},
		{"alias normalised both sides", "DEPLOYED-FROM", deploys, true},
		{"alias of a later predicate", "contributes-to", worksOn, true},
		{"key wins over an earlier predicate's alias", "ships from", ships, true},
		{"no match", "runs_on", relationship.Predicate{}, false},
		{"empty phrase", "", relationship.Predicate{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, found := relationship.MatchPredicate(tt.phrase, preds)
			if found != tt.found {
				t.Errorf("MatchPredicate(%q) found = %v, want %v", tt.phrase, found, tt.found)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MatchPredicate(%q) (-want +got):\n%s", tt.phrase, diff)
			}
		})
	}
	if _, found := relationship.MatchPredicate("deploys_from", nil); found {
		t.Error("MatchPredicate with no predicates found one")
	}
}

func TestPredicateAllows(t *testing.T) {
	t.Parallel()
	entityPred := relationship.Predicate{Key: "deploys_from", SubjectKinds: []string{"environment"},
		ObjectKinds: []string{"git_branch", "tag"}}
	openPred := relationship.Predicate{Key: "related_to"}
	valuePred := relationship.Predicate{Key: "replica_count", SubjectKinds: []string{"service"}, ValueObject: true}
	valuePredWithKinds := relationship.Predicate{Key: "odd", ValueObject: true, ObjectKinds: []string{"git_branch"}}

	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"subject kind listed", entityPred.AllowsSubject("environment"), true},
		{"subject kind not listed", entityPred.AllowsSubject("person"), false},
		{"subject kinds open", openPred.AllowsSubject("anything"), true},
		{"object kind listed", entityPred.AllowsObject("tag"), true},
		{"object kind not listed", entityPred.AllowsObject("person"), false},
		{"value object on entity predicate", entityPred.AllowsObject(""), false},
		{"object kinds open", openPred.AllowsObject("person"), true},
		{"value object on open entity predicate", openPred.AllowsObject(""), false},
		{"value predicate takes a value", valuePred.AllowsObject(""), true},
		{"value predicate refuses an entity", valuePred.AllowsObject("git_branch"), false},
		{"value predicate refuses an entity even if kinds list it", valuePredWithKinds.AllowsObject("git_branch"), false},
		{"value predicate subject listed", valuePred.AllowsSubject("service"), true},
		{"value predicate subject not listed", valuePred.AllowsSubject("environment"), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestIntervalOverlaps(t *testing.T) {
	t.Parallel()
	jan, feb, mar, apr := day("2026-01-01"), day("2026-02-01"), day("2026-03-01"), day("2026-04-01")
	iv := func(from, to *time.Time) relationship.Interval { return relationship.Interval{From: from, To: to} }
	tests := []struct {
		name string
		a, b relationship.Interval
		want bool
	}{
		{"both unbounded", iv(nil, nil), iv(nil, nil), true},
		{"unbounded and bounded", iv(nil, nil), iv(jan, feb), true},
		{"open-ended from jan and until mar", iv(jan, nil), iv(nil, mar), true},
		{"until jan and from mar", iv(nil, jan), iv(mar, nil), false},
		{"until feb and from feb (touching)", iv(nil, feb), iv(feb, nil), false},
		{"touching half-open [jan,feb) [feb,mar)", iv(jan, feb), iv(feb, mar), false},
		{"partial overlap", iv(jan, mar), iv(feb, apr), true},
		{"contained", iv(jan, apr), iv(feb, mar), true},
		{"disjoint with gap", iv(jan, feb), iv(mar, apr), false},
		{"same interval", iv(jan, feb), iv(jan, feb), true},
		{"same open-ended start", iv(feb, nil), iv(feb, nil), true},
		{"later open-ended start overlaps earlier open-ended", iv(jan, nil), iv(mar, nil), true},
		{"from before until after the other's start", iv(nil, day("2026-02-02")), iv(feb, nil), true},
	}
	for _, tt := range tests {
		if got := tt.a.Overlaps(tt.b); got != tt.want {
			t.Errorf("%s: a.Overlaps(b) = %v, want %v", tt.name, got, tt.want)
		}
		if got := tt.b.Overlaps(tt.a); got != tt.want {
			t.Errorf("%s: b.Overlaps(a) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIntervalContains(t *testing.T) {
	t.Parallel()
	jan, feb := day("2026-01-01"), day("2026-02-01")
	mid := *day("2026-01-15")
	tests := []struct {
		name string
		iv   relationship.Interval
		at   time.Time
		want bool
	}{
		{"unbounded", relationship.Interval{}, mid, true},
		{"inside", relationship.Interval{From: jan, To: feb}, mid, true},
		{"at From (inclusive)", relationship.Interval{From: jan, To: feb}, *jan, true},
		{"at To (exclusive)", relationship.Interval{From: jan, To: feb}, *feb, false},
		{"just before To", relationship.Interval{From: jan, To: feb}, feb.Add(-time.Nanosecond), true},
		{"before From", relationship.Interval{From: jan, To: feb}, jan.Add(-time.Nanosecond), false},
		{"after To", relationship.Interval{From: jan, To: feb}, *day("2026-03-01"), false},
		{"nil From", relationship.Interval{To: feb}, *day("1900-01-01"), true},
		{"nil To", relationship.Interval{From: jan}, *day("2999-01-01"), true},
		{"other zone, same instant as To", relationship.Interval{From: jan, To: feb}, feb.In(time.FixedZone("X", 3600)), false},
	}
	for _, tt := range tests {
		if got := tt.iv.Contains(tt.at); got != tt.want {
			t.Errorf("%s: Contains(%v) = %v, want %v", tt.name, tt.at, got, tt.want)
		}
	}
}

func TestCurrentAtAndTrueAt(t *testing.T) {
	t.Parallel()
	may, june := day("2026-05-01"), day("2026-06-01")
	tests := []struct {
		name           string
		status         relationship.Status
		validity       relationship.Interval
		at             time.Time
		current, holds bool
	}{
		{"active, open-ended", relationship.StatusActive, relationship.Interval{}, *june, true, true},
		{"active, started before", relationship.StatusActive, relationship.Interval{From: may}, *june, true, true},
		{"active, starts at the instant", relationship.StatusActive, relationship.Interval{From: june}, *june, true, true},
		{"active, starts later: not yet", relationship.StatusActive, relationship.Interval{From: june}, *may, false, false},
		{"active, ended at the instant", relationship.StatusActive, relationship.Interval{To: june}, *june, false, false},
		{"superseded, inside its past interval", relationship.StatusSuperseded, relationship.Interval{To: june}, *may, false, true},
		{"superseded, after its interval", relationship.StatusSuperseded, relationship.Interval{To: may}, *june, false, false},
		{"superseded, the instant inside [valid_from, valid_to)", relationship.StatusSuperseded, relationship.Interval{From: may, To: june}, *day("2026-05-15"), false, true},
		{"retracted, inside its interval", relationship.StatusRetracted, relationship.Interval{}, *june, false, false},
		{"needs_review", relationship.StatusNeedsReview, relationship.Interval{}, *june, false, false},
		{"pending_evidence", relationship.StatusPendingEvidence, relationship.Interval{}, *june, false, false},
		{"rejected", relationship.StatusRejected, relationship.Interval{}, *june, false, false},
	}
	for _, tt := range tests {
		r := relationship.Relationship{Status: tt.status, Validity: tt.validity}
		if got := r.CurrentAt(tt.at); got != tt.current {
			t.Errorf("%s: CurrentAt = %v, want %v", tt.name, got, tt.current)
		}
		if got := r.TrueAt(tt.at); got != tt.holds {
			t.Errorf("%s: TrueAt = %v, want %v", tt.name, got, tt.holds)
		}
	}
}

func TestTierFor(t *testing.T) {
	t.Parallel()
	eff := func(group, hash string) evidence.Support {
		return evidence.Support{Group: group, ContentHash: hash, Effective: true}
	}
	tests := []struct {
		name     string
		supports []evidence.Support
		want     relationship.Tier
	}{
		{"no supports", nil, relationship.TierCandidate},
		{"only non-effective supports", []evidence.Support{{Group: "A", ContentHash: "h1", AllowedAuthority: true}}, relationship.TierCandidate},
		{"one group", []evidence.Support{eff("A", "h1")}, relationship.TierValidatedClaim},
		{"one group, several fragments", []evidence.Support{eff("A", "h1"), eff("A", "h2")}, relationship.TierValidatedClaim},
		{"two independent groups", []evidence.Support{eff("A", "h1"), eff("B", "h2")}, relationship.TierFact},
		{"allowed authority alone", []evidence.Support{{Group: "A", ContentHash: "h1", AllowedAuthority: true, Effective: true}}, relationship.TierFact},
		{"copies under two labels", []evidence.Support{eff("A", "h1"), eff("B", "h1")}, relationship.TierValidatedClaim},
		{"second group retired", []evidence.Support{eff("A", "h1"), {Group: "B", ContentHash: "h2"}}, relationship.TierValidatedClaim},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, relationship.TierFor(tt.supports)); diff != "" {
			t.Errorf("%s: TierFor (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestRelationshipEnumsValid(t *testing.T) {
	t.Parallel()
	valid := []interface{ Valid() bool }{
		relationship.StatusPendingEvidence, relationship.StatusActive, relationship.StatusNeedsReview,
		relationship.StatusSuperseded, relationship.StatusRetracted, relationship.StatusRejected,
		relationship.TierCandidate, relationship.TierValidatedClaim, relationship.TierFact,
		relationship.PolarityPositive, relationship.PolarityNegative,
		relationship.ModalityStatement, relationship.ModalityHypothetical, relationship.ModalityQuestion,
		relationship.ModalityPlan, relationship.ModalityQuote,
		relationship.KindState, relationship.KindEvent,
		relationship.CardinalityOne, relationship.CardinalityMany,
	}
	for _, v := range valid {
		if !v.Valid() {
			t.Errorf("%T(%q).Valid() = false", v, v)
		}
	}
	invalid := []interface{ Valid() bool }{
		relationship.Status(""), relationship.Status("Active"), relationship.Status("deleted"),
		relationship.Tier(""), relationship.Tier("claim"),
		relationship.Polarity(""), relationship.Polarity("positive"),
		relationship.Modality(""), relationship.Modality("Statement"),
		relationship.Kind(""), relationship.Kind("States"),
		relationship.Cardinality(""), relationship.Cardinality("single"),
	}
	for _, v := range invalid {
		if v.Valid() {
			t.Errorf("%T(%q).Valid() = true", v, v)
		}
	}
}

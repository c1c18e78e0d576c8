package evidence

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Verdict is a verifier's judgement of one claim against its cited text.
type Verdict string

// Verdicts.
const (
	VerdictEntailed     Verdict = "entailed"
	VerdictContradicted Verdict = "contradicted"
	VerdictInsufficient Verdict = "insufficient"
)

// Valid reports whether v is a known verdict.
func (v Verdict) Valid() bool {
	return v == VerdictEntailed || v == VerdictContradicted || v == VerdictInsufficient
}

// CitedText is one cited span with its text.
type CitedText struct {
	EvidenceIndex int
	Start, End    int
	Text          string
}

// Claim is one proposed relationship as the verifier sees it: the proposal's own text, never IDs.
type Claim struct {
	ProposalID      string
	SubjectNames    []string
	PredicatePhrase string
	// ObjectNames holds the object entity's names; ObjectValue the literal when the object is a value.
	ObjectNames []string
	ObjectValue string
	Negated     bool
	ValidFrom   *time.Time
	Cited       []CitedText
}

// VerifyRequest is one verifier call: every resolvable claim of one Remember.
type VerifyRequest struct {
	Claims []Claim
}

// Result is the verifier's answer for one claim.
type Result struct {
	ProposalID string
	Verdict    Verdict
	Confidence float64
	Rationale  string
	// ConfirmedValidFrom is the temporal bound the verifier found stated in the cited text, if any.
	ConfirmedValidFrom *time.Time
}

// Grants reports whether a verifier result grants support under a team's auto-write threshold: the
// verdict is entailed with a confidence at or above the threshold (DESIGN §5.7, the gate). Anything
// else leaves the claim without support.
func (r Result) Grants(threshold float64) bool {
	return r.Verdict == VerdictEntailed && r.Confidence >= threshold
}

// ConfirmsValidFrom reports whether a verifier-confirmed bound confirms validFrom: both are set and
// name the same instant. Only a confirmed valid_from may supersede or override (DESIGN §6.4, §8).
func ConfirmsValidFrom(confirmed, validFrom *time.Time) bool {
	return confirmed != nil && validFrom != nil && confirmed.Equal(*validFrom)
}

// Verifier judges claims against their cited evidence. Dense-Mem calls it once per Remember, before
// its transaction opens; an error fails the whole call with nothing written. Hosts plug in a model.
type Verifier interface {
	// Name identifies the verifier in verification events.
	Name() string
	// Verify returns one Result per claim, matched by ProposalID.
	Verify(ctx context.Context, req VerifyRequest) ([]Result, error)
}

// CheckResults reports an error unless results hold exactly one valid Result for every claim.
func CheckResults(req VerifyRequest, results []Result) error {
	seen := make(map[string]bool, len(results))
	want := make(map[string]bool, len(req.Claims))
	for _, c := range req.Claims {
		want[c.ProposalID] = true
	}
	for _, r := range results {
		switch {
		case !want[r.ProposalID]:
			return fmt.Errorf("result for unknown proposal %q", r.ProposalID)
		case seen[r.ProposalID]:
			return fmt.Errorf("two results for proposal %q", r.ProposalID)
		case !r.Verdict.Valid():
			return fmt.Errorf("proposal %q: unknown verdict %q", r.ProposalID, r.Verdict)
		case !(r.Confidence >= 0 && r.Confidence <= 1):
			return fmt.Errorf("proposal %q: confidence %v outside 0..1", r.ProposalID, r.Confidence)
		}
		seen[r.ProposalID] = true
	}
	if len(seen) != len(want) {
		return fmt.Errorf("%d results for %d claims", len(seen), len(want))
	}
	return nil
}

// SpanVerifier is the deterministic default Verifier. A claim is entailed (confidence 1) when its
// cited text names the subject and the object (case-insensitive, on token boundaries) and its negation
// cues agree with the polarity; otherwise it is insufficient. It confirms ValidFrom when the cited
// text contains that date as YYYY-MM-DD.
type SpanVerifier struct{}

// Name returns "span_verifier".
func (SpanVerifier) Name() string { return "span_verifier" }

// Verify judges every claim; it never fails.
func (SpanVerifier) Verify(_ context.Context, req VerifyRequest) ([]Result, error) {
	out := make([]Result, 0, len(req.Claims))
	for _, c := range req.Claims {
		out = append(out, verifySpan(c))
	}
	return out, nil
}

func verifySpan(c Claim) Result {
	parts := make([]string, 0, len(c.Cited))
	for _, t := range c.Cited {
		parts = append(parts, t.Text)
	}
	text := foldText(strings.Join(parts, "\n"))
	res := Result{ProposalID: c.ProposalID, Verdict: VerdictInsufficient}
	objects := c.ObjectNames
	if c.ObjectValue != "" {
		objects = []string{c.ObjectValue}
	}
	negated := hasNegation(text)
	switch {
	case !containsAny(text, c.SubjectNames):
		res.Rationale = "cited text does not name the subject"
	case !containsAny(text, objects):
		res.Rationale = "cited text does not name the object"
	case negated != c.Negated && negated:
		res.Rationale = "cited text is negated but the claim is positive"
	case negated != c.Negated:
		res.Rationale = "claim is negative but the cited text has no negation"
	default:
		res.Verdict, res.Confidence = VerdictEntailed, 1
		res.Rationale = "cited text names subject and object with matching polarity"
	}
	if res.Verdict == VerdictEntailed && c.ValidFrom != nil &&
		strings.Contains(text, c.ValidFrom.UTC().Format(time.DateOnly)) {
		t := *c.ValidFrom
		res.ConfirmedValidFrom = &t
		res.Rationale += "; valid_from stated in cited text"
	}
	return res
}

// foldText lower-cases s and collapses every run of white space to one space, so names and cues
// match across line breaks and repeated spaces.
func foldText(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), unicode.IsSpace), " ")
}

var negationWords = []string{"not", "no longer", "never"}

func hasNegation(text string) bool {
	return strings.Contains(text, "n't") || strings.Contains(text, "n’t") || containsAny(text, negationWords)
}

// containsAny reports whether text (lower case) contains any of needles on token boundaries.
func containsAny(text string, needles []string) bool {
	for _, n := range needles {
		n = foldText(n)
		if n != "" && containsToken(text, n) {
			return true
		}
	}
	return false
}

func containsToken(text, needle string) bool {
	for from := 0; from <= len(text); {
		i := strings.Index(text[from:], needle)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(needle)
		if boundaryBefore(text, start) && boundaryAfter(text, end) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		from = start + size
	}
	return false
}

func boundaryBefore(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return !isWordRune(r)
}

func boundaryAfter(text string, i int) bool {
	if i >= len(text) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return !isWordRune(r)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

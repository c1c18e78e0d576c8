package evidence_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/evidence"
)

func TestContentHash(t *testing.T) {
	t.Parallel()
	base := evidence.ContentHash("Production deploys from release.")
	if len(base) != 64 {
		t.Fatalf("ContentHash length = %d, want 64 hex digits", len(base))
	}
	tests := []struct {
		name    string
		content string
		same    bool
	}{
		{"identical", "Production deploys from release.", true},
		{"case variant", "PRODUCTION deploys FROM Release.", true},
		{"inner white space runs", "Production  deploys\tfrom\n\nrelease.", true},
		{"leading and trailing white space", "  \nProduction deploys from release.\t ", true},
		{"unicode white space", "Production\u00a0deploys\u2003from\u3000release.", true},
		{"different word", "Production deploys from main.", false},
		{"different punctuation", "Production deploys from release!", false},
		{"white space removed inside a word", "Production deploys from re lease.", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := evidence.ContentHash(tt.content)
			if (got == base) != tt.same {
				t.Errorf("ContentHash(%q) == base: %v, want %v", tt.content, got == base, tt.same)
			}
		})
	}
}

func TestGroupLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                       string
		sourceKey, sourceGroup, ch string
		want                       string
	}{
		{"source key wins over everything", "wiki/deploy", "ops-chat", "abc", "source:wiki/deploy"},
		{"source key without group", "wiki/deploy", "", "abc", "source:wiki/deploy"},
		{"source group over content hash", "", "ops-chat", "abc", "ops-chat"},
		{"content hash fallback", "", "", "abc", "content:abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := evidence.GroupLabel(tt.sourceKey, tt.sourceGroup, tt.ch)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("GroupLabel(%q, %q, %q) (-want +got):\n%s", tt.sourceKey, tt.sourceGroup, tt.ch, diff)
			}
		})
	}
}

func TestCountGroups(t *testing.T) {
	t.Parallel()
	eff := func(group, hash string) evidence.Support {
		return evidence.Support{Group: group, ContentHash: hash, Effective: true}
	}
	type result struct {
		Groups    int
		Authority bool
	}
	tests := []struct {
		name     string
		supports []evidence.Support
		want     result
	}{
		{"none", nil, result{0, false}},
		{"one", []evidence.Support{eff("A", "h1")}, result{1, false}},
		{"two independent", []evidence.Support{eff("A", "h1"), eff("B", "h2")}, result{2, false}},
		{"copies with different labels and same hash count once",
			[]evidence.Support{eff("A", "h1"), eff("B", "h1"), eff("C", "h1")}, result{1, false}},
		{"same label different hashes count once",
			[]evidence.Support{eff("A", "h1"), eff("A", "h2"), eff("A", "h3")}, result{1, false}},
		{"transitive merging",
			[]evidence.Support{eff("A", "h1"), eff("B", "h1"), eff("B", "h2"), eff("C", "h2")}, result{1, false}},
		{"transitive merging in reverse order",
			[]evidence.Support{eff("C", "h2"), eff("B", "h2"), eff("B", "h1"), eff("A", "h1")}, result{1, false}},
		{"two chains stay apart",
			[]evidence.Support{eff("A", "h1"), eff("B", "h1"), eff("C", "h3"), eff("D", "h3")}, result{2, false}},
		{"label and hash namespaces do not collide",
			[]evidence.Support{eff("x", "y"), eff("y", "x")}, result{2, false}},
		{"non-effective supports ignored", []evidence.Support{
			eff("A", "h1"),
			{Group: "B", ContentHash: "h2", Effective: false},
		}, result{1, false}},
		{"non-effective copy does not bridge groups", []evidence.Support{
			eff("A", "h1"),
			{Group: "A", ContentHash: "h2", Effective: false},
			eff("B", "h2"),
		}, result{2, false}},
		{"only non-effective", []evidence.Support{
			{Group: "A", ContentHash: "h1", AllowedAuthority: true},
		}, result{0, false}},
		{"authority from an effective support", []evidence.Support{
			eff("A", "h1"),
			{Group: "B", ContentHash: "h2", AllowedAuthority: true, Effective: true},
		}, result{2, true}},
		{"authority of a non-effective support ignored", []evidence.Support{
			eff("A", "h1"),
			{Group: "B", ContentHash: "h2", AllowedAuthority: true, Effective: false},
		}, result{1, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got result
			got.Groups, got.Authority = evidence.CountGroups(tt.supports)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CountGroups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCountGroupsWithGroupLabels(t *testing.T) {
	t.Parallel()
	text := "Production deploys from release."
	copied := "  production DEPLOYS from release. "
	supports := []evidence.Support{
		// The same text pasted by two callers under their own source groups.
		{Group: evidence.GroupLabel("", "chat-a", evidence.ContentHash(text)), ContentHash: evidence.ContentHash(text), Effective: true},
		{Group: evidence.GroupLabel("", "chat-b", evidence.ContentHash(copied)), ContentHash: evidence.ContentHash(copied), Effective: true},
		// Two revisions of one source.
		{Group: evidence.GroupLabel("wiki/deploy", "", evidence.ContentHash("rev 1")), ContentHash: evidence.ContentHash("rev 1"), Effective: true},
		{Group: evidence.GroupLabel("wiki/deploy", "", evidence.ContentHash("rev 2")), ContentHash: evidence.ContentHash("rev 2"), Effective: true},
	}
	groups, authority := evidence.CountGroups(supports)
	if groups != 2 || authority {
		t.Errorf("CountGroups = (%d, %v), want (2, false)", groups, authority)
	}
}

func TestEvidenceEnumsValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		valid func() bool
		want  bool
	}{
		{"manual", evidence.SourceManual.Valid, true},
		{"conversation", evidence.SourceConversation.Valid, true},
		{"document", evidence.SourceDocument.Valid, true},
		{"message", evidence.SourceMessage.Valid, true},
		{"tool_output", evidence.SourceToolOutput.Valid, true},
		{"web", evidence.SourceWeb.Valid, true},
		{"source empty", evidence.SourceType("").Valid, false},
		{"source wrong case", evidence.SourceType("Manual").Valid, false},
		{"source tool-output", evidence.SourceType("tool-output").Valid, false},
		{"authoritative", evidence.AuthorityAuthoritative.Valid, true},
		{"standard", evidence.AuthorityStandard.Valid, true},
		{"authority empty", evidence.Authority("").Valid, false},
		{"authority unknown", evidence.Authority("official").Valid, false},
		{"entailed", evidence.VerdictEntailed.Valid, true},
		{"contradicted", evidence.VerdictContradicted.Valid, true},
		{"insufficient", evidence.VerdictInsufficient.Valid, true},
		{"verdict empty", evidence.Verdict("").Valid, false},
		{"verdict wrong case", evidence.Verdict("Entailed").Valid, false},
	}
	for _, tt := range tests {
		if got := tt.valid(); got != tt.want {
			t.Errorf("%s: Valid() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

package densemem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// TestEnumErrorsListTheAllowedValues: every enumeration a request names is refused with a
// *ValidationError whose message lists every value the field accepts, so a caller can fix the call
// without reading the source.
func TestEnumErrorsListTheAllowedValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	host := densemem.HostPrincipal(e.team)
	values := func(vs ...string) []string { return vs }
	strs := func(n int, at func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	sources := evidence.SourceTypes()
	scopes := identity.Scopes()
	modalities := relationship.Modalities()
	statuses := conflict.Statuses()
	bad := func(mut func(*densemem.RememberRequest)) func() error {
		return func() error {
			req := deploy("production", "main").request(nextKey())
			mut(&req)
			_, err := e.client.Remember(e.ctx, e.A, req)
			return err
		}
	}
	for _, tc := range []struct {
		name, path string
		call       func() error
		want       []string
	}{
		{"source type", "evidence[0].source_type", bad(func(r *densemem.RememberRequest) { r.Evidence[0].SourceType = "chat" }),
			strs(len(sources), func(i int) string { return string(sources[i]) })},
		{"authority", "evidence[0].authority", bad(func(r *densemem.RememberRequest) { r.Evidence[0].Authority = "boss" }),
			values("standard", "authoritative")},
		{"polarity", "proposal.relationships[0].polarity", bad(func(r *densemem.RememberRequest) {
			r.Proposal.Relationships[0].Polarity = "positive"
		}), values("+", "-")},
		{"modality", "proposal.relationships[0].modality", bad(func(r *densemem.RememberRequest) {
			r.Proposal.Relationships[0].Modality = "rumour"
		}), strs(len(modalities), func(i int) string { return string(modalities[i]) })},
		{"value type", "proposal.relationships[0].object_value", bad(func(r *densemem.RememberRequest) {
			r.Proposal.Relationships[0].ObjectRef = ""
			r.Proposal.Relationships[0].ObjectValue = &densemem.ObjectValue{Type: "text", Value: "x"}
		}), values("string", "number", "boolean", "date", "date_time")},
		{"scope", "scopes[0]", func() error {
			_, err := e.client.CreateProfile(e.ctx, e.team, densemem.CreateProfileRequest{Name: "x", Scopes: []densemem.Scope{"admin"}})
			return err
		}, strs(len(scopes), func(i int) string { return string(scopes[i]) })},
		{"relationship kind", "relationship_kind", func() error {
			_, err := e.client.RegisterPredicate(e.ctx, host, densemem.PredicateDefinition{Key: "k", RelationshipKind: "fact",
				CurrentCardinality: "one"})
			return err
		}, values("state", "event")},
		{"cardinality", "current_cardinality", func() error {
			_, err := e.client.RegisterPredicate(e.ctx, host, densemem.PredicateDefinition{Key: "k", RelationshipKind: "state",
				CurrentCardinality: "single"})
			return err
		}, values("one", "many")},
		{"conflict status", "status[0]", func() error {
			_, err := e.client.ListConflicts(e.ctx, host, densemem.ListConflictsRequest{Status: []string{"closed"}})
			return err
		}, strs(len(statuses), func(i int) string { return string(statuses[i]) })},
		{"review item status", "status", func() error {
			_, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{Status: "done"})
			return err
		}, densemem.ReviewItemStatuses()},
		{"resolve action", "action", func() error {
			_, err := e.client.Resolve(e.ctx, e.A, densemem.ResolveRequest{IngestID: "i", PlacementItemID: "p", Action: "approve",
				IdempotencyKey: "k"})
			return err
		}, densemem.ResolveActions()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ve *densemem.ValidationError
			if err := tc.call(); !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			var msg string
			for _, p := range ve.Problems {
				if p.Path == tc.path {
					msg = p.Message
				}
			}
			if msg == "" {
				t.Fatalf("no problem at %s in %+v", tc.path, ve.Problems)
			}
			for _, v := range tc.want {
				if !strings.Contains(msg, v) {
					t.Errorf("%s: %q does not list %q", tc.path, msg, v)
				}
			}
		})
	}
}

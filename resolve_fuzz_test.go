package densemem

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/densemem/densemem/store"
)

// FuzzResolveRequestValidate checks that any Resolve request either is refused with problems that
// all have a path and a message, or satisfies what the decision paths rely on: a known action, the
// item's address and key present, evidence only (and, for add_evidence, correct and
// confirm_new_entity, always) where the action takes it, within its bounds, and a proposal only for
// correct. A correction built from an accepted request is checked as the Remember request it becomes,
// without panicking.
func FuzzResolveRequestValidate(f *testing.F) {
	for _, s := range []string{
		`{"ingest_id":"ing_1","placement_item_id":"p1","action":"supersede_prior","idempotency_key":"k"}`,
		`{"ingest_id":"ing_1","placement_item_id":"p1","action":"add_evidence","idempotency_key":"k",
		  "evidence":[{"content":"production deploys from main","source_type":"manual"}]}`,
		`{"ingest_id":"ing_1","placement_item_id":"p1","action":"select_entity","decision":{"mention_ref":"m","entity_id":"ent_1"},
		  "idempotency_key":"k"}`,
		`{"ingest_id":"i","placement_item_id":"p","action":"correct","idempotency_key":"k",
		  "evidence":[{"content":"x","source_type":"manual"}],
		  "proposal":{"entities":[{"ref":"s","name":"s","entity_kind":"environment"}],
		  "relationships":[{"proposal_id":"p","subject_ref":"s","predicate":"deploys_from","object_ref":"s",
		  "evidence":[{"evidence_index":0,"start":0,"end":1}]}]}}`,
		`{"action":"both_valid","evidence":[{}],"proposal":{},"decision":{"distinct_from_entity_ids":[""]}}`,
	} {
		f.Add([]byte(s))
	}
	limits := (&Config{}).withDefaults().Limits
	needEvidence := []string{ActionAddEvidence, ActionCorrect, ActionConfirmNewEntity}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req ResolveRequest
		if json.Unmarshal(data, &req) != nil {
			return
		}
		if err := validateResolve(req, limits); err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %v is not a *ValidationError with problems", err)
			}
			for _, p := range ve.Problems {
				if p.Path == "" || p.Message == "" {
					t.Fatalf("problem without path or message: %+v", p)
				}
			}
			return
		}
		switch {
		case strings.TrimSpace(req.IngestID) == "" || strings.TrimSpace(req.PlacementItemID) == "" ||
			strings.TrimSpace(req.IdempotencyKey) == "":
			t.Fatalf("accepted a request without its item's address or key: %+v", req)
		case !slices.Contains(resolveActions, req.Action):
			t.Fatalf("accepted unknown action %q", req.Action)
		case slices.ContainsFunc(req.Evidence, func(ev EvidenceInput) bool { return ev.Revises() }):
			t.Fatalf("accepted a source revision in a decision's evidence")
		case len(req.Evidence) == 0 && slices.Contains(needEvidence, req.Action):
			t.Fatalf("accepted %q without evidence", req.Action)
		case len(req.Evidence) > limits.MaxEvidence:
			t.Fatalf("accepted %d evidence items", len(req.Evidence))
		case req.Proposal != nil && req.Action != ActionCorrect:
			t.Fatalf("accepted a proposal for %q", req.Action)
		}
		if req.Action == ActionCorrect {
			item := store.ReviewItem{ReviewItemRow: store.ReviewItemRow{RelationshipID: "rel_1", Related: []string{"rel_0"}}}
			rr := correction(req, item)
			_ = validateRemember(&rr, limits) // must not panic, whatever it finds
		}
	})
}

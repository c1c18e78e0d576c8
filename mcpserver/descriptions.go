package mcpserver

// The tools' descriptions, written for a model that has never seen Dense-Mem: what the tool does,
// when to call it, and what to do with its result. Field descriptions are keyed by property path
// (see schemaFor): inputs plain, outputs prefixed with "@".

const rememberDescription = `Store verbatim evidence and the knowledge you extracted from it in the team's memory, as the profile this session is bound to.

Call it when the user tells you something worth remembering (a fact, a rule, a change, a correction). The predicate must be one the team registered: call list_predicates first. Send:
- evidence: the exact words (content, stored byte for byte) and where they came from (source_type);
- proposal.entities: the things mentioned (ref, name, entity_kind, e.g. "environment", "person", "git_branch");
- proposal.relationships: subject_ref predicate object_ref (or object_value for a literal), each citing the evidence item that states it: quote the exact text (and/or give character offsets start and end); the cited text must name the subject and the object;
- idempotency_key: a fresh unique string; retrying with the same key and request replays the first result.

The result has one outcome per proposed relationship, with a category and a reason:
- relationship_accepted / relationship_supported / relationship_superseded_prior: stored and current; nothing more to do.
- relationship_needs_review: it conflicts with something you (this profile) already stated. Call trace_memory on its relationship_id (or related_relationship_ids), ask the user the review's question verbatim with its choices and their impact, then call resolve_memory_placement with ingest_id, placement_item_id and the chosen action.
- relationship_pending_evidence: the evidence did not establish it; ask the user for better evidence and resolve with add_evidence, or reject.
- identity_needs_review / predicate_needs_review: a name or a predicate was ambiguous; ask the user to pick one of the offered entity_candidates / predicate_options and resolve.
- relationship_rejected / relationship_not_asserted: nothing current was stored (the reason says why).
An outcome with conflict set joined a team conflict case with another profile's statement: it stays open until the nightly reviewer settles it; tell the user, do not try to change the other profile's record.
To answer a team conflict case shown by recall_memory, remember new evidence and set proposal.relationships[].conflict_response to the case's conflict_id and version.`

const recallDescription = `Search the team's memory: relationships (subject predicate object) with the evidence that supports them, ranked by relevance.

Call it before answering from memory, and before remembering something that may already be known. Give a query (free text) and/or expand_from_entity_ids; valid_at asks what was true in the world at an instant, known_at what the team had recorded by then.

Each result says whether it is current (current: true) and who owns it. When results belong to a live team conflict case (conflicts[]), profiles disagree: show the user every position with its owners and counted source groups and ask the case's question verbatim. The user answers by giving evidence: call remember with conflict_response {conflict_id, expected_version: the case's version}. A result with resolved_conflict was preferred when the nightly reviewer resolved a case. A result's relationship_id can be traced with trace_memory.`

const traceDescription = `Explain one relationship: its current state (status, tier, validity, predicate behaviour, source count), the evidence behind it with the verifier's verdicts, its transitions, the review items about it with their exact choices and impact, cross-references to other profiles' relationships, and the team conflict cases it belongs to with their positions and events.

Call it before asking the user to decide anything about a relationship (a relationship_needs_review outcome, a conflict case), with the relationship_id from remember's relationship_outcomes[] or a recall result; include_evidence_content, include_verification and include_transitions show the evidence text and history. Then ask the user the review item's question verbatim, present each choice with its impact, and call resolve_memory_placement with the user's decision. Long lists come in pages: truncated[] names each list with more and the cursor to pass in after.`

const resolveDescription = `Carry out the user's decision on one of this profile's open review items (issued by remember as a review on an outcome, listed by list_review_items, shown by trace_memory).

Name the item by ingest_id and placement_item_id, and give one action the item offers in its choices (forget is always allowed on an item about a relationship):
- supersede_prior: the new statement replaces the prior one; keep_prior_reject_new: the prior stays and the new one is rejected;
- both_valid: both hold, in another scope (decision.scope) or in the new statement's own time (decision.valid_from and/or decision.valid_to, not overlapping the prior's); the prior is not changed;
- add_evidence / accept / correct: bring evidence (evidence[], and a proposal for correct) that goes through verification like remember;
- select_entity / confirm_new_entity: decision.mention_ref with decision.entity_id (one of the offered candidates) or distinct_from_entity_ids;
- select_predicate / reject_mapping / propose_vocabulary_change: decision.predicate_key for a predicate item.
Pass the user's own words for the decision as evidence[] with any action: it is stored verbatim and linked from the decision (and supports the statement the decision keeps current when it states it). Ask the user first; never decide for them. Use a fresh idempotency_key. The result lists the before and after of every relationship the decision changed. If the item is stale (already decided or its relationships changed), call trace_memory again and ask again. You can decide only this profile's items; another profile's relationships change only through new evidence (remember) and the nightly reviewer.`

const forgetDescription = `Retract one relationship this profile owns, when the user says it should no longer be remembered: it leaves current recall at once, and its evidence and history stay available to trace_memory. Give its relationship_id, a reason and a fresh idempotency_key. You cannot forget another profile's relationship: to dispute it, remember new evidence instead.`

const listConflictsDescription = `List the team's conflict cases (disagreements between profiles about one subject and predicate), overdue ones first, then open ones by review deadline; status selects resolved or dismissed ones too. Each case has its positions with their owners and counted source groups and, while live, the question to ask the user. Answer a case by remembering new evidence with conflict_response {conflict_id, expected_version}; the nightly reviewer resolves cases, nobody else. Page with after = next_after.`

const listPredicatesDescription = `List the team's registered predicates (the relationships it can remember), with their aliases, kinds, how many current values a subject may have, and the entity kinds they take. A remember proposal's predicate must be one of these keys or aliases: call this once before remembering on a team you do not know. An empty list means nothing can be remembered until the operator registers predicates. Page with after = next_after.`

const listReviewItemsDescription = `List this profile's review items (decisions waiting for the user), oldest first: each with ingest_id, placement_item_id, the question to ask and the allowed actions with their impact. Take each to the user, then call resolve_memory_placement. status open (default), resolved or superseded; page with after = next_after.`

// Field descriptions shared by several tools.
var (
	evidenceDescs = map[string]string{
		"evidence":                   "Verbatim evidence items. Relationships cite them by index, with a quote or character offsets.",
		"evidence[].content":         "The exact text (or quote) the knowledge comes from, stored byte for byte (UTF-8, no NUL).",
		"evidence[].source_type":     "Where it came from.",
		"evidence[].authority":       "standard (default) or authoritative; authoritative counts only for profiles the team policy names.",
		"evidence[].source_group":    "Optional label of the independent source (the same label counts once).",
		"evidence[].source_key":      "Optional stable key of a versioned source (a document); with source_revision.",
		"evidence[].source_revision": "Optional revision of the source named by source_key.",
	}
	proposalDescs = map[string]string{
		"proposal":                                          "The entities and relationships you extracted from the evidence.",
		"proposal.entities[].ref":                           "Your local name for this mention; relationships refer to it.",
		"proposal.entities[].name":                          "The name as the evidence states it.",
		"proposal.entities[].entity_kind":                   "The kind of thing, e.g. person, project, environment, git_branch.",
		"proposal.entities[].identity_context":              "Attributes that tell this entity apart from same-named ones, e.g. {\"repository\": \"Dense-Mem\"}.",
		"proposal.entities[].known_entity_id":               "An entity_id the server gave you (recall, trace, a review) that this mention is.",
		"proposal.entities[].distinct_from_entity_ids":      "Server entity_ids the evidence shows this mention is not.",
		"proposal.relationships[].proposal_id":              "Your local name for this relationship; its outcome carries it back.",
		"proposal.relationships[].subject_ref":              "The ref of the subject entity.",
		"proposal.relationships[].predicate":                "The predicate: a key or alias list_predicates shows (e.g. deploys_from or \"deploys from\").",
		"proposal.relationships[].object_ref":               "The ref of the object entity; or give object_value.",
		"proposal.relationships[].object_value":             "A literal object: type (string, number, boolean, date, date_time) and value.",
		"proposal.relationships[].polarity":                 "\"+\" (default) or \"-\" for a negated statement.",
		"proposal.relationships[].modality":                 "statement (default); hypothetical, question, plan or quote are kept as observations only.",
		"proposal.relationships[].scope":                    "Optional scope in which it holds (e.g. a region).",
		"proposal.relationships[].valid_from":               "RFC 3339 time from which it holds in the world, when the evidence says so.",
		"proposal.relationships[].valid_to":                 "RFC 3339 time until which it holds, when the evidence says so.",
		"proposal.relationships[].evidence":                 "Citations of the evidence items stating this relationship: evidence_index with the exact quote and/or character offsets start and end.",
		"proposal.relationships[].corrects_relationship_id": "A relationship_id of the same subject and predicate this one corrects.",
		"proposal.relationships[].conflict_response":        "Answers a team conflict case: its conflict_id and the version you last read (expected_version).",
	}
	idempotencyDesc = "A fresh unique string per decision; retrying with the same key and request replays the first result."
)

var rememberDescs = merge(evidenceDescs, proposalDescs, map[string]string{
	"idempotency_key":                                   idempotencyDesc,
	"@ingest_id":                                        "Names this placement; resolve_memory_placement needs it.",
	"@replayed":                                         "True when an earlier call with the same idempotency_key stored this result.",
	"@relationship_outcomes":                            "One outcome per proposed relationship.",
	"@relationship_outcomes[].category":                 "relationship_accepted, relationship_supported, relationship_superseded_prior, relationship_needs_review, relationship_pending_evidence, relationship_rejected, identity_needs_review, predicate_needs_review or relationship_not_asserted.",
	"@relationship_outcomes[].reason":                   "Why it was placed so.",
	"@relationship_outcomes[].placement_item_id":        "With ingest_id, names the review item for resolve_memory_placement.",
	"@relationship_outcomes[].related_relationship_ids": "The relationships this outcome concerns: the priors it superseded or is held against.",
	"@relationship_outcomes[].review":                   "The decision to ask the user about: its question and the allowed choices with their impact.",
	"@relationship_outcomes[].conflict":                 "The team conflict case this placement opened or joined.",
})

var recallDescs = map[string]string{
	"query":                  "Free text to search for (up to 512 characters).",
	"expand_from_entity_ids": "Entity IDs whose relationships to include.",
	"valid_at":               "RFC 3339: return what was true in the world at this instant.",
	"known_at":               "RFC 3339: return what had been recorded by this instant.",
	"limit":                  "At most this many results (default 10, at most 50).",
	"predicate":              "Only this predicate (key or phrase).",
	"@results[].current":     "True when the relationship is the team's current belief and true now.",
	"@results[].conflict_id": "The live team conflict case this relationship belongs to; see conflicts[].",
	"@conflicts":             "The live team conflict cases of the results: positions, owners, counted source groups and the question to ask.",
	"@conflicts[].question":  "Ask the user this, verbatim.",
	"@conflicts[].positions[].counted_source_groups": "Independent source groups supporting this position.",
}

var traceDescs = map[string]string{
	"relationship_id":          "The relationship to explain, from a remember outcome or a recall result.",
	"include_evidence_content": "Include the evidence text.",
	"include_verification":     "Include the verifier's verification events.",
	"include_transitions":      "Include its lifecycle transitions.",
	"max_depth":                "Hops of neighbouring relationships to include (0..4).",
	"max_edges":                "At most this many neighbours (0..100).",
	"limit":                    "At most this many items per list (default 50).",
	"after":                    "Next-page cursors: list name to the next_after of truncated[].",
	"@review_items":            "Review items about this relationship, with the exact question and choices.",
	"@conflicts":               "Team conflict cases this relationship belongs or belonged to.",
	"@truncated":               "Lists with more items: pass next_after in after[list] for the next page.",
}

var resolveDescs = merge(evidenceDescs, map[string]string{
	"ingest_id":                         "The ingest_id of the placement that issued the review item.",
	"placement_item_id":                 "The placement_item_id of the outcome (or review item) being decided.",
	"action":                            "One of the item's choices' actions (forget is always allowed on an item about a relationship).",
	"decision":                          "The decision's detail, when the action needs one, and the user's reason.",
	"decision.mention_ref":              "select_entity / confirm_new_entity: the ambiguous mention's ref.",
	"decision.entity_id":                "select_entity: one of the offered entity_candidates.",
	"decision.distinct_from_entity_ids": "confirm_new_entity: the candidates the new entity is not.",
	"decision.predicate_key":            "select_predicate: one of the offered predicate_options.",
	"decision.reason":                   "The user's reason, recorded with the decision.",
	"decision.scope":                    "both_valid: the scope in which the held statement is true.",
	"decision.valid_from":               "both_valid: RFC 3339 time from which the held statement is true; its time must not overlap the prior's.",
	"decision.valid_to":                 "both_valid: RFC 3339 time until which the held statement is true; its time must not overlap the prior's.",
	"proposal":                          "correct: the corrected statement, as remember's proposal.",
	"idempotency_key":                   idempotencyDesc,
	"@changes":                          "Before and after of every relationship the decision changed.",
	"@outcome":                          "Where the decision's evidence placed the statement (add_evidence, correct, both_valid, ...).",
})

var forgetDescs = map[string]string{
	"relationship_id": "The relationship to retract; it must be this profile's own.",
	"reason":          "Why, as the user said it.",
	"idempotency_key": idempotencyDesc,
}

var listConflictsDescs = map[string]string{
	"status": "Statuses to include: open, overdue, resolved, dismissed (default open and overdue).",
	"order":  "status (default: overdue first, then open, each earliest deadline first) or deadline_desc (every status together, newest deadline first).",
	"limit":  "At most this many cases.",
	"after":  "The next_after of the previous page.",
}

var listReviewItemsDescs = map[string]string{
	"status":                 "open (default), resolved or superseded.",
	"limit":                  "At most this many items.",
	"after":                  "The next_after of the previous page.",
	"@review_items[].prompt": "The question to ask the user and the allowed choices with their impact.",
}

var listPredicatesDescs = map[string]string{
	"limit":                      "At most this many predicates.",
	"after":                      "The next_after of the previous page.",
	"@predicates[].key":          "The predicate's key; a remember proposal may name it or an alias.",
	"@predicates[].aliases":      "Phrases that name the predicate too.",
	"@predicates[].value_object": "True when the object is a literal (object_value), not an entity.",
}

// optionalInputs are the top-level input fields a tool does without although the library's request
// type does not mark them omitempty: their zero values are the defaults.
var optionalInputs = map[string][]string{
	ToolTrace: {"include_evidence_content", "include_verification", "include_transitions", "max_depth", "max_edges"},
}

// merge returns the union of maps.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

package mcpserver

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/densemem/densemem"
)

// toolError turns a library error into the error of a tool result (the SDK sends it as a result
// with isError set and this text): what went wrong, and what the model should do next. Errors whose
// text could carry database detail are logged and reported generically.
func toolError(log *slog.Logger, tool string, err error) error {
	var ve *densemem.ValidationError
	switch {
	case errors.Is(err, errUnbound):
		return fmt.Errorf("%v. The host must bind this session to a Dense-Mem profile; no tool can run until it does", err)
	case errors.As(err, &ve):
		return errors.New(validationText(ve))
	case errors.Is(err, densemem.ErrStaleConflictVersion):
		return fmt.Errorf("%v. The conflict case changed since you read it; nothing was written. Call recall_memory (or "+
			"trace_memory) to read the case's current version and positions, check with the user whether their answer "+
			"still stands, and call %s again with conflict_response.expected_version set to the new version", err, tool)
	case errors.Is(err, densemem.ErrNotMaterialToConflict):
		return fmt.Errorf("%v. The proposal is not about the case's subject, predicate and scope; nothing was written. "+
			"Answer the case with a relationship of that subject and predicate, or drop conflict_response", err)
	case errors.Is(err, densemem.ErrStaleDecision):
		return fmt.Errorf("%v. Nothing was written. Call trace_memory on the item's relationship (or list_review_items) "+
			"to see the current question and choices, ask the user again, and retry with a fresh idempotency_key", err)
	case errors.Is(err, densemem.ErrNotOwner):
		return fmt.Errorf("%v. This session acts only on its own profile's relationships and review items. To dispute "+
			"another profile's statement, remember new evidence: it is linked to theirs and the nightly reviewer settles "+
			"the team case", err)
	case errors.Is(err, densemem.ErrForbidden):
		return fmt.Errorf("%v. This profile is not allowed to do that; tell the user", err)
	case errors.Is(err, densemem.ErrNotFound):
		return fmt.Errorf("%v. Nothing by that ID exists in this team: use an ID from remember, recall_memory, "+
			"trace_memory or list_review_items", err)
	case errors.Is(err, densemem.ErrIdempotencyConflict):
		return fmt.Errorf("%v. That idempotency_key was used for a different request; retry with a fresh key", err)
	case errors.Is(err, densemem.ErrVerifier):
		return errors.New("the evidence verifier failed; nothing was written. Retry later with the same idempotency_key")
	case errors.Is(err, densemem.ErrConflict), errors.Is(err, densemem.ErrUnavailable), errors.Is(err, densemem.ErrTimeout),
		errors.Is(err, densemem.ErrCommitUnknown):
		log.Warn("mcpserver: tool failed, retryable", "tool", tool, "err", err)
		return errors.New("dense-mem is temporarily unable to complete this call. Retry it with the same arguments " +
			"(the same idempotency_key replays a call that did go through)")
	}
	log.Error("mcpserver: tool failed", "tool", tool, "err", err)
	return errors.New("dense-mem failed internally; nothing was written. Tell the user; retrying will probably not help")
}

// validationText lists the problems of a rejected request, one per line, with their JSON paths.
func validationText(ve *densemem.ValidationError) string {
	var b strings.Builder
	b.WriteString("Invalid arguments; nothing was written. Fix these fields and call again:")
	for _, p := range ve.Problems {
		fmt.Fprintf(&b, "\n- %s: %s", p.Path, p.Message)
	}
	if ve.Omitted > 0 {
		fmt.Fprintf(&b, "\n- and %d more problem(s)", ve.Omitted)
	}
	return b.String()
}

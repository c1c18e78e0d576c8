package mcpserver

import (
	"context"

	"github.com/densemem/densemem"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names, as tools/list reports them.
const (
	ToolRemember        = "remember"
	ToolRecall          = "recall_memory"
	ToolTrace           = "trace_memory"
	ToolResolve         = "resolve_memory_placement"
	ToolForget          = "forget_memory"
	ToolListConflicts   = "list_conflicts"
	ToolListReviewItems = "list_review_items"
	ToolListPredicates  = "list_predicates"
)

// ToolNames lists the server's tools in the order tools/list returns them.
func ToolNames() []string {
	return []string{ToolForget, ToolListConflicts, ToolListPredicates, ToolListReviewItems, ToolRecall, ToolRemember, ToolResolve,
		ToolTrace}
}

var (
	no  = false
	yes = true
)

// all is the server's tools.
func (h *tools) all() []tool {
	return []tool{
		newTool(ToolRemember, "Remember evidence", rememberDescription,
			&mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no}, rememberDescs, remember),
		newTool(ToolRecall, "Recall memory", recallDescription,
			&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}, recallDescs, recall),
		newTool(ToolTrace, "Trace a relationship", traceDescription,
			&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}, traceDescs, trace),
		newTool(ToolResolve, "Resolve a review item", resolveDescription,
			&mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes, OpenWorldHint: &no}, resolveDescs, resolve),
		newTool(ToolForget, "Forget a relationship", forgetDescription,
			&mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes, OpenWorldHint: &no}, forgetDescs, forget),
		newTool(ToolListConflicts, "List team conflict cases", listConflictsDescription,
			&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}, listConflictsDescs, listConflicts),
		newTool(ToolListReviewItems, "List your review items", listReviewItemsDescription,
			&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}, listReviewItemsDescs, listReviewItems),
		newTool(ToolListPredicates, "List the team's predicates", listPredicatesDescription,
			&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}, listPredicatesDescs, listPredicates),
	}
}

func remember(ctx context.Context, h *tools, p densemem.Principal, in rememberInput) (densemem.Placement, string, error) {
	req, err := in.request()
	if err != nil {
		return densemem.Placement{}, "", err
	}
	out, err := h.client.Remember(ctx, p, req)
	if err != nil {
		return densemem.Placement{}, "", err
	}
	return *out, renderPlacement(out), nil
}

func recall(ctx context.Context, h *tools, p densemem.Principal, in densemem.RecallRequest) (densemem.RecallResponse, string, error) {
	out, err := h.client.Recall(ctx, p, in)
	if err != nil {
		return densemem.RecallResponse{}, "", err
	}
	return *out, renderRecall(out), nil
}

func trace(ctx context.Context, h *tools, p densemem.Principal, in densemem.TraceRequest) (densemem.TraceResult, string, error) {
	out, err := h.client.Trace(ctx, p, in)
	if err != nil {
		return densemem.TraceResult{}, "", err
	}
	return *out, renderTrace(out), nil
}

func resolve(ctx context.Context, h *tools, p densemem.Principal, in resolveInput) (densemem.ResolveResult, string, error) {
	req, err := in.request()
	if err != nil {
		return densemem.ResolveResult{}, "", err
	}
	out, err := h.client.Resolve(ctx, p, req)
	if err != nil {
		return densemem.ResolveResult{}, "", err
	}
	return *out, renderResolve(out), nil
}

func forget(ctx context.Context, h *tools, p densemem.Principal, in densemem.ForgetRequest) (densemem.ForgetResult, string, error) {
	out, err := h.client.Forget(ctx, p, in)
	if err != nil {
		return densemem.ForgetResult{}, "", err
	}
	return *out, renderForget(out), nil
}

func listConflicts(ctx context.Context, h *tools, p densemem.Principal, in densemem.ListConflictsRequest) (densemem.ListConflictsResponse, string, error) {
	out, err := h.client.ListConflicts(ctx, p, in)
	if err != nil {
		return densemem.ListConflictsResponse{}, "", err
	}
	return *out, renderConflicts(out), nil
}

// listReviewItemsInput is list_review_items' input: ListReviewItemsRequest without its profile_id
// and all_profiles, so a session lists only its own profile's items.
type listReviewItemsInput struct {
	Status string `json:"status,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	After  string `json:"after,omitempty"`
}

func listReviewItems(ctx context.Context, h *tools, p densemem.Principal, in listReviewItemsInput) (densemem.ListReviewItemsResponse, string, error) {
	out, err := h.client.ListReviewItems(ctx, p, densemem.ListReviewItemsRequest{Status: in.Status, Limit: in.Limit,
		After: in.After, ProfileID: p.ProfileID})
	if err != nil {
		return densemem.ListReviewItemsResponse{}, "", err
	}
	return *out, renderReviewItems(out), nil
}

func listPredicates(ctx context.Context, h *tools, p densemem.Principal, in densemem.ListPredicatesRequest) (densemem.ListPredicatesResponse, string, error) {
	out, err := h.client.ListPredicates(ctx, p, in)
	if err != nil {
		return densemem.ListPredicatesResponse{}, "", err
	}
	return *out, renderPredicates(out), nil
}

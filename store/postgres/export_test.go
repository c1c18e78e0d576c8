package postgres

// TraceNoParallelSQL is the setting TraceLoad's transaction starts with.
const TraceNoParallelSQL = traceNoParallelSQL

// TraceListSQL holds the statements of TraceLoad's lists by list, for the plan test.
var TraceListSQL = map[string]string{
	"evidence":             traceSupportsSQL,
	"observations":         traceObservationsSQL,
	"verifications":        traceVerificationsSQL,
	"transitions":          traceTransitionsSQL,
	"identity_resolutions": traceResolutionsSQL,
	"review_items":         traceReviewItemsSQL,
	"cross_references":     traceCrossRefsSQL,
	"conflicts":            traceCasesSQL,
	"conflict_events":      traceCaseEventsSQL,
}

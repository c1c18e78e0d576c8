package postgres

// TraceNoParallelSQL is the setting TraceLoad's transaction starts with.
const TraceNoParallelSQL = traceNoParallelSQL

// TraceListSQL holds the statements of TraceLoad's lists by list, for the plan test, written for the
// default schema.
var TraceListSQL = map[string]string{
	"evidence":             New(nil, nil).sql(traceSupportsSQL),
	"observations":         New(nil, nil).sql(traceObservationsSQL),
	"verifications":        New(nil, nil).sql(traceVerificationsSQL),
	"transitions":          New(nil, nil).sql(traceTransitionsSQL),
	"identity_resolutions": New(nil, nil).sql(traceResolutionsSQL),
	"review_items":         New(nil, nil).sql(traceReviewItemsSQL),
	"cross_references":     New(nil, nil).sql(traceCrossRefsSQL),
	"conflicts":            New(nil, nil).sql(traceCasesSQL),
	"conflict_events":      New(nil, nil).sql(traceCaseEventsSQL),
	"conflict_objects":     New(nil, nil).sql(traceCaseObjectsSQL),
	"conflict_supports":    New(nil, nil).sql(traceCaseSupportsSQL),
}

package postgres

import "github.com/densemem/densemem/store"

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

// ListSQL holds the fixed statements of the List reads, for the plan test, written for the default
// schema.
var ListSQL = map[string]string{
	"profiles":   New(nil, nil).sql(profileListSQL),
	"predicates": New(nil, nil).sql(predicateListPageSQL),
	"conflicts":  New(nil, nil).sql(caseListSQL),
}

// ReviewItemListSQL returns ReviewItemList's statement and arguments for p, for the plan test.
func ReviewItemListSQL(p store.ReviewItemListParams) (string, []any, error) {
	sql, args, err := reviewItemListQuery(p)
	return New(nil, nil).sql(sql), args, err
}

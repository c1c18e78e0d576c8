package store

import (
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
)

// Page is one page of a keyset-paged list: at most the Limit items asked for, in the list's order,
// and whether more items follow the last of them.
type Page[T any] struct {
	Items []T
	// More reports that the list has items after the page's last one.
	More bool
}

// ProfileListParams asks for a page of a team's profiles, in profile ID order.
type ProfileListParams struct {
	Team identity.TeamID
	// After is the profile ID after which the page starts ("": the first page).
	After identity.ProfileID
	// Limit is the most profiles returned (1 or more).
	Limit int
}

// PredicateListPageParams asks for a page of a team's predicates (the latest version of each key),
// in key order.
type PredicateListPageParams struct {
	Team identity.TeamID
	// After is the key after which the page starts ("": the first page).
	After string
	// Limit is the most predicates returned (1 or more).
	Limit int
}

// CaseListParams asks for a page of a team's conflict cases of some statuses: the cases of
// Statuses[0] first, then those of Statuses[1], and so on; within a status by review_due_at, then
// conflict ID. With DeadlineDesc, the cases of every listed status together by review_due_at, then
// conflict ID, both descending.
type CaseListParams struct {
	Team     identity.TeamID
	Statuses []conflict.Status
	// DeadlineDesc orders the list by (review_due_at, conflict ID) descending, whatever the status.
	DeadlineDesc bool
	// After, when set, is the key of the last case of the previous page; its status must be one of
	// Statuses. The page starts after it within its status and goes on with the statuses listed
	// after that one; with DeadlineDesc, it holds the cases before its (review_due_at, ID), of any
	// listed status.
	After *CaseListKey
	// Limit is the most cases returned (1 or more).
	Limit int
}

// CaseListKey is a case's position in a case list.
type CaseListKey struct {
	Status      conflict.Status
	ReviewDueAt time.Time
	ID          conflict.ID
}

// CaseListItem is one listed case: its current state and membership (the case row, and the
// positions its latest event records), when the reviewer next looks at it, and its subject's
// canonical name and kind.
type CaseListItem struct {
	Case         RecallCase
	NextReviewAt time.Time
	SubjectName  string
	SubjectKind  string
}

// ReviewItemListParams asks for a page of a team's review items of one status, in (profile ID,
// created_at, review ID) order.
type ReviewItemListParams struct {
	Team   identity.TeamID
	Status string
	// Profile restricts the list to one profile's items ("": every profile's).
	Profile identity.ProfileID
	// After, when set, is the key of the last item of the previous page.
	After *ReviewItemKey
	// Limit is the most items returned (1 or more).
	Limit int
}

// ReviewItemKey is a review item's position in a review item list.
type ReviewItemKey struct {
	Profile   identity.ProfileID
	CreatedAt time.Time
	ID        string
}

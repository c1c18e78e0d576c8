// Package review holds the review domain a host sees: a nightly run's request and report, the
// defaults of the nightly Conflict reviewer, and the check of the time zone that dates its runs
// (TimeZone). The reviewer itself (reservations, claims with leases, one fenced transaction per case)
// is not promised to hosts and lives in internal/nightly; hosts run it through
// Client.RunNightlyReview.
package review

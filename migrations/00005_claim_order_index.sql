-- The reviewer claims due cases in (next_review_at, conflict_id) order. With the index ending at
-- next_review_at every claim read and sorted all of the team's due cases, so a run of n due cases in
-- batches of b cost n²/b row visits; with conflict_id in the index a claim reads its batch in index
-- order and stops.

-- +goose Up
DROP INDEX conflict_cases_due;
CREATE INDEX conflict_cases_due ON conflict_cases (team_id, next_review_at, conflict_id) WHERE status IN ('open', 'overdue');

-- +goose Down
DROP INDEX conflict_cases_due;
CREATE INDEX conflict_cases_due ON conflict_cases (team_id, next_review_at) WHERE status IN ('open', 'overdue');

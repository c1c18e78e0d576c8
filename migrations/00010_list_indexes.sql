-- The List calls page a team's cases and review items by keyset, in the orders these indexes hold,
-- so a page reads its LIMIT rows (plus one) and stops however many the team has:
--   ListConflicts: one status at a time (overdue, open, resolved, dismissed), each by
--   (review_due_at, conflict_id);
--   ListReviewItems: one status, by (profile_id, created_at, review_id), all profiles or one.
-- Profiles and predicates page along their primary keys.

-- +goose Up
CREATE INDEX conflict_cases_status ON conflict_cases (team_id, status, review_due_at, conflict_id);
CREATE INDEX review_items_status ON review_items (team_id, status, profile_id, created_at, review_id);

-- +goose Down
DROP INDEX review_items_status;
DROP INDEX conflict_cases_status;

-- Trace names, on each transition a client's decision made, the decision: the transition's ingest is
-- the decision's. This index makes that one probe per transition.

-- +goose Up
CREATE INDEX placement_decisions_ingest ON placement_decisions (team_id, ingest_id);

-- +goose Down
DROP INDEX placement_decisions_ingest;

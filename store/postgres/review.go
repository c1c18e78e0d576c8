package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

const policyGetSQL = `-- name: PolicyGet
SELECT version, review_ttl_seconds, auto_write_threshold, authoritative_profile_ids, time_zone, created_by, created_at
FROM {schema}.team_policies WHERE team_id = $1 ORDER BY version DESC LIMIT 1`

// PolicyGet returns a team's policy in force. ErrNotFound when the team does not exist.
func (s *Store) PolicyGet(ctx context.Context, team identity.TeamID) (store.Policy, error) {
	p := store.Policy{Team: team}
	var ttl int64
	var auth []string
	b := &pgx.Batch{}
	b.Queue(policyGetSQL, team).QueryRow(func(row pgx.Row) error {
		return row.Scan(&p.Version, &ttl, &p.AutoWriteThreshold, &auth, &p.TimeZone, &p.CreatedBy, &p.CreatedAt)
	})
	if err := s.send(ctx, team, b, false); err != nil {
		return p, err
	}
	p.ReviewTTL = time.Duration(ttl) * time.Second
	for _, a := range auth {
		p.AuthoritativeProfiles = append(p.AuthoritativeProfiles, identity.ProfileID(a))
	}
	return p, nil
}

const policyVersionsSQL = `-- name: PolicyVersions
SELECT version, review_ttl_seconds, auto_write_threshold, authoritative_profile_ids, time_zone, created_by, created_at
FROM {schema}.team_policies WHERE team_id = $1 AND version = ANY($2::integer[]) ORDER BY version`

// PolicyVersions returns the given versions of a team's policy that exist, in version order.
func (s *Store) PolicyVersions(ctx context.Context, team identity.TeamID, versions []int) ([]store.Policy, error) {
	var out []store.Policy
	if len(versions) == 0 {
		return out, nil
	}
	b := &pgx.Batch{}
	b.Queue(policyVersionsSQL, team, versions).Query(func(rows pgx.Rows) (err error) {
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Policy, error) {
			p := store.Policy{Team: team}
			var ttl int64
			var auth []string
			if err := row.Scan(&p.Version, &ttl, &p.AutoWriteThreshold, &auth, &p.TimeZone, &p.CreatedBy, &p.CreatedAt); err != nil {
				return p, err
			}
			p.ReviewTTL = time.Duration(ttl) * time.Second
			for _, a := range auth {
				p.AuthoritativeProfiles = append(p.AuthoritativeProfiles, identity.ProfileID(a))
			}
			return p, nil
		})
		return err
	})
	return out, s.send(ctx, team, b, false)
}

// teamsWithDueCasesSQL reads across teams, which row-level security refuses the reviewer's role: the
// owner's SECURITY DEFINER function answers it (the reviewer alone may execute it).
const teamsWithDueCasesSQL = `-- name: TeamsWithDueCases
SELECT t FROM {schema}.densemem_teams_with_due_cases($1) t`

// TeamsWithDueCases lists the teams with a live case due at now.
func (s *Store) TeamsWithDueCases(ctx context.Context, now time.Time) ([]identity.TeamID, error) {
	var teams []identity.TeamID
	b := &pgx.Batch{}
	b.Queue(teamsWithDueCasesSQL, now).Query(func(rows pgx.Rows) (err error) {
		teams, err = pgx.CollectRows(rows, pgx.RowTo[identity.TeamID])
		return err
	})
	return teams, s.send(ctx, "", b, false)
}

// caseClaimSQL claims due cases in one statement: the CTE picks them in due order, skipping rows
// other workers hold, and the UPDATE stamps the claim. The version never changes here. The claimed
// rows are reached by primary key from the CTE's array: a join could be planned as a scan of every
// case the team ever had, resolved ones included (decision 123).
const caseClaimSQL = `-- name: CaseClaimDue
WITH due AS (
    SELECT conflict_id FROM {schema}.conflict_cases
    WHERE team_id = $1 AND status IN ('open', 'overdue') AND next_review_at <= $2
      AND (claim_token IS NULL OR lease_expires_at <= $2)
      AND NOT (attempts_date IS NOT DISTINCT FROM $3::date AND review_attempts >= $7)
    ORDER BY next_review_at, conflict_id
    LIMIT $4
    FOR UPDATE SKIP LOCKED)
UPDATE {schema}.conflict_cases c
SET claim_token = $5, lease_expires_at = $2 + make_interval(secs => $6),
    review_attempts = CASE WHEN c.attempts_date IS NOT DISTINCT FROM $3::date THEN c.review_attempts + 1 ELSE 1 END,
    attempts_date = $3::date, last_evaluated_at = $2
WHERE c.team_id = $1 AND c.conflict_id = ANY(ARRAY(SELECT conflict_id FROM due))
RETURNING c.conflict_id, c.subject_entity_id, c.predicate_key, c.scope, c.review_attempts, c.policy_version`

// CaseClaimDue claims up to Batch due cases for one worker.
func (s *Store) CaseClaimDue(ctx context.Context, p store.CaseClaimDueParams) ([]store.ClaimedCase, error) {
	var claimed []store.ClaimedCase
	b := &pgx.Batch{}
	b.Queue(caseClaimSQL, p.Team, p.Now, p.RunDate.Format(time.DateOnly), p.Batch, p.Token, p.Lease.Seconds(),
		p.MaxAttempts).Query(func(rows pgx.Rows) (err error) {
		claimed, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ClaimedCase, error) {
			var c store.ClaimedCase
			err := row.Scan(&c.ID, &c.Key.Subject, &c.Key.PredicateKey, &c.Key.Scope, &c.Attempts, &c.PolicyVersion)
			c.Key.Team = p.Team
			return c, err
		})
		return err
	})
	return claimed, s.send(ctx, p.Team, b, true)
}

// caseEscalateSQL escalates exhausted cases as the reviewer and returns each with the membership of
// its previous event; caseEscalateEventSQL then appends each one's event, repeating that membership.
// They are two statements, the events one INSERT … VALUES each: an INSERT … SELECT from the
// UPDATE's CTE is executed by Citus as a COPY into the shard, which row-level security refuses.
const (
	caseEscalateSQL = `-- name: CaseEscalateExhausted
UPDATE {schema}.conflict_cases c
SET version = c.version + 1, escalated_date = $3::date, next_review_at = $4, claim_token = NULL,
    lease_expires_at = NULL, updated_at = $2
WHERE c.team_id = $1 AND c.status IN ('open', 'overdue') AND c.attempts_date = $3::date AND c.review_attempts >= $5
  AND c.next_review_at <= $2 -- a successful review already moved it to the next run date
  AND c.escalated_date IS DISTINCT FROM $3::date
  AND (c.claim_token IS NULL OR c.lease_expires_at <= $2 OR c.claim_token = NULLIF($6, ''))
RETURNING c.conflict_id, c.version, c.status, c.policy_version`
	casePriorPositionsSQL = `-- name: CasePriorPositions
SELECT e.conflict_id, e.positions FROM {schema}.conflict_events e
WHERE e.team_id = $1 AND (e.conflict_id, e.case_version) IN (SELECT * FROM unnest($2::text[], $3::bigint[]))`
	caseEscalateEventSQL = `-- name: CaseEscalateEvent
INSERT INTO {schema}.conflict_events (team_id, event_id, conflict_id, case_version, prior_status, resulting_status, actor_kind,
    actor_profile_id, reason_code, policy_version, time_basis, referenced, positions, ingest_id, created_at)
VALUES ($1, 'cfe_' || replace(gen_random_uuid()::text, '-', ''), $2, $3, $4, $4, 'system_conflict_reviewer', NULL,
    'max_attempts_exhausted', $5, NULL, '{}'::jsonb, COALESCE($6::jsonb, '[]'::jsonb), '', $7)`
)

// CaseEscalateExhausted escalates the cases whose attempts of the run date are exhausted.
func (s *Store) CaseEscalateExhausted(ctx context.Context, p store.CaseEscalateParams) (int, error) {
	type escalated struct {
		ID            string
		Version       int64
		Status        string
		PolicyVersion int64
	}
	n := 0
	err := s.beginFunc(ctx, p.Team, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.sql(caseEscalateSQL), p.Team, p.Now, p.RunDate.Format(time.DateOnly), p.NextReview,
			p.MaxAttempts, p.Token)
		if err != nil {
			return err
		}
		cases, err := pgx.CollectRows(rows, pgx.RowToStructByPos[escalated])
		if err != nil || len(cases) == 0 {
			return err
		}
		n = len(cases)
		ids, prior := make([]string, n), make([]int64, n)
		for i, c := range cases {
			ids[i], prior[i] = c.ID, c.Version-1
		}
		positions := map[string][]byte{}
		rows, err = tx.Query(ctx, s.sql(casePriorPositionsSQL), p.Team, ids, prior)
		if err != nil {
			return err
		}
		var id string
		var members []byte
		if _, err := pgx.ForEachRow(rows, []any{&id, &members}, func() error {
			positions[id] = members
			return nil
		}); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, c := range cases {
			b.Queue(s.sql(caseEscalateEventSQL), p.Team, c.ID, c.Version, c.Status, c.PolicyVersion, positions[c.ID], p.Now)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	return n, err
}

// caseReviewSQL applies the reviewer's decision to a case, fenced by claim token and version.
const caseReviewSQL = `-- name: CaseReview
WITH u AS (
    UPDATE {schema}.conflict_cases
    SET status = $5, version = $6, next_review_at = $7, resolved_at = $8, effective_at = $9,
        effective_time_basis = NULLIF($10, ''), preferred_position_id = NULLIF($11, ''),
        escalated_date = COALESCE($12::date, escalated_date), claim_token = NULL, lease_expires_at = NULL, updated_at = $13
    WHERE team_id = $1 AND conflict_id = $2 AND claim_token = $3 AND version = $4
    RETURNING 1)
SELECT {schema}.densemem_expect_rows(count(*), 1, 'claim of conflict case ' || $2::text) FROM u`

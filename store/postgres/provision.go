package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

const teamInsertSQL = `-- name: TeamInsert
INSERT INTO {schema}.teams (team_id, name, created_at) VALUES ($1, $2, $3)`

const policyInsertSQL = `-- name: PolicyInsert
INSERT INTO {schema}.team_policies (team_id, version, review_ttl_seconds, auto_write_threshold,
    authoritative_profile_ids, time_zone, created_by, created_at)
SELECT $1, COALESCE(MAX(version), 0) + 1, $2, $3, $4, $5, $6, $7
FROM {schema}.team_policies WHERE team_id = $1
RETURNING version`

// TeamCreate creates a team and its first policy version in one transaction.
func (s *Store) TeamCreate(ctx context.Context, p store.TeamCreateParams) error {
	return s.beginFunc(ctx, p.Team, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.sql(teamInsertSQL), p.Team, p.Name, p.CreatedAt); err != nil {
			return translate(err)
		}
		pol := p.Policy
		pol.Team = p.Team
		var v int
		return translate(tx.QueryRow(ctx, s.sql(policyInsertSQL), policyArgs(pol)...).Scan(&v))
	})
}

func policyArgs(p store.Policy) []any {
	return []any{p.Team, int64(p.ReviewTTL / time.Second), p.AutoWriteThreshold,
		idStrings(p.AuthoritativeProfiles), p.TimeZone, p.CreatedBy, p.CreatedAt}
}

// profileInsertSQL inserts by VALUES; a missing team is the foreign key's violation. (An INSERT …
// SELECT guarded by the team's row reads the teams reference table, which Citus executes as a COPY
// into the shard, refused under row-level security.)
const profileInsertSQL = `-- name: ProfileInsert
INSERT INTO {schema}.profiles (team_id, profile_id, name, status, scopes, created_at, updated_at)
VALUES ($1, $2, $3, 'active', $4, $5, $5)`

// ProfileCreate creates an active profile. ErrNotFound when the team does not exist.
func (s *Store) ProfileCreate(ctx context.Context, p store.ProfileCreateParams) error {
	scopes := make([]string, len(p.Scopes))
	for i, sc := range p.Scopes {
		scopes[i] = string(sc)
	}
	b := &pgx.Batch{}
	b.Queue(profileInsertSQL, p.Team, p.Profile, p.Name, scopes, p.CreatedAt)
	err := s.send(ctx, p.Team, b, true)
	// The only foreign key of profiles is its team's (on a cluster the error names the shard's key).
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return fmt.Errorf("%w: team %s", store.ErrNotFound, p.Team)
	}
	return err
}

const profileSetStatusSQL = `-- name: ProfileSetStatus
UPDATE {schema}.profiles SET status = $3, updated_at = $4 WHERE team_id = $1 AND profile_id = $2`

// ProfileSetStatus changes a profile's status. ErrNotFound when it does not exist.
func (s *Store) ProfileSetStatus(ctx context.Context, p store.ProfileSetStatusParams) error {
	var ct pgconn.CommandTag
	b := &pgx.Batch{}
	b.Queue(profileSetStatusSQL, p.Team, p.Profile, p.Status, p.UpdatedAt).Exec(func(tag pgconn.CommandTag) error {
		ct = tag
		return nil
	})
	if err := s.send(ctx, p.Team, b, true); err != nil {
		return err
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("%w: profile %s", store.ErrNotFound, p.Profile)
	}
	return nil
}

const principalSQL = `-- name: PrincipalLoad
SELECT p.name, p.status, p.scopes, pol.version, pol.review_ttl_seconds, pol.auto_write_threshold,
       pol.authoritative_profile_ids, pol.time_zone, pol.created_by, pol.created_at
FROM {schema}.profiles p
JOIN LATERAL (SELECT * FROM {schema}.team_policies tp WHERE tp.team_id = $1 ORDER BY tp.version DESC LIMIT 1) pol ON true
WHERE p.team_id = $1 AND p.profile_id = $2`

func scanPrincipal(row pgx.Row, team identity.TeamID, profile identity.ProfileID) (store.Principal, error) {
	var pr store.Principal
	var status string
	var scopes, auth []string
	var ttl int64
	pr.Profile.Team, pr.Profile.ID, pr.Policy.Team = team, profile, team
	err := row.Scan(&pr.Profile.Name, &status, &scopes, &pr.Policy.Version, &ttl, &pr.Policy.AutoWriteThreshold,
		&auth, &pr.Policy.TimeZone, &pr.Policy.CreatedBy, &pr.Policy.CreatedAt)
	if err != nil {
		return pr, err
	}
	pr.Profile.Status = identity.ProfileStatus(status)
	for _, sc := range scopes {
		pr.Profile.Scopes = append(pr.Profile.Scopes, identity.Scope(sc))
	}
	for _, a := range auth {
		pr.Policy.AuthoritativeProfiles = append(pr.Policy.AuthoritativeProfiles, identity.ProfileID(a))
	}
	pr.Policy.ReviewTTL = time.Duration(ttl) * time.Second
	return pr, nil
}

// PrincipalLoad returns a profile with its team's policy in force. ErrNotFound when either is missing.
func (s *Store) PrincipalLoad(ctx context.Context, p store.PrincipalLoadParams) (store.Principal, error) {
	var pr store.Principal
	b := &pgx.Batch{}
	b.Queue(principalSQL, p.Team, p.Profile).QueryRow(func(row pgx.Row) (err error) {
		pr, err = scanPrincipal(row, p.Team, p.Profile)
		return err
	})
	return pr, s.send(ctx, p.Team, b, false)
}

// policyAppendSQL appends version $8+1 only while $8 is the version in force. It runs after
// teamVersionsLockSQL, as a statement of its own, so under READ COMMITTED it sees every version
// committed before the lock was granted.
const policyAppendSQL = `-- name: PolicyAppend
INSERT INTO {schema}.team_policies (team_id, version, review_ttl_seconds, auto_write_threshold,
    authoritative_profile_ids, time_zone, created_by, created_at)
SELECT $1, cur.version + 1, $2, $3, $4, $5, $6, $7
FROM (SELECT max(version) AS version FROM {schema}.team_policies WHERE team_id = $1) cur
WHERE cur.version = $8::int
RETURNING version`

// PolicyAppend appends the next policy version of a team, only if ExpectVersion is the version in
// force, in one round trip: the team's policy versions are locked (lockTeamVersions), then the
// version in force compared and the new one inserted in one statement. ErrStaleVersion when another version is in force, ErrNotFound
// when the team does not exist.
func (s *Store) PolicyAppend(ctx context.Context, p store.PolicyAppendParams) (store.Policy, error) {
	pol := p.Policy
	var team, appended bool
	b := &pgx.Batch{}
	b.Queue(teamVersionsLockSQL, lockID("policy-versions", string(pol.Team)), pol.Team).QueryRow(func(row pgx.Row) error {
		return row.Scan(&team)
	})
	b.Queue(policyAppendSQL, append(policyArgs(pol), p.ExpectVersion)...).Query(func(rows pgx.Rows) error {
		if appended = rows.Next(); appended {
			if err := rows.Scan(&pol.Version); err != nil {
				return err
			}
		}
		rows.Close()
		return rows.Err()
	})
	if err := s.send(ctx, pol.Team, b, true); err != nil {
		return store.Policy{}, err
	}
	switch {
	case !team:
		return store.Policy{}, fmt.Errorf("%w: team %s", store.ErrNotFound, pol.Team)
	case !appended:
		return store.Policy{}, fmt.Errorf("%w: team %s's policy version %d is no longer in force", store.ErrStaleVersion,
			pol.Team, p.ExpectVersion)
	}
	return pol, nil
}

const teamVersionsLockSQL = `-- name: TeamVersionsLock
SELECT pg_advisory_xact_lock($1) IS NOT NULL AND EXISTS (SELECT 1 FROM {schema}.teams WHERE team_id = $2)`

// lockTeamVersions serialises the version assignments of one kind (policy, predicate) in a team with
// a transaction-scoped advisory lock: row locks would need UPDATE on teams, which the runtime role
// does not hold. ErrNotFound when the team does not exist.
func (s *Store) lockTeamVersions(ctx context.Context, tx pgx.Tx, team identity.TeamID, kind string) error {
	var exists bool
	err := tx.QueryRow(ctx, s.sql(teamVersionsLockSQL), lockID(kind+"-versions", string(team)), team).Scan(&exists)
	if err != nil {
		return translate(err)
	}
	if !exists {
		return fmt.Errorf("%w: team %s", store.ErrNotFound, team)
	}
	return nil
}

const predicateInsertSQL = `-- name: PredicateInsert
INSERT INTO {schema}.predicate_definitions (team_id, predicate_key, version, relationship_kind, current_cardinality,
    aliases, subject_kinds, object_kinds, value_object, description, created_by, created_at)
SELECT $1, $2, COALESCE(MAX(version), 0) + 1, $3, $4, $5, $6, $7, $8, $9, $10, $11
FROM {schema}.predicate_definitions WHERE team_id = $1 AND predicate_key = $2
RETURNING version`

// PredicateAppend appends the next version of a predicate key and returns it, unless p.Check,
// called under the team's predicate lock with the team's latest versions, refuses it (its error is
// returned as is). ErrNotFound when the team does not exist.
func (s *Store) PredicateAppend(ctx context.Context, p store.PredicateAppendParams) (relationship.Predicate, error) {
	pr := p.Predicate
	var refused error // Check's error, returned as is (translate would file it as a driver failure)
	err := s.beginFunc(ctx, p.Team, func(tx pgx.Tx) error {
		if err := s.lockTeamVersions(ctx, tx, p.Team, "predicate"); err != nil {
			return err
		}
		if p.Check != nil {
			rows, err := tx.Query(ctx, s.sql(predicateListSQL), p.Team)
			if err != nil {
				return err
			}
			registered, err := pgx.CollectRows(rows, scanPredicate)
			if err != nil {
				return err
			}
			if refused = p.Check(registered); refused != nil {
				return refused
			}
		}
		return translate(tx.QueryRow(ctx, s.sql(predicateInsertSQL), p.Team, pr.Key, pr.Kind, pr.Cardinality,
			nonNil(pr.Aliases), nonNil(pr.SubjectKinds), nonNil(pr.ObjectKinds), pr.ValueObject, pr.Description,
			p.CreatedBy, p.CreatedAt).Scan(&pr.Version))
	})
	if refused != nil {
		return pr, refused
	}
	return pr, err
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

const predicateListSQL = `-- name: PredicateList
SELECT DISTINCT ON (predicate_key) predicate_key, version, relationship_kind, current_cardinality, aliases,
       subject_kinds, object_kinds, value_object, description
FROM {schema}.predicate_definitions WHERE team_id = $1
ORDER BY predicate_key, version DESC`

// PredicateList returns the latest version of every predicate key of a team, ordered by key.
func (s *Store) PredicateList(ctx context.Context, team identity.TeamID) ([]relationship.Predicate, error) {
	var preds []relationship.Predicate
	b := &pgx.Batch{}
	b.Queue(predicateListSQL, team).Query(func(rows pgx.Rows) (err error) {
		preds, err = pgx.CollectRows(rows, scanPredicate)
		return err
	})
	return preds, s.send(ctx, team, b, false)
}

func scanPredicate(row pgx.CollectableRow) (relationship.Predicate, error) {
	var p relationship.Predicate
	var kind, card string
	err := row.Scan(&p.Key, &p.Version, &kind, &card, &p.Aliases, &p.SubjectKinds, &p.ObjectKinds, &p.ValueObject, &p.Description)
	p.Kind, p.Cardinality = relationship.Kind(kind), relationship.Cardinality(card)
	return p, err
}

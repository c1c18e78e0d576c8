package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// The List reads: each reads the rows after its key in an index's order, LIMIT the page size plus
// one (the extra row only says the list goes on), in one round trip through send.

const profileListSQL = `-- name: ProfileList
SELECT profile_id, name, status, scopes, created_at
FROM {schema}.profiles
WHERE team_id = $1 AND profile_id > $2
ORDER BY profile_id
LIMIT $3`

// ProfileList returns a page of a team's profiles in profile ID order. Errors: ErrTimeout,
// ErrUnavailable, ErrInternal.
func (s *Store) ProfileList(ctx context.Context, p store.ProfileListParams) (store.Page[store.Profile], error) {
	var out store.Page[store.Profile]
	if err := checkLimit(p.Limit); err != nil {
		return out, err
	}
	b := &pgx.Batch{}
	b.Queue(profileListSQL, p.Team, p.After, p.Limit+1).Query(func(rows pgx.Rows) (err error) {
		out.Items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Profile, error) {
			pr := store.Profile{Team: p.Team}
			var status string
			var scopes []string
			err := row.Scan(&pr.ID, &pr.Name, &status, &scopes, &pr.CreatedAt)
			pr.Status = identity.ProfileStatus(status)
			pr.Scopes = make([]identity.Scope, len(scopes))
			for i, sc := range scopes {
				pr.Scopes[i] = identity.Scope(sc)
			}
			return pr, err
		})
		return err
	})
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.Page[store.Profile]{}, err
	}
	return cut(out, p.Limit), nil
}

// predicateListPageSQL walks the primary key (team_id, predicate_key, version) from the cursor's
// key on and keeps each key's latest version: the anti-join probes the same index, so a page reads
// the versions of its own keys only.
const predicateListPageSQL = `-- name: PredicateListPage
SELECT d.predicate_key, d.version, d.relationship_kind, d.current_cardinality, d.aliases, d.subject_kinds,
       d.object_kinds, d.value_object, d.description
FROM {schema}.predicate_definitions d
WHERE d.team_id = $1 AND d.predicate_key > $2
  AND NOT EXISTS (SELECT 1 FROM {schema}.predicate_definitions n
                  WHERE n.team_id = $1 AND n.predicate_key = d.predicate_key AND n.version > d.version)
ORDER BY d.predicate_key
LIMIT $3`

// PredicateListPage returns a page of a team's predicates, the latest version of each key, in key
// order. Errors: ErrTimeout, ErrUnavailable, ErrInternal.
func (s *Store) PredicateListPage(ctx context.Context, p store.PredicateListPageParams) (store.Page[relationship.Predicate], error) {
	var out store.Page[relationship.Predicate]
	if err := checkLimit(p.Limit); err != nil {
		return out, err
	}
	b := &pgx.Batch{}
	b.Queue(predicateListPageSQL, p.Team, p.After, p.Limit+1).Query(func(rows pgx.Rows) (err error) {
		out.Items, err = pgx.CollectRows(rows, scanPredicate)
		return err
	})
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.Page[relationship.Predicate]{}, err
	}
	return cut(out, p.Limit), nil
}

// caseRowsSQL shapes the cases of a page (its conflict_id column) as CaseList returns them: each with
// the membership of its latest event and its subject's name and kind.
const caseRowsSQL = `SELECT c.conflict_id, c.subject_entity_id, c.predicate_key, c.scope, c.status, c.version, c.opened_at,
       c.review_due_at, c.resolved_at, c.effective_at, COALESCE(c.effective_time_basis, ''),
       COALESCE(c.preferred_position_id, ''), c.policy_version, e.positions, c.kind,
       c.next_review_at, COALESCE(sn.name, ''), COALESCE(se.entity_kind, '')
FROM page p
JOIN {schema}.conflict_cases c ON c.team_id = $1 AND c.conflict_id = p.conflict_id
CROSS JOIN LATERAL (SELECT positions FROM {schema}.conflict_events e
                    WHERE e.team_id = $1 AND e.conflict_id = p.conflict_id ORDER BY e.case_version DESC LIMIT 1) e
LEFT JOIN {schema}.entities se ON se.team_id = $1 AND se.entity_id = c.subject_entity_id
LEFT JOIN {schema}.entity_names sn ON sn.team_id = $1 AND sn.entity_id = c.subject_entity_id AND sn.name_kind = 'canonical'
`

// caseListSQL takes the listed statuses in order ($2, with ordinality), and for each reads its
// cases after the status's lower bound ($3/$4: the cursor's key for the cursor's status, NULL for
// the statuses after it) along conflict_cases_status, LIMIT $5 each; the page is the first $5 of
// those in (status order, review_due_at, conflict_id). Each case then gets its positions from its
// latest event and its subject's canonical name.
const caseListSQL = `-- name: CaseList
WITH page AS (
    SELECT c.conflict_id, st.ord, c.review_due_at
    FROM unnest($2::text[], $3::timestamptz[], $4::text[]) WITH ORDINALITY AS st(status, after_due, after_id, ord)
    CROSS JOIN LATERAL (
        SELECT c.conflict_id, c.review_due_at FROM {schema}.conflict_cases c
        WHERE c.team_id = $1 AND c.status = st.status
          AND (c.review_due_at, c.conflict_id) > (COALESCE(st.after_due, '-infinity'::timestamptz), COALESCE(st.after_id, ''))
        ORDER BY c.review_due_at, c.conflict_id
        LIMIT $5) c
    ORDER BY st.ord, c.review_due_at, c.conflict_id
    LIMIT $5
)
` + caseRowsSQL + `ORDER BY p.ord, p.review_due_at, p.conflict_id`

// caseListDescSQL reads, for each listed status ($2), its cases before the cursor's (review_due_at,
// conflict_id) ($3/$4, none without a cursor) backwards along conflict_cases_status, LIMIT $5 each;
// the page is the first $5 of those in (review_due_at, conflict_id) descending.
const caseListDescSQL = `-- name: CaseListDeadlineDesc
WITH page AS (
    SELECT c.conflict_id, c.review_due_at
    FROM unnest($2::text[]) AS st(status)
    CROSS JOIN LATERAL (
        SELECT c.conflict_id, c.review_due_at FROM {schema}.conflict_cases c
        WHERE c.team_id = $1 AND c.status = st.status
          AND (c.review_due_at, c.conflict_id) < (COALESCE($3::timestamptz, 'infinity'::timestamptz), COALESCE($4::text, ''))
        ORDER BY c.review_due_at DESC, c.conflict_id DESC
        LIMIT $5) c
    ORDER BY c.review_due_at DESC, c.conflict_id DESC
    LIMIT $5
)
` + caseRowsSQL + `ORDER BY p.review_due_at DESC, p.conflict_id DESC`

// caseGetSQL reads one case by its primary key, shaped as CaseList shapes its rows.
const caseGetSQL = `-- name: CaseGet
WITH page AS (SELECT conflict_id FROM {schema}.conflict_cases WHERE team_id = $1 AND conflict_id = $2)
` + caseRowsSQL

// CaseGet returns one of a team's cases, of any status, as CaseList shows it. Errors: ErrNotFound,
// ErrTimeout, ErrUnavailable, ErrInternal.
func (s *Store) CaseGet(ctx context.Context, team identity.TeamID, id conflict.ID) (store.CaseListItem, error) {
	var items []store.CaseListItem
	b := &pgx.Batch{}
	b.Queue(caseGetSQL, team, id).Query(func(rows pgx.Rows) (err error) {
		items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.CaseListItem, error) {
			var it store.CaseListItem
			c, err := scanRecallCase(row, team, &it.NextReviewAt, &it.SubjectName, &it.SubjectKind)
			it.Case = c
			return it, err
		})
		return err
	})
	if err := s.send(ctx, team, b, false); err != nil {
		return store.CaseListItem{}, err
	}
	if len(items) == 0 {
		return store.CaseListItem{}, fmt.Errorf("%w: conflict case %s", store.ErrNotFound, id)
	}
	return items[0], nil
}

// CaseList returns a page of a team's conflict cases of the given statuses, status by status in
// the order given, each status by review_due_at then conflict ID, with each case's current
// membership. Errors: ErrTimeout, ErrUnavailable, ErrInternal (also for a key whose status is not
// listed).
func (s *Store) CaseList(ctx context.Context, p store.CaseListParams) (store.Page[store.CaseListItem], error) {
	var out store.Page[store.CaseListItem]
	if err := checkLimit(p.Limit); err != nil {
		return out, err
	}
	if p.DeadlineDesc {
		return s.caseListDesc(ctx, p)
	}
	statuses := p.Statuses
	dues, ids := make([]*time.Time, len(statuses)), make([]*string, len(statuses))
	if p.After != nil {
		i := slices.Index(statuses, p.After.Status)
		if i < 0 {
			return out, fmt.Errorf("%w: case list key of status %q, which is not listed", store.ErrInternal, p.After.Status)
		}
		statuses, dues, ids = statuses[i:], dues[i:], ids[i:]
		id := string(p.After.ID)
		dues[0], ids[0] = &p.After.ReviewDueAt, &id
	}
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = string(st)
	}
	return s.caseListPage(ctx, p, caseListSQL, names, dues, ids)
}

// caseListDesc is CaseList in (review_due_at, conflict ID) descending order.
func (s *Store) caseListDesc(ctx context.Context, p store.CaseListParams) (store.Page[store.CaseListItem], error) {
	names := make([]string, len(p.Statuses))
	for i, st := range p.Statuses {
		names[i] = string(st)
	}
	var due *time.Time
	var id *string
	if p.After != nil {
		d, i := p.After.ReviewDueAt, string(p.After.ID)
		due, id = &d, &i
	}
	return s.caseListPage(ctx, p, caseListDescSQL, names, due, id)
}

// caseListPage reads a page of cases with sql (caseListSQL or caseListDescSQL) and its arguments
// after the team, and the limit.
func (s *Store) caseListPage(ctx context.Context, p store.CaseListParams, sql string, args ...any) (store.Page[store.CaseListItem], error) {
	var out store.Page[store.CaseListItem]
	b := &pgx.Batch{}
	b.Queue(sql, append(append([]any{p.Team}, args...), p.Limit+1)...).Query(func(rows pgx.Rows) (err error) {
		out.Items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.CaseListItem, error) {
			var it store.CaseListItem
			c, err := scanRecallCase(row, p.Team, &it.NextReviewAt, &it.SubjectName, &it.SubjectKind)
			it.Case = c
			return it, err
		})
		return err
	})
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.Page[store.CaseListItem]{}, err
	}
	return cut(out, p.Limit), nil
}

// ReviewItemList returns a page of a team's review items of one status (of one profile, or of
// all), in (profile ID, created_at, review ID) order, along review_items_status. Errors:
// ErrTimeout, ErrUnavailable, ErrInternal.
func (s *Store) ReviewItemList(ctx context.Context, p store.ReviewItemListParams) (store.Page[store.ReviewItemView], error) {
	var out store.Page[store.ReviewItemView]
	if err := checkLimit(p.Limit); err != nil {
		return out, err
	}
	sql, args, err := reviewItemListQuery(p)
	if err != nil {
		return out, err
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...).Query(func(rows pgx.Rows) (err error) {
		out.Items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ReviewItemView, error) {
			return scanReviewItemView(row, p.Team)
		})
		return err
	})
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.Page[store.ReviewItemView]{}, err
	}
	return cut(out, p.Limit), nil
}

// reviewItemListQuery builds ReviewItemList's statement: the profile filter only when one is asked
// for (so the index's profile_id column bounds the scan), the keyset condition only after a key.
func reviewItemListQuery(p store.ReviewItemListParams) (string, []any, error) {
	// The team is the first placeholder ($1), as reviewItemViewColumns expects.
	q := psql.Select(reviewItemViewColumns).From("{schema}.review_items x").
		Where("x.team_id = ?", p.Team).Where(sq.Eq{"x.status": p.Status})
	if p.Profile != "" {
		q = q.Where(sq.Eq{"x.profile_id": p.Profile})
	}
	if a := p.After; a != nil {
		q = q.Where("(x.profile_id, x.created_at, x.review_id) > (?, ?, ?)", a.Profile, a.CreatedAt, a.ID)
	}
	sql, args, err := q.OrderBy("x.profile_id", "x.created_at", "x.review_id").Limit(uint64(p.Limit) + 1).ToSql()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", store.ErrInternal, err)
	}
	return "-- name: ReviewItemList\n" + sql, args, nil
}

// checkLimit refuses a page size the List reads cannot serve (the root validates requests first).
func checkLimit(limit int) error {
	if limit < 1 || limit > 1<<20 {
		return fmt.Errorf("%w: list limit %d out of range", store.ErrInternal, limit)
	}
	return nil
}

// cut keeps the first limit items of a page read with LIMIT limit+1 and records whether more followed.
func cut[T any](p store.Page[T], limit int) store.Page[T] {
	if len(p.Items) > limit {
		p.Items, p.More = p.Items[:limit], true
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p
}

package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Source revisions (DESIGN §13): IntakeLock locks the revised source keys and reads, per source, its
// owner, the fragments the revision names and the relationships they support (with their keys, for
// KeysLock). Everything is read after the source's lock, so two revisions of one source serialise and
// the second sees the first's retirements.

// sourceLockIDs locks revised sources by key (class "source-key").
func sourceLockIDs(team identity.TeamID, revs []store.SourceRevision, adopted []string) []int64 {
	ids := make([]int64, 0, len(revs)+len(adopted))
	for _, r := range revs {
		ids = append(ids, lockID("source-key", string(team), r.Key))
	}
	for _, k := range adopted {
		ids = append(ids, lockID("source-key", string(team), k))
	}
	return sortedUnique(ids)
}

const (
	// sourceOwnerSQL reads the author of a source's first fragment (evidence_fragments_source).
	sourceOwnerSQL = `-- name: SourceOwner
SELECT f.author_profile_id FROM {schema}.evidence_fragments f
WHERE f.team_id = $1 AND f.source_key = $2 AND f.source_key <> ''
ORDER BY f.created_at, f.fragment_id LIMIT 1`
	// sourceRetiringFilter selects the fragments a revision names: those of the previous revision
	// ($2, $3) and the named ones ($4).
	sourceRetiringFilter = `SELECT f.fragment_id FROM {schema}.evidence_fragments f
    WHERE f.team_id = $1 AND f.source_key = $2 AND f.source_revision = $3 AND f.source_key <> ''
  UNION
    SELECT f.fragment_id FROM {schema}.evidence_fragments f WHERE f.team_id = $1 AND f.fragment_id = ANY($4::text[])`
	sourceFragmentsSQL = `-- name: SourceFragments
SELECT f.fragment_id, f.source_key, f.source_revision, f.author_profile_id, fr.retirement_id IS NOT NULL
FROM {schema}.evidence_fragments f
LEFT JOIN {schema}.fragment_retirements fr ON fr.team_id = $1 AND fr.fragment_id = f.fragment_id
WHERE f.team_id = $1 AND f.fragment_id IN (` + sourceRetiringFilter + `)
ORDER BY f.fragment_id`
	// sourceRelationshipsSQL reads the relationships the fragments support, whatever their status
	// (support_links_fragment), at most $5.
	sourceRelationshipsSQL = `-- name: SourceRelationships
SELECT r.relationship_id, r.subject_entity_id, r.predicate_key, r.scope
FROM {schema}.relationships r
WHERE r.team_id = $1 AND r.relationship_id IN (
    SELECT s.relationship_id FROM {schema}.support_links s
    WHERE s.team_id = $1 AND s.fragment_id IN (` + sourceRetiringFilter + `))
ORDER BY r.relationship_id
LIMIT $5`
)

// queueSources queues the reads of the revised sources' states into out, one per revision.
func queueSources(b *pgx.Batch, out *[]store.SourceState, p store.IntakeLockParams) {
	*out = make([]store.SourceState, len(p.Revisions))
	for i, rev := range p.Revisions {
		st := &(*out)[i]
		st.Key = rev.Key
		named := make([]string, len(rev.Supersedes))
		for j, id := range rev.Supersedes {
			named[j] = string(id)
		}
		b.Queue(sourceOwnerSQL, p.Team, rev.Key).Query(func(rows pgx.Rows) error {
			owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if len(owners) > 0 {
				st.Owner = identity.ProfileID(owners[0])
			}
			return err
		})
		b.Queue(sourceFragmentsSQL, p.Team, rev.Key, rev.Previous, named).Query(func(rows pgx.Rows) (err error) {
			st.Fragments, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.SourceFragment, error) {
				var f store.SourceFragment
				var id, author string
				err := row.Scan(&id, &f.SourceKey, &f.Revision, &author, &f.Retired)
				f.ID, f.Author = evidence.FragmentID(id), identity.ProfileID(author)
				return f, err
			})
			return err
		})
		b.Queue(sourceRelationshipsSQL, p.Team, rev.Key, rev.Previous, named, p.MaxRevisionRelationships+1).Query(
			func(rows pgx.Rows) (err error) {
				st.Relationships, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RelationshipKey, error) {
					var r store.RelationshipKey
					var id, subject string
					err := row.Scan(&id, &subject, &r.Key.PredicateKey, &r.Key.Scope)
					r.ID, r.Key.Team, r.Key.Subject = relationship.ID(id), p.Team, identity.EntityID(subject)
					return r, err
				})
				return err
			})
	}
}

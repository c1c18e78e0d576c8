package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/relationship"
)

// The host-level administration: migrations, teams, profiles, predicates and policies.

// errPending makes migrate validate exit 1 when the database lacks migrations.
var errPending = errors.New("migrations pending")

// migrateFlags are the flags of migrate up and down.
type migrateFlags struct {
	to      *int64
	dryRun  *bool
	showSQL *bool
}

func (c *cli) migrateFlags(s *sub, toUsage string) migrateFlags {
	return migrateFlags{
		to:      s.fs.Int64("to", -1, toUsage),
		dryRun:  s.fs.Bool("dry-run", false, "list what would be done, change nothing"),
		showSQL: s.fs.Bool("show-sql", false, "print the SQL of each migration listed (Go migrations have none to show)"),
	}
}

// migrationLine is one migration done (or, with --dry-run, to do), as migrate up and down print it.
type migrationLine struct {
	Version   int64  `json:"version"`
	Source    string `json:"source"`
	Direction string `json:"direction"`
	Duration  string `json:"duration,omitempty"`
	DryRun    bool   `json:"dry_run,omitempty"`
	SQL       string `json:"sql,omitempty"`
}

// migrationReport is what migrate up, down and redo print.
type migrationReport struct {
	Migrations []migrationLine `json:"migrations"`
	Version    int64           `json:"version"`
	Latest     int64           `json:"latest"`
}

// report prints the migrations done (or planned) and the version the database is at.
func (c *cli) report(ctx context.Context, pool *pgxpool.Pool, lines []migrationLine, showSQL bool) error {
	v, err := migrations.Version(ctx, pool, nil)
	if err != nil {
		return err
	}
	if showSQL {
		for i := range lines {
			lines[i].SQL = migrationSQL(lines[i].Source, lines[i].Direction)
		}
	}
	rep := migrationReport{Migrations: lines, Version: v, Latest: migrations.Latest()}
	return c.print(rep, func() {
		for _, l := range lines {
			switch {
			case l.DryRun:
				fmt.Fprintf(c.stdout, "would %-4s %s\n", l.Direction, l.Source)
			default:
				fmt.Fprintf(c.stdout, "OK   %-4s %s (%s)\n", l.Direction, l.Source, l.Duration)
			}
			if l.SQL != "" {
				fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(l.SQL, "\n"))
			}
		}
		if len(lines) == 0 {
			fmt.Fprintln(c.stdout, "nothing to do")
		}
		fmt.Fprintf(c.stdout, "schema at migration %d (this build needs %d)\n", v, rep.Latest)
	})
}

// migrationSQL is the SQL of one direction of a SQL migration ("" for a Go one).
func migrationSQL(source, direction string) string {
	if !strings.HasSuffix(source, ".sql") {
		return ""
	}
	data, err := fs.ReadFile(migrations.FS(), source)
	if err != nil {
		return ""
	}
	marker := "-- +goose " + map[string]string{"up": "Up", "down": "Down"}[direction]
	_, rest, ok := strings.Cut(string(data), marker)
	if !ok {
		return ""
	}
	if other := map[string]string{"up": "-- +goose Down", "down": "-- +goose Up"}[direction]; strings.Contains(rest, other) {
		rest, _, _ = strings.Cut(rest, other)
	}
	return marker + rest
}

// lines converts the migrations' results.
func lines(rs []migrations.Result) []migrationLine {
	out := make([]migrationLine, len(rs))
	for i, r := range rs {
		out[i] = migrationLine{Version: r.Version, Source: r.Source, Direction: r.Direction, Duration: r.Duration.Round(time.Microsecond).String()}
	}
	return out
}

func (c *cli) migrateUp(ctx context.Context, args []string) error {
	s := c.sub("migrate up", "")
	f := c.migrateFlags(s, "apply the migrations up to this one only (default: all)")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	to := *f.to
	if to < 0 {
		to = math.MaxInt64
	}
	if *f.dryRun {
		st, err := migrations.Status(ctx, pool, nil)
		if err != nil {
			return err
		}
		var plan []migrationLine
		for _, m := range st {
			if !m.Applied && m.Version <= to {
				plan = append(plan, migrationLine{Version: m.Version, Source: m.Source, Direction: "up", DryRun: true})
			}
		}
		return c.report(ctx, pool, plan, *f.showSQL)
	}
	rs, err := migrations.Apply(ctx, pool, to, nil)
	if err != nil {
		_ = c.report(ctx, pool, lines(rs), false)
		return err
	}
	return c.report(ctx, pool, lines(rs), *f.showSQL)
}

func (c *cli) migrateDown(ctx context.Context, args []string) error {
	s := c.sub("migrate down", "")
	f := c.migrateFlags(s, "roll back every migration above this one (default: the newest only; 0: all)")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	st, err := migrations.Status(ctx, pool, nil)
	if err != nil {
		return err
	}
	to := *f.to
	if to < 0 {
		to = previousApplied(st)
	}
	if *f.dryRun {
		var plan []migrationLine
		for i := len(st) - 1; i >= 0; i-- {
			if st[i].Applied && st[i].Version > to {
				plan = append(plan, migrationLine{Version: st[i].Version, Source: st[i].Source, Direction: "down", DryRun: true})
			}
		}
		return c.report(ctx, pool, plan, *f.showSQL)
	}
	rs, err := migrations.Rollback(ctx, pool, to, nil)
	if err != nil {
		_ = c.report(ctx, pool, lines(rs), false)
		return err
	}
	return c.report(ctx, pool, lines(rs), *f.showSQL)
}

// previousApplied is the version below the newest applied migration (0 when one or none is applied).
func previousApplied(st []migrations.MigrationStatus) int64 {
	var applied []int64
	for _, m := range st {
		if m.Applied {
			applied = append(applied, m.Version)
		}
	}
	if len(applied) < 2 {
		return 0
	}
	return applied[len(applied)-2]
}

func (c *cli) migrateRedo(ctx context.Context, args []string) error {
	s := c.sub("migrate redo", "")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	v, err := migrations.Version(ctx, pool, nil)
	if err != nil {
		return err
	}
	if v == 0 {
		return errors.New("no migration is applied: nothing to redo")
	}
	st, err := migrations.Status(ctx, pool, nil)
	if err != nil {
		return err
	}
	down, err := migrations.Rollback(ctx, pool, previousApplied(st), nil)
	if err != nil {
		_ = c.report(ctx, pool, lines(down), false)
		return err
	}
	up, err := migrations.Apply(ctx, pool, v, nil)
	_ = up
	if rerr := c.report(ctx, pool, append(lines(down), lines(up)...), false); err == nil {
		err = rerr
	}
	return err
}

// statusLine is one migration of migrate status.
type statusLine struct {
	Version   int64      `json:"version"`
	Source    string     `json:"source"`
	Applied   bool       `json:"applied"`
	AppliedAt *time.Time `json:"applied_at,omitempty"`
}

// status reads the migrations' status as migrate status prints it.
func status(ctx context.Context, pool *pgxpool.Pool) ([]statusLine, int, error) {
	st, err := migrations.Status(ctx, pool, nil)
	if err != nil {
		return nil, 0, err
	}
	out := make([]statusLine, len(st))
	pending := 0
	for i, m := range st {
		out[i] = statusLine{Version: m.Version, Source: m.Source, Applied: m.Applied}
		if m.Applied {
			at := m.AppliedAt.UTC()
			out[i].AppliedAt = &at
		} else {
			pending++
		}
	}
	return out, pending, nil
}

func (c *cli) migrateStatus(ctx context.Context, args []string) error {
	s := c.sub("migrate status", "")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	st, pending, err := status(ctx, pool)
	if err != nil {
		return err
	}
	return c.print(struct {
		Migrations []statusLine `json:"migrations"`
		Pending    int          `json:"pending"`
	}{st, pending}, func() {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tMIGRATION\tAPPLIED")
		for _, m := range st {
			applied := "pending"
			if m.AppliedAt != nil {
				applied = m.AppliedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", m.Version, m.Source, applied)
		}
		_ = tw.Flush()
		fmt.Fprintf(c.stdout, "%d pending\n", pending)
	})
}

func (c *cli) migrateValidate(ctx context.Context, args []string) error {
	s := c.sub("migrate validate", "")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	v, err := migrations.Version(ctx, pool, nil)
	if err != nil {
		return err
	}
	_, pending, err := status(ctx, pool)
	if err != nil {
		return err
	}
	latest := migrations.Latest()
	out := struct {
		Version int64 `json:"version"`
		Latest  int64 `json:"latest"`
		Pending int   `json:"pending"`
		Valid   bool  `json:"valid"`
	}{v, latest, pending, v == latest && pending == 0}
	if err := c.print(out, func() {
		if out.Valid {
			fmt.Fprintf(c.stdout, "schema at migration %d, as this build needs\n", v)
		}
	}); err != nil {
		return err
	}
	switch {
	case v > latest:
		return fmt.Errorf("%w: the schema is at migration %d, newer than this build's %d: upgrade densemem", errPending, v, latest)
	case !out.Valid:
		return fmt.Errorf("%w: %d migration(s) pending, the schema is at %d of %d: run densemem migrate up", errPending, pending, v, latest)
	}
	return nil
}

func (c *cli) migrateVersion(ctx context.Context, args []string) error {
	s := c.sub("migrate version", "")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	v, err := migrations.Version(ctx, pool, nil)
	if err != nil {
		return err
	}
	return c.print(struct {
		Version int64 `json:"version"`
		Latest  int64 `json:"latest"`
	}{v, migrations.Latest()}, func() {
		fmt.Fprintf(c.stdout, "%d (this build needs %d)\n", v, migrations.Latest())
	})
}

// migrateBindingKey prints the newest binding key of the database (migration 25), the key the
// runtime and reviewer stores need; with --rotate it first adds a new random one (the one before stays
// valid until the next rotation, so hosts move over one by one); with --retire-old it then removes
// every key but the newest.
func (c *cli) migrateBindingKey(ctx context.Context, args []string) error {
	s := c.sub("migrate binding-key", "")
	rotate := s.fs.Bool("rotate", false, "add a new random key first (the previous one stays valid until the next rotation)")
	retire := s.fs.Bool("retire-old", false, "then remove every key but the newest (hosts still on an older one fail)")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	var key []byte
	if *rotate {
		key, err = migrations.RotateBindingKey(ctx, pool, nil, nil)
	} else {
		key, err = migrations.BindingKey(ctx, pool, nil)
	}
	if err != nil {
		return err
	}
	if *retire {
		if err := migrations.RetireBindingKeys(ctx, pool, nil); err != nil {
			return err
		}
	}
	h := hex.EncodeToString(key)
	return c.print(struct {
		BindingKey string `json:"binding_key"`
	}{h}, func() { fmt.Fprintln(c.stdout, h) })
}

// migrationPool parses args and connects to the database for the migrations; done closes it.
func (c *cli) migrationPool(ctx context.Context, s *sub, args []string) (*pgxpool.Pool, func(), error) {
	if _, err := s.parse(args, 0); err != nil {
		return nil, nil, err
	}
	pool, err := c.pool(ctx, *s.url)
	if err != nil {
		return nil, nil, err
	}
	return pool, pool.Close, nil
}

// pool connects to url for the migrations.
func (c *cli) pool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if strings.TrimSpace(url) == "" {
		var err error
		if url, err = c.startPrivate(ctx); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

func (c *cli) teamCreate(ctx context.Context, args []string) error {
	s := c.sub("team create", "")
	name := s.require("name", "the team's name")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	id, err := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: *name})
	if err != nil {
		return err
	}
	return c.print(struct {
		TeamID densemem.TeamID `json:"team_id"`
	}{id}, func() { fmt.Fprintln(c.stdout, id) })
}

// teamRow is one team of team list.
type teamRow struct {
	TeamID    string    `json:"team_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

func (c *cli) teamList(ctx context.Context, args []string) error {
	s := c.sub("team list", "")
	pool, done, err := c.migrationPool(ctx, s, args)
	if err != nil {
		return err
	}
	defer done()
	// Teams are the one list above a team: the library lists within a team. Row-level security shows
	// the owner (and a superuser) every team and the runtime role none, so this reads as the URL's role.
	rows, err := pool.Query(ctx, "SELECT team_id, name, created_at FROM "+pgx.Identifier{migrations.DefaultSchema, "teams"}.Sanitize()+
		" ORDER BY created_at, team_id")
	if err != nil {
		return fmt.Errorf("team list: %w (it needs the owner's URL: densemem_owner or a superuser)", err)
	}
	teams, err := pgx.CollectRows(rows, pgx.RowToStructByPos[teamRow])
	if err != nil {
		return err
	}
	return c.print(struct {
		Teams []teamRow `json:"teams"`
	}{teams}, func() {
		if len(teams) == 0 {
			fmt.Fprintln(c.stdout, "no teams (the runtime and reviewer roles see none: use the owner's URL)")
			return
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TEAM\tNAME\tCREATED")
		for _, t := range teams {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.TeamID, t.Name, stamp(t.CreatedAt))
		}
		_ = tw.Flush()
	})
}

func (c *cli) profileCreate(ctx context.Context, args []string) error {
	s := c.sub("profile create", "")
	team, name := s.require("team", "the team"), s.require("name", "the profile's name")
	scopes := s.fs.String("scopes", "read,write", "comma-separated scopes, of: "+strings.Join(scopeNames(), ", "))
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	var sc []densemem.Scope
	for _, s := range split(*scopes) {
		sc = append(sc, densemem.Scope(s))
	}
	id, err := client.CreateProfile(ctx, densemem.TeamID(*team), densemem.CreateProfileRequest{Name: *name, Scopes: sc})
	if err != nil {
		return err
	}
	return c.print(struct {
		ProfileID densemem.ProfileID `json:"profile_id"`
	}{id}, func() { fmt.Fprintln(c.stdout, id) })
}

// scopeNames are the profile scopes.
func scopeNames() []string {
	var out []string
	for _, s := range identity.Scopes() {
		out = append(out, string(s))
	}
	return out
}

func (c *cli) profileList(ctx context.Context, args []string) error {
	s := c.sub("profile list", "")
	team := s.require("team", "the team")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	all, err := allPages(func(after string) ([]densemem.Profile, string, error) {
		page, err := client.ListProfiles(ctx, host(*team), densemem.ListProfilesRequest{Limit: 500, After: after})
		if err != nil {
			return nil, "", err
		}
		return page.Profiles, page.NextAfter, nil
	})
	if err != nil {
		return err
	}
	return c.print(struct {
		Profiles []densemem.Profile `json:"profiles"`
	}{all}, func() {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROFILE\tNAME\tSTATUS\tSCOPES")
		for _, p := range all {
			sc := make([]string, len(p.Scopes))
			for i, s := range p.Scopes {
				sc[i] = string(s)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ProfileID, p.Name, p.Status, strings.Join(sc, ","))
		}
		_ = tw.Flush()
	})
}

func (c *cli) profileDisable(ctx context.Context, args []string) error {
	s := c.sub("profile disable", "")
	team, profile := s.require("team", "the team"), s.require("profile", "the profile to disable")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	if err := client.DisableProfile(ctx, densemem.TeamID(*team), densemem.ProfileID(*profile)); err != nil {
		return err
	}
	return c.print(struct {
		ProfileID string `json:"profile_id"`
		Status    string `json:"status"`
	}{*profile, string(identity.ProfileDisabled)}, func() { fmt.Fprintf(c.stdout, "profile %s disabled\n", *profile) })
}

func (c *cli) predicateRegister(ctx context.Context, args []string) error {
	s := c.sub("predicate register", "")
	fs := s.fs
	team, key := s.require("team", "the team"), s.require("key", "the predicate key, e.g. deploys_from")
	var def densemem.PredicateDefinition
	kind := fs.String("kind", "state", "relationship kind: state or event")
	cardinality := fs.String("cardinality", "one", "current cardinality: one or many")
	aliases := fs.String("aliases", "", "comma-separated phrases that mean the predicate")
	subjects := fs.String("subject-kinds", "", "comma-separated entity kinds a subject may have (empty: any)")
	objects := fs.String("object-kinds", "", "comma-separated entity kinds an object may have (empty: any)")
	fs.BoolVar(&def.ValueObject, "value-object", false, "the object is a literal value, not an entity")
	fs.StringVar(&def.Description, "description", "", "what the predicate means")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	def.Key = *key
	def.RelationshipKind, def.CurrentCardinality = relationship.Kind(*kind), relationship.Cardinality(*cardinality)
	def.Aliases, def.SubjectKinds, def.ObjectKinds = split(*aliases), split(*subjects), split(*objects)
	got, err := client.RegisterPredicate(ctx, host(*team), def)
	if err != nil {
		return err
	}
	return c.print(got, func() {
		fmt.Fprintf(c.stdout, "%s v%d: %s, current_cardinality %s\n", got.Key, got.Version, got.RelationshipKind, got.CurrentCardinality)
	})
}

func (c *cli) predicateList(ctx context.Context, args []string) error {
	s := c.sub("predicate list", "")
	team := s.require("team", "the team")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	all, err := allPages(func(after string) ([]densemem.PredicateDefinition, string, error) {
		page, err := client.ListPredicates(ctx, host(*team), densemem.ListPredicatesRequest{Limit: 500, After: after})
		if err != nil {
			return nil, "", err
		}
		return page.Predicates, page.NextAfter, nil
	})
	if err != nil {
		return err
	}
	return c.print(struct {
		Predicates []densemem.PredicateDefinition `json:"predicates"`
	}{all}, func() {
		if len(all) == 0 {
			fmt.Fprintln(c.stdout, "no predicates: register some (densemem predicate register) before anyone remembers")
			return
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tVERSION\tKIND\tCARDINALITY\tALIASES")
		for _, p := range all {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.Key, p.Version, p.RelationshipKind, p.CurrentCardinality, strings.Join(p.Aliases, ", "))
		}
		_ = tw.Flush()
	})
}

// allPages reads every page of a list: page reads the one after a cursor ("" first) and returns its
// items and the next cursor ("" at the end).
func allPages[T any](page func(after string) ([]T, string, error)) ([]T, error) {
	var all []T
	after := ""
	for {
		items, next, err := page(after)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		after = next
	}
}

// policyView is a policy as --json prints it: the review TTL as a duration string.
type policyView struct {
	Version                 int                  `json:"version"`
	ReviewTTL               string               `json:"review_ttl"`
	AutoWriteThreshold      float64              `json:"auto_write_threshold"`
	AuthoritativeProfileIDs []densemem.ProfileID `json:"authoritative_profile_ids"`
	TimeZone                string               `json:"time_zone"`
}

func (c *cli) showPolicy(pol densemem.TeamPolicy) error {
	ids := pol.AuthoritativeProfileIDs
	if ids == nil {
		ids = []densemem.ProfileID{}
	}
	return c.print(policyView{Version: pol.Version, ReviewTTL: pol.ReviewTTL.String(), AutoWriteThreshold: pol.AutoWriteThreshold,
		AuthoritativeProfileIDs: ids, TimeZone: pol.TimeZone}, func() { c.printPolicy(pol) })
}

func (c *cli) policyShow(ctx context.Context, args []string) error {
	s := c.sub("policy show", "")
	team := s.require("team", "the team")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	pol, err := client.TeamPolicy(ctx, host(*team))
	if err != nil {
		return err
	}
	return c.showPolicy(pol)
}

func (c *cli) policySet(ctx context.Context, args []string) error {
	s := c.sub("policy set", "")
	fs := s.fs
	team := s.require("team", "the team")
	version := fs.Int("version", 0, "the version in force this change replaces, as policy show prints it "+
		"(default: the version in force now; given, a concurrent change makes this one fail)")
	ttl := fs.Duration("review-ttl", 0, "how long a new conflict case has before its deadline (24h..720h)")
	threshold := fs.Float64("auto-write-threshold", 0, "the verifier confidence needed for support (0..1)")
	authoritative := fs.String("authoritative", "", "comma-separated profiles whose authoritative evidence counts as authority "+
		`("" with the flag given: none)`)
	zone := fs.String("time-zone", "", "the IANA time zone of the nightly review's run dates, e.g. Europe/Berlin")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	pol, err := client.TeamPolicy(ctx, host(*team))
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["version"] {
		pol.Version = *version
	}
	if given["review-ttl"] {
		pol.ReviewTTL = *ttl
	}
	if given["auto-write-threshold"] {
		pol.AutoWriteThreshold = *threshold
	}
	if given["authoritative"] {
		pol.AuthoritativeProfileIDs = nil
		for _, p := range split(*authoritative) {
			pol.AuthoritativeProfileIDs = append(pol.AuthoritativeProfileIDs, densemem.ProfileID(p))
		}
	}
	if given["time-zone"] {
		pol.TimeZone = *zone
	}
	if !given["review-ttl"] && !given["auto-write-threshold"] && !given["authoritative"] && !given["time-zone"] {
		return fmt.Errorf("%w: nothing to change: give --review-ttl, --auto-write-threshold, --authoritative or --time-zone", errUsage)
	}
	got, err := client.SetTeamPolicy(ctx, host(*team), pol)
	if err != nil {
		return err
	}
	return c.showPolicy(got)
}

func (c *cli) printPolicy(pol densemem.TeamPolicy) {
	auth := "none"
	if len(pol.AuthoritativeProfileIDs) > 0 {
		ids := make([]string, len(pol.AuthoritativeProfileIDs))
		for i, p := range pol.AuthoritativeProfileIDs {
			ids[i] = string(p)
		}
		auth = strings.Join(ids, ", ")
	}
	fmt.Fprintf(c.stdout, "policy version %d\n  review TTL:            %s\n  auto-write threshold:  %.2f\n"+
		"  authoritative profiles: %s\n  time zone:             %s\n", pol.Version, pol.ReviewTTL, pol.AutoWriteThreshold, auth,
		pol.TimeZone)
}

// split splits a comma-separated flag value, dropping blanks.
func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/relationship"
)

// The host-level administration: migrations, teams, profiles, predicates and policies.

func (c *cli) migrateUp(ctx context.Context, args []string) error {
	fs, url := c.flags("migrate up", "")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	pool, err := c.pool(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrations.Up(ctx, pool, nil); err != nil {
		return err
	}
	v, err := migrations.Version(ctx, pool, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "schema at migration %d (the library needs %d)\n", v, migrations.Latest())
	return nil
}

func (c *cli) migrateStatus(ctx context.Context, args []string) error {
	fs, url := c.flags("migrate status", "")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	pool, err := c.pool(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := migrations.Status(ctx, pool, nil)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tMIGRATION\tAPPLIED")
	pending := 0
	for _, m := range st {
		applied := "pending"
		if m.Applied {
			applied = m.AppliedAt.UTC().Format(time.RFC3339)
		} else {
			pending++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", m.Version, m.Source, applied)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%d pending\n", pending)
	return nil
}

// pool connects to url for the migrations.
func (c *cli) pool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if strings.TrimSpace(url) == "" {
		return nil, fmt.Errorf("%w: no database: set --database-url or %s", errUsage, envDatabaseURL)
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
	fmt.Fprintln(c.stdout, id)
	return nil
}

func (c *cli) profileCreate(ctx context.Context, args []string) error {
	s := c.sub("profile create", "")
	team, name := s.require("team", "the team"), s.require("name", "the profile's name")
	scopes := s.fs.String("scopes", "read,write", "comma-separated scopes: read, write, vocabulary, erasure")
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
	fmt.Fprintln(c.stdout, id)
	return nil
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
	fmt.Fprintf(c.stdout, "profile %s disabled\n", *profile)
	return nil
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
	fmt.Fprintf(c.stdout, "%s v%d: %s, current_cardinality %s\n", got.Key, got.Version, got.RelationshipKind, got.CurrentCardinality)
	return nil
}

func (c *cli) policyShow(ctx context.Context, args []string) error {
	s := c.sub("policy show", "")
	team := s.require("team", "the team")
	asJSON := s.fs.Bool("json", false, "print JSON")
	_, client, done, err := s.open(ctx, args, 0)
	if err != nil {
		return err
	}
	defer done()
	pol, err := client.TeamPolicy(ctx, host(*team))
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(pol)
	}
	c.printPolicy(pol)
	return nil
}

func (c *cli) policySet(ctx context.Context, args []string) error {
	s := c.sub("policy set", "")
	fs := s.fs
	team := s.require("team", "the team")
	version := fs.Int("version", 0, "the version in force this change replaces, as policy show prints it (required)")
	ttl := fs.Duration("review-ttl", 7*24*time.Hour, "how long a new conflict case has before its deadline (1h..720h)")
	threshold := fs.Float64("auto-write-threshold", 0.7, "the verifier confidence needed for support (0..1)")
	authoritative := fs.String("authoritative", "", "comma-separated profiles whose authoritative evidence counts as authority")
	zone := fs.String("time-zone", "UTC", "the IANA time zone of the nightly review's run dates")
	if _, err := s.parse(args, 0); err != nil {
		return err
	}
	if *version == 0 {
		return fmt.Errorf("%w: --version (the version in force) required", errUsage)
	}
	client, done, err := c.client(ctx, *s.url, "")
	if err != nil {
		return err
	}
	defer done()
	pol := densemem.TeamPolicy{Version: *version, ReviewTTL: *ttl, AutoWriteThreshold: *threshold, TimeZone: *zone}
	for _, p := range split(*authoritative) {
		pol.AuthoritativeProfileIDs = append(pol.AuthoritativeProfileIDs, densemem.ProfileID(p))
	}
	got, err := client.SetTeamPolicy(ctx, host(*team), pol)
	if err != nil {
		return err
	}
	c.printPolicy(got)
	return nil
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

// Command densemem is the operator's tool for a Dense-Mem database: migrate it, administer teams,
// profiles, predicates and policies as the host, run and inspect the nightly Conflict review, read a
// relationship's trace or a conflict case, and serve the MCP adapter.
//
//	densemem migrate up|status
//	densemem team create --name NAME
//	densemem profile create --team T --name NAME --scopes read,write
//	densemem profile disable --team T --profile P
//	densemem predicate register --team T --key KEY --kind state|event --cardinality one|many ...
//	densemem policy show|set --team T ...
//	densemem review run [--team T]...
//	densemem review list --team T
//	densemem trace --team T RELATIONSHIP_ID [--json]
//	densemem case --team T CONFLICT_ID [--json]
//	densemem mcp --stdio --team T --profile P | --http ADDR --tokens FILE
//
// Every subcommand reads the database URL from --database-url, else DENSEMEM_DATABASE_URL, and
// prints its flags with --help.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/store/postgres"
)

// Environment variables the command reads.
const (
	envDatabaseURL         = "DENSEMEM_DATABASE_URL"
	envReviewerDatabaseURL = "DENSEMEM_REVIEWER_DATABASE_URL"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and failed (or, for review run, cases failed)
	exitUsage  = 2 // the command line was wrong
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := (&cli{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}).run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// cli is one invocation's surroundings: where it writes, the environment it reads and its clock (nil:
// the wall clock; tests inject one).
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
}

// command is one subcommand: its name (with a group's word, e.g. "review run"), a line of help, and
// what it does with its arguments.
type command struct {
	name    string
	summary string
	run     func(c *cli, ctx context.Context, args []string) error
}

// commands are every subcommand, in the order help lists them (set by init: their flags' usage
// reads this list).
var commands []command

func init() {
	commands = []command{
		{"migrate up", "apply every pending migration", (*cli).migrateUp},
		{"migrate status", "list the migrations and whether each is applied", (*cli).migrateStatus},
		{"team create", "create a team (prints its ID)", (*cli).teamCreate},
		{"profile create", "create a profile in a team (prints its ID)", (*cli).profileCreate},
		{"profile disable", "disable a profile", (*cli).profileDisable},
		{"predicate register", "register a new version of a predicate", (*cli).predicateRegister},
		{"policy show", "show a team's policy in force", (*cli).policyShow},
		{"policy set", "append a new version of a team's policy", (*cli).policySet},
		{"review run", "run one nightly review pass over every due team now", (*cli).reviewRun},
		{"review list", "list a team's open and overdue conflict cases, overdue first", (*cli).reviewList},
		{"trace", "show a relationship's lineage", (*cli).trace},
		{"case", "show a conflict case with its positions and events", (*cli).showCase},
		{"mcp", "serve the MCP adapter (stdio for one principal, or HTTP with bearer tokens)", (*cli).mcp},
	}
}

// errUsage marks a command-line mistake: the message is printed with the subcommand's usage.
var errUsage = errors.New("usage")

// run runs the subcommand args name and returns the exit status.
func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		c.usage(c.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, rest, ok := lookup(args)
	if !ok {
		fmt.Fprintf(c.stderr, "densemem: unknown command %q\n\n", strings.Join(args[:min(2, len(args))], " "))
		c.usage(c.stderr)
		return exitUsage
	}
	err := cmd.run(c, ctx, rest)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(c.stderr, "densemem %s: %v\n", cmd.name, err)
		return exitUsage
	case errors.Is(err, errCasesFailed):
		fmt.Fprintf(c.stderr, "densemem %s: %v\n", cmd.name, err)
		return exitFailed
	}
	fmt.Fprintf(c.stderr, "densemem %s: %v\n", cmd.name, err)
	return exitFailed
}

// lookup finds the subcommand args names: one word, or a group's two.
func lookup(args []string) (command, []string, bool) {
	for _, cmd := range commands {
		words := strings.Fields(cmd.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmd.name {
			return cmd, args[len(words):], true
		}
	}
	return command{}, nil, false
}

// usage lists the subcommands.
func (c *cli) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: densemem <command> [flags]\n\nCommands:\n")
	width := 0
	for _, cmd := range commands {
		width = max(width, len(cmd.name))
	}
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, "\nEvery command reads the database URL from --database-url or %s.\n"+
		"Run \"densemem <command> --help\" for its flags.\n", envDatabaseURL)
}

// flags returns the flag set of a subcommand, writing its usage and errors to stderr, with the
// database URL flag every subcommand has.
func (c *cli) flags(name, argsUsage string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("densemem "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	url := fs.String("database-url", c.getenv(envDatabaseURL), "PostgreSQL URL of the Dense-Mem database (default $"+envDatabaseURL+")")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: densemem %s [flags] %s\n\n%s\n\nFlags:\n", name, argsUsage, summaryOf(name))
		fs.PrintDefaults()
	}
	return fs, url
}

// parse parses args into fs, wanting exactly positional positional arguments; a mistake is an
// errUsage.
func parse(fs *flag.FlagSet, args []string, positional int) ([]string, error) {
	// Flags may follow the positional arguments: parse, take one positional, parse again.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != positional {
		return nil, fmt.Errorf("%w: want %d argument(s), got %d (see --help)", errUsage, positional, len(pos))
	}
	return pos, nil
}

// summaryOf returns the help line of the subcommand name.
func summaryOf(name string) string {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd.summary
		}
	}
	return ""
}

// sub is one subcommand being set up: its flag set with the database URL flag, the flags it
// requires, and the reviewer's URL when it has one.
type sub struct {
	c        *cli
	fs       *flag.FlagSet
	url      *string
	reviewer *string
	need     map[string]*string
}

// sub starts the set-up of subcommand name, whose positional arguments argsUsage names.
func (c *cli) sub(name, argsUsage string) *sub {
	fs, url := c.flags(name, argsUsage)
	return &sub{c: c, fs: fs, url: url, need: map[string]*string{}}
}

// require defines a string flag the subcommand cannot run without.
func (s *sub) require(name, usage string) *string {
	v := s.fs.String(name, "", usage+" (required)")
	s.need[name] = v
	return v
}

// parse parses args, wanting positional arguments, and checks the required flags.
func (s *sub) parse(args []string, positional int) ([]string, error) {
	pos, err := parse(s.fs, args, positional)
	if err != nil {
		return nil, err
	}
	values := map[string]string{}
	for name, v := range s.need {
		values[name] = *v
	}
	return pos, required(values)
}

// open parses args as parse does and opens the client; done closes it.
func (s *sub) open(ctx context.Context, args []string, positional int) (pos []string, client *densemem.Client, done func(), err error) {
	if pos, err = s.parse(args, positional); err != nil {
		return nil, nil, nil, err
	}
	reviewer := ""
	if s.reviewer != nil {
		reviewer = *s.reviewer
	}
	client, done, err = s.c.client(ctx, *s.url, reviewer)
	return pos, client, done, err
}

// required checks that every named flag value is set.
func required(values map[string]string) error {
	var missing []string
	for name, v := range values {
		if strings.TrimSpace(v) == "" {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%w: %s required", errUsage, strings.Join(missing, ", "))
	}
	return nil
}

// client opens the database at url as a Client; reviewerURL, when set, is the reviewer role's
// connection the nightly review uses. The returned func closes what was opened.
func (c *cli) client(ctx context.Context, url, reviewerURL string) (*densemem.Client, func(), error) {
	if strings.TrimSpace(url) == "" {
		return nil, nil, fmt.Errorf("%w: no database: set --database-url or %s", errUsage, envDatabaseURL)
	}
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		return nil, nil, err
	}
	closers := []func(){st.Close}
	cfg := &densemem.Config{Clock: c.now, Logger: slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if reviewerURL != "" && reviewerURL != url {
		rst, err := postgres.Open(ctx, reviewerURL, nil)
		if err != nil {
			st.Close()
			return nil, nil, fmt.Errorf("reviewer database: %w", err)
		}
		cfg.Nightly.Store = rst
		closers = append(closers, rst.Close)
	}
	client, err := densemem.New(st, cfg)
	closeAll := func() {
		for _, f := range closers {
			f()
		}
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return client, closeAll, nil
}

// host is the host principal of team.
func host(team string) densemem.Principal { return densemem.HostPrincipal(densemem.TeamID(team)) }

// Command densemem is the operator's tool for a Dense-Mem database: migrate it, administer teams,
// profiles, predicates and policies as the host, run and inspect the nightly Conflict review and the
// review items, read a relationship's trace or a conflict case, serve the MCP adapter and the
// operator console.
//
//	densemem migrate up|down|redo|status|validate|version
//	densemem team create|list
//	densemem profile create|list|disable --team T ...
//	densemem predicate register|list --team T ...
//	densemem policy show|set --team T ...
//	densemem review run [--team T]... [--reviewer-database-url URL]
//	densemem review list --team T        (open and overdue conflict cases)
//	densemem review items --team T       (review items waiting for a profile's decision)
//	densemem case list --team T
//	densemem case --team T CONFLICT_ID
//	densemem trace --team T RELATIONSHIP_ID
//	densemem mcp --stdio --team T --profile P | --http ADDR --tokens FILE
//	densemem ui --tokens FILE [--http ADDR]   (the operator console, read-only)
//	densemem version
//
// Every subcommand reads the database URL from --database-url, else DENSEMEM_DATABASE_URL; without
// one it runs on a private PostgreSQL (package embedded) in the data directory --data names, else
// $DENSEMEM_DATA, else ~/.local/share/densemem, when nothing answers on 127.0.0.1:5432 (a server
// there is never picked by itself), saying so in one line on stderr. Every subcommand prints
// its flags with --help (a group's word alone, "densemem migrate --help", lists its subcommands) and
// prints JSON with --json (durations as Go duration strings, e.g. "168h0m0s"). Passwords of database
// URLs are never printed: help shows no URL, and errors and logs show "xxxxx" in its place.
//
// Exit statuses: 0 success; 1 the command failed (for review run, also when cases failed; for
// migrate validate, when migrations are pending); 2 the command line was wrong.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/embedded"
	"github.com/densemem/densemem/store/postgres"
)

// Environment variables the command reads.
const (
	envDatabaseURL         = "DENSEMEM_DATABASE_URL"
	envReviewerDatabaseURL = "DENSEMEM_REVIEWER_DATABASE_URL"
	envBindingKey          = "DENSEMEM_BINDING_KEY"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and failed (or, for review run, cases failed)
	exitUsage  = 2 // the command line was wrong
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := (&cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}).run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// cli is one invocation's surroundings: where it reads and writes, the environment it reads and its
// clock (nil: the wall clock; tests inject one).
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// asJSON is the subcommand's --json.
	asJSON bool
	// bindingKey is the subcommand's --binding-key (hex), else $DENSEMEM_BINDING_KEY.
	bindingKey string
	// data is the subcommand's --data.
	data *string
	// localServer reports whether a PostgreSQL answers on 127.0.0.1:5432 (nil: try to connect).
	localServer func(context.Context) bool
	// stopPrivate stops the private server the subcommand started, if any.
	stopPrivate func() error
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
		{"migrate up", "apply pending migrations, a line each (--to N, --dry-run, --show-sql)", (*cli).migrateUp},
		{"migrate down", "roll back the newest migration (--to N: every one above N)", (*cli).migrateDown},
		{"migrate redo", "roll back the newest migration and apply it again", (*cli).migrateRedo},
		{"migrate status", "list the migrations and whether each is applied (changes nothing)", (*cli).migrateStatus},
		{"migrate validate", "exit 1 unless the database has exactly this build's migrations", (*cli).migrateValidate},
		{"migrate version", "print the database's migration version and this build's", (*cli).migrateVersion},
		{"migrate binding-key", "print the database's binding key in hex (--rotate: add a new one first; --retire-old: drop the older ones; as the owner)", (*cli).migrateBindingKey},
		{"team create", "create a team (prints its ID)", (*cli).teamCreate},
		{"team list", "list the teams", (*cli).teamList},
		{"profile create", "create a profile in a team (prints its ID)", (*cli).profileCreate},
		{"profile list", "list a team's profiles with their status and scopes", (*cli).profileList},
		{"profile disable", "disable a profile", (*cli).profileDisable},
		{"predicate register", "register a new version of a predicate", (*cli).predicateRegister},
		{"predicate list", "list a team's predicates (the latest version of each)", (*cli).predicateList},
		{"policy show", "show a team's policy in force", (*cli).policyShow},
		{"policy set", "change a team's policy: only the flags given change", (*cli).policySet},
		{"review run", "run one nightly review pass over every due team now (as the reviewer role)", (*cli).reviewRun},
		{"review list", "list a team's open and overdue conflict cases, overdue first", (*cli).reviewList},
		{"review items", "list the review items waiting for a profile's decision", (*cli).reviewItems},
		{"case list", "list a team's conflict cases (--status: open, overdue, resolved, dismissed)", (*cli).caseList},
		{"case", "show a conflict case with its positions and events", (*cli).showCase},
		{"trace", "show a relationship's lineage", (*cli).trace},
		{"mcp", "serve the MCP adapter (stdio for one principal, or HTTP with bearer tokens)", (*cli).mcp},
		{"ui", "serve the read-only operator console on --http for the principals of a token file", (*cli).ui},
		{"version", "print this build's version and the migration it needs", (*cli).version},
	}
}

// errUsage marks a command-line mistake: the message is printed with the subcommand's usage.
var errUsage = errors.New("usage")

// run runs the subcommand args name and returns the exit status. Everything it writes passes through
// a redactor that replaces the passwords of the database URLs it was given.
func (c *cli) run(ctx context.Context, args []string) int {
	secrets := passwords(c.getenv(envDatabaseURL), c.getenv(envReviewerDatabaseURL))
	secrets = append(secrets, passwords(flagValues(args, "database-url", "reviewer-database-url")...)...)
	c.stdout, c.stderr = redactor(c.stdout, secrets), redactor(c.stderr, secrets)
	if c.stdin == nil {
		c.stdin = strings.NewReader("")
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := c.stdout
		if len(args) == 0 {
			w = c.stderr
		}
		c.usage(w, "")
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, rest, ok := lookup(args)
	if !ok {
		if group := groupOf(args[0]); group != "" {
			// A group's word alone, or with --help: its subcommands.
			if len(args) > 1 && (args[1] == "-h" || args[1] == "--help" || args[1] == "help") {
				c.usage(c.stdout, group)
				return exitOK
			}
			if len(args) > 1 {
				fmt.Fprintf(c.stderr, "densemem: unknown command %q\n\n", group+" "+args[1])
			}
			c.usage(c.stderr, group)
			return exitUsage
		}
		fmt.Fprintf(c.stderr, "densemem: unknown command %q\n\n", args[0])
		c.usage(c.stderr, "")
		return exitUsage
	}
	err := cmd.run(c, ctx, rest)
	if c.stopPrivate != nil {
		if stopErr := c.stopPrivate(); stopErr != nil && err == nil {
			err = stopErr
		}
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(c.stderr, "densemem %s: %v\n", cmd.name, err)
		return exitUsage
	case errors.Is(err, errCasesFailed), errors.Is(err, errPending):
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

// groupOf returns word when it is the first word of a group of subcommands ("migrate"), else "".
func groupOf(word string) string {
	for _, cmd := range commands {
		if first, _, ok := strings.Cut(cmd.name, " "); ok && first == word {
			return word
		}
	}
	return ""
}

// usage lists the subcommands, or those of group.
func (c *cli) usage(w io.Writer, group string) {
	if group == "" {
		fmt.Fprintf(w, "Usage: densemem <command> [flags]\n\nCommands:\n")
	} else {
		fmt.Fprintf(w, "Usage: densemem %s <command> [flags]\n\nCommands:\n", group)
	}
	width := 0
	for _, cmd := range commands {
		width = max(width, len(cmd.name))
	}
	for _, cmd := range commands {
		if group == "" || strings.HasPrefix(cmd.name, group+" ") {
			fmt.Fprintf(w, "  %-*s  %s\n", width, cmd.name, cmd.summary)
		}
	}
	fmt.Fprintf(w, "\nEvery command reads the database URL from --database-url or $%s (without one: a private\n"+
		"PostgreSQL in --data DIR), and prints JSON with --json.\n"+
		"Run \"densemem <command> --help\" for its flags. Exit status: 0 success, 1 failure, 2 a wrong command line.\n",
		envDatabaseURL)
}

// flags returns the flag set of a subcommand, writing its usage and errors to stderr, with the
// database URL and --json flags every subcommand has. The URL flag has no default in the flag set,
// so help never prints it: resolve it with c.databaseURL.
func (c *cli) flags(name, argsUsage string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("densemem "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	url := fs.String("database-url", "", "PostgreSQL URL of the Dense-Mem database (default $"+envDatabaseURL+")")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	fs.StringVar(&c.bindingKey, "binding-key", "", "the database's binding key, in hex, which the runtime and reviewer roles "+
		"need (default $"+envBindingKey+"; `densemem migrate binding-key` prints it)")
	c.data = fs.String("data", "", "without a database URL: the data directory of a private PostgreSQL, started for the "+
		"command (default $"+embedded.EnvDataDir+", else ~/.local/share/densemem, unless a server answers on 127.0.0.1:5432)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: densemem %s [flags] %s\n\n%s\n\nFlags:\n", name, argsUsage, summaryOf(name))
		fs.PrintDefaults()
	}
	return fs, url
}

// databaseURL is the URL flag's value, else the environment's unless --data is given.
func (c *cli) databaseURL(flagValue string) string {
	if strings.TrimSpace(flagValue) != "" {
		return flagValue
	}
	if c.data != nil && strings.TrimSpace(*c.data) != "" {
		return ""
	}
	return c.getenv(envDatabaseURL)
}

// privateDir is the data directory of the private server a subcommand without a database URL runs
// on: --data, else $DENSEMEM_DATA, else embedded.DefaultDir unless a server answers on
// 127.0.0.1:5432 (the user has a server: the command asks which database rather than start another).
func (c *cli) privateDir(ctx context.Context) (string, error) {
	if c.data != nil && strings.TrimSpace(*c.data) != "" {
		return *c.data, nil
	}
	if d := c.getenv(embedded.EnvDataDir); d != "" {
		return d, nil
	}
	answers := c.localServer
	if answers == nil {
		answers = localServerAnswers
	}
	if answers(ctx) {
		return "", fmt.Errorf("%w: no database: set --database-url or %s (a PostgreSQL answers on 127.0.0.1:5432: "+
			"name the database on it), or pass --data DIR for a private PostgreSQL", errUsage, envDatabaseURL)
	}
	return embedded.DefaultDir()
}

// localServerAnswers reports whether a PostgreSQL answers on 127.0.0.1:5432 within two seconds.
func localServerAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:5432")
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// announce says in one line on stderr which private server the command runs on.
func (c *cli) announce(dir string) {
	what := "using the private PostgreSQL in " + dir
	if _, err := os.Stat(filepath.Join(dir, "pgdata")); err != nil {
		what = "preparing a private PostgreSQL in " + dir + " (first run: initdb, a few seconds)"
	}
	fmt.Fprintf(c.stderr, "densemem: no database URL: %s\n", what)
}

// openPrivate starts the private server, migrates its database and opens the runtime and reviewer
// roles' stores; run stops it when the subcommand ends.
func (c *cli) openPrivate(ctx context.Context) (*embedded.DB, error) {
	dir, err := c.privateDir(ctx)
	if err != nil {
		return nil, err
	}
	c.announce(dir)
	db, err := embedded.Open(ctx, dir, nil)
	if err != nil {
		return nil, err
	}
	c.stopPrivate = db.Close
	return db, nil
}

// startPrivate starts the private server without migrating, for the migrate subcommands, and
// returns the superuser's URL of its database; run stops it when the subcommand ends.
func (c *cli) startPrivate(ctx context.Context) (string, error) {
	dir, err := c.privateDir(ctx)
	if err != nil {
		return "", err
	}
	c.announce(dir)
	srv, err := embedded.Start(ctx, dir, nil)
	if err != nil {
		return "", err
	}
	c.stopPrivate = srv.Stop
	if err := srv.CreateDatabase(ctx, embedded.Database); err != nil {
		return "", err
	}
	return srv.OwnerURL(), nil
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

// parse parses args, wanting positional arguments, and checks the required flags; the URL flags take
// the environment's value when not given.
func (s *sub) parse(args []string, positional int) ([]string, error) {
	pos, err := parse(s.fs, args, positional)
	if err != nil {
		return nil, err
	}
	*s.url = s.c.databaseURL(*s.url)
	if s.reviewer != nil && strings.TrimSpace(*s.reviewer) == "" {
		*s.reviewer = s.c.getenv(envReviewerDatabaseURL)
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
		db, err := c.openPrivate(ctx)
		if err != nil {
			return nil, nil, err
		}
		client, err := densemem.New(db.Store, &densemem.Config{Clock: c.now, Logger: c.logger(),
			Nightly: densemem.NightlyConfig{Store: db.ReviewStore}})
		if err != nil {
			return nil, nil, err
		}
		return client, func() {}, nil // run stops the server
	}
	opts, err := c.storeOptions()
	if err != nil {
		return nil, nil, err
	}
	st, err := postgres.Open(ctx, url, opts)
	if err != nil {
		return nil, nil, err
	}
	closers := []func(){st.Close}
	cfg := &densemem.Config{Clock: c.now, Logger: c.logger()}
	if reviewerURL != "" && reviewerURL != url {
		rst, err := postgres.Open(ctx, reviewerURL, opts)
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

// storeOptions are the stores' options: the binding key of --binding-key, else the environment's.
func (c *cli) storeOptions() (*postgres.Options, error) {
	h := strings.TrimSpace(c.bindingKey)
	if h == "" {
		h = strings.TrimSpace(c.getenv(envBindingKey))
	}
	if h == "" {
		return nil, nil
	}
	key, err := hex.DecodeString(h)
	if err != nil || len(key) < 16 || len(key) > 64 {
		return nil, fmt.Errorf("%w: --binding-key (or %s) must be 16 to 64 bytes in hex", errUsage, envBindingKey)
	}
	return &postgres.Options{BindingKey: key}, nil
}

// logger logs warnings and errors to stderr (through the redactor).
func (c *cli) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// print prints v as JSON with --json, else calls human.
func (c *cli) print(v any, human func()) error {
	if c.asJSON {
		return c.printJSON(v)
	}
	human()
	return nil
}

// host is the host principal of team.
func host(team string) densemem.Principal { return densemem.HostPrincipal(densemem.TeamID(team)) }

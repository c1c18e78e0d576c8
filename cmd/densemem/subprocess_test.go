package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/console"
	"github.com/densemem/densemem/internal/testbin"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/mcpserver"
	"github.com/densemem/densemem/migrations"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// binaryPath builds the command once and returns its path.
func binaryPath(t *testing.T) string {
	return testbin.Path(t, "github.com/densemem/densemem/cmd/densemem")
}

// proc runs the built command as a subprocess with one database URL in its environment.
type proc struct {
	t   *testing.T
	url string
	ran map[string]bool // the subcommands run
}

// run runs args with stdin and returns stdout, stderr and the exit status.
func (p *proc) run(stdin string, args ...string) (string, string, int) {
	p.t.Helper()
	cmd := exec.Command(binaryPath(p.t), args...)
	cmd.Env = append(os.Environ(), envDatabaseURL+"="+p.url, envReviewerDatabaseURL+"=")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	if c, _, ok := lookup(args); ok {
		p.ran[c.name] = true
	}
	return out.String(), errOut.String(), code
}

// want runs args and fails unless it exits with code and its stdout holds every want.
func (p *proc) want(code int, args []string, wants ...string) string {
	p.t.Helper()
	out, errOut, got := p.run("", args...)
	if got != code {
		p.t.Errorf("densemem %s: exit %d, want %d\n%s%s", strings.Join(args, " "), got, code, out, errOut)
	}
	for _, w := range wants {
		if !strings.Contains(out+errOut, w) {
			p.t.Errorf("densemem %s: output lacks %q:\n%s%s", strings.Join(args, " "), w, out, errOut)
		}
	}
	return out
}

// jsonOf runs args with --json and decodes its output.
func (p *proc) jsonOf(v any, args ...string) {
	p.t.Helper()
	out := p.want(exitOK, append(args, "--json"))
	if err := json.Unmarshal([]byte(out), v); err != nil {
		p.t.Fatalf("densemem %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// urlOf is the URL of pool's database, as user (the pool's when empty).
func urlOf(pool *pgxpool.Pool, user string) string {
	cc := pool.Config().ConnConfig
	if user == "" {
		user = cc.User
	}
	u := url.URL{Scheme: "postgres", User: url.User(user), Host: fmt.Sprintf("%s:%d", cc.Host, cc.Port), Path: "/" + cc.Database,
		RawQuery: "sslmode=disable"}
	return u.String()
}

// TestEverySubcommandAsASubprocess runs the built command as an operator would, every subcommand
// of the table at least once, on a fresh database and on a migrated one with a live case.
func TestEverySubcommandAsASubprocess(t *testing.T) {
	t.Parallel()
	ran := map[string]bool{}
	latest := fmt.Sprint(migrations.Latest())

	// A fresh database: status changes nothing, validate fails, up --dry-run lists, up applies a line
	// each, down, redo, version.
	fresh := &proc{t: t, url: urlOf(testdb.NewEmpty(t), ""), ran: ran}
	fresh.want(exitOK, []string{"version"}, "densemem ", "migrations 1.."+latest)
	status := fresh.want(exitOK, []string{"migrate", "status"}, "00001_foundation.sql", "00006_name_keys.go")
	all := fmt.Sprintf("\n%d pending\n", strings.Count(status, "  pending\n"))
	if !strings.HasSuffix(status, all) {
		t.Errorf("migrate status on a fresh database: want every migration pending (%q)\n%s", all, status)
	}
	fresh.want(exitOK, []string{"migrate", "status"}, all) // status created nothing
	fresh.want(exitFailed, []string{"migrate", "validate"}, "pending", "densemem migrate up")
	fresh.want(exitOK, []string{"migrate", "up", "--dry-run", "--show-sql", "--to", "1"}, "would up   00001_foundation.sql",
		"-- +goose Up", "schema at migration 0")
	fresh.want(exitOK, []string{"migrate", "up"}, "OK   up   00001_foundation.sql", "OK   up   00009_roles.go",
		"schema at migration "+latest)
	fresh.want(exitOK, []string{"migrate", "validate"}, "as this build needs")
	fresh.want(exitOK, []string{"migrate", "down"}, "OK   down", "schema at migration")
	fresh.want(exitFailed, []string{"migrate", "validate"}, "1 migration(s) pending")
	fresh.want(exitOK, []string{"migrate", "up"}, "schema at migration "+latest)
	fresh.want(exitOK, []string{"migrate", "redo"}, "OK   down", "OK   up", "schema at migration "+latest)
	var v struct{ Version, Latest int64 }
	fresh.jsonOf(&v, "migrate", "version")
	if v.Version != migrations.Latest() || v.Latest != migrations.Latest() {
		t.Errorf("migrate version --json: %+v", v)
	}
	var key, rotated struct {
		BindingKey string `json:"binding_key"`
	}
	fresh.jsonOf(&key, "migrate", "binding-key")
	fresh.jsonOf(&rotated, "migrate", "binding-key", "--rotate")
	fresh.want(exitOK, []string{"migrate", "binding-key", "--retire-old"}, rotated.BindingKey)
	if len(key.BindingKey) != 64 || len(rotated.BindingKey) != 64 || key.BindingKey == rotated.BindingKey {
		t.Errorf("migrate binding-key: %q, then --rotate: %q; want two 32-byte keys in hex", key.BindingKey, rotated.BindingKey)
	}

	// Administration on the migrated database, as the owner (a superuser here).
	h := newHarness(t)
	p := &proc{t: t, url: h.url, ran: ran}
	var team struct {
		TeamID string `json:"team_id"`
	}
	p.jsonOf(&team, "team", "create", "--name", "ops")
	p.want(exitOK, []string{"team", "list"}, team.TeamID, "ops")
	var prof struct {
		ProfileID string `json:"profile_id"`
	}
	p.jsonOf(&prof, "profile", "create", "--team", team.TeamID, "--name", "dana", "--scopes", "read,write")
	p.want(exitOK, []string{"profile", "list", "--team", team.TeamID}, prof.ProfileID, "dana", "active", "read,write")
	p.want(exitOK, []string{"predicate", "register", "--team", team.TeamID, "--key", "owns", "--cardinality", "many"}, "owns v1")
	p.want(exitOK, []string{"predicate", "list", "--team", team.TeamID}, "owns", "many")
	var pol policyView
	p.jsonOf(&pol, "policy", "show", "--team", team.TeamID)
	if pol.ReviewTTL != "168h0m0s" {
		t.Errorf("policy show --json: review_ttl %q, want a duration string", pol.ReviewTTL)
	}
	p.want(exitOK, []string{"policy", "set", "--team", team.TeamID, "--time-zone", "Europe/Berlin"}, "Europe/Berlin")
	p.want(exitOK, []string{"policy", "set", "--team", team.TeamID, "--auto-write-threshold", "0.8", "--review-ttl", "48h"})
	p.jsonOf(&pol, "policy", "show", "--team", team.TeamID)
	if pol.TimeZone != "Europe/Berlin" || pol.AutoWriteThreshold != 0.8 || pol.ReviewTTL != "48h0m0s" || pol.Version != 3 {
		t.Errorf("after two partial policy sets: %+v; want Europe/Berlin kept, 0.8, 48h, version 3", pol)
	}
	p.want(exitOK, []string{"profile", "disable", "--team", team.TeamID, "--profile", prof.ProfileID}, "disabled")
	p.want(exitOK, []string{"mcp", "--hash-token", "t0k3n"}, mcpserver.HashToken("t0k3n"))

	// A live case, told through the library; the nightly review as the runtime role names the fix.
	caseTeam, a1, conflictID := h.staleTeam()
	p.want(exitOK, []string{"review", "list", "--team", caseTeam}, conflictID)
	p.want(exitOK, []string{"case", "list", "--team", caseTeam, "--status", "open"}, conflictID)
	p.want(exitOK, []string{"case", "--team", caseTeam, conflictID}, "question:")
	p.want(exitOK, []string{"trace", "--team", caseTeam, a1}, "relationship "+a1)
	p.want(exitOK, []string{"review", "items", "--team", caseTeam}, "no open review items")
	runtime := &proc{t: t, url: strings.Replace(h.url, "postgres@", migrations.DefaultRuntimeRole+"@", 1), ran: ran}
	_, errOut, code := runtime.run("", "review", "run")
	if code != exitFailed || !strings.Contains(errOut, "--reviewer-database-url") {
		t.Errorf("review run as the runtime role: exit %d, %q; want 1 naming --reviewer-database-url", code, errOut)
	}
	p.want(exitOK, []string{"review", "run", "--json"}, `"teams"`)

	// mcp --stdio as a profile of the team: initialize over a pipe, then end of input.
	profiles := p.want(exitOK, []string{"profile", "list", "--team", caseTeam, "--json"})
	var list struct {
		Profiles []struct {
			ProfileID string `json:"profile_id"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(profiles), &list); err != nil || len(list.Profiles) == 0 {
		t.Fatalf("profile list --json: %v\n%s", err, profiles)
	}
	mcp := exec.Command(binaryPath(t), "mcp", "--stdio", "--team", caseTeam, "--profile", list.Profiles[0].ProfileID)
	mcp.Env = append(os.Environ(), envDatabaseURL+"="+p.url)
	stdin, err := mcp.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := mcp.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mcp.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	_ = stdin.Close() // end of input ends the server
	if werr := mcp.Wait(); err != nil || werr != nil || !strings.Contains(line, `"serverInfo"`) {
		t.Errorf("mcp --stdio: %q, %v, exit %v", line, err, werr)
	}
	ran["mcp"] = true

	p.want(exitOK, []string{"ui", "--hash-token", "t0k3n"}, console.HashToken("t0k3n"))
	serveConsole(t, p.url, caseTeam, conflictID)

	for _, cmd := range commands {
		if !ran[cmd.name] {
			t.Errorf("densemem %s was never run as a subprocess", cmd.name)
		}
	}
}

// serveConsole runs `densemem ui` for team's host token on a free port, reads the case's page with
// the token and without it (401), then interrupts the server.
func serveConsole(t *testing.T, dbURL, team, conflictID string) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	entry := fmt.Sprintf(`[{"token_sha256": %q, "team_id": %q, "host": true}]`, console.HashToken("ui-secret"), team)
	if err := os.WriteFile(tokens, []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	ui := exec.CommandContext(t.Context(), binaryPath(t), "ui", "--http", "127.0.0.1:0", "--tokens", tokens)
	ui.Env = append(os.Environ(), envDatabaseURL+"="+dbURL)
	ui.Cancel = func() error { return ui.Process.Signal(os.Interrupt) }
	stderr, err := ui.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ui.Process.Signal(os.Interrupt); _ = ui.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "densemem ui: serving on ")
	if err != nil || !ok {
		t.Fatalf("densemem ui: first line %q, %v", line, err)
	}
	for token, want := range map[string]int{"ui-secret": http.StatusOK, "": http.StatusUnauthorized} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, addr+"/cases/"+conflictID, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want || (want == http.StatusOK && !strings.Contains(string(body), conflictID)) {
			t.Errorf("densemem ui: GET /cases/%s with token %q: %d, want %d\n%s", conflictID, token, res.StatusCode, want, body)
		}
	}
}

// TestHelpAndSecrets: a group's word lists its subcommands; help and errors never print a database
// URL's password.
func TestHelpAndSecrets(t *testing.T) {
	t.Parallel()
	const secret = "Sup3r-s3cret"
	p := &proc{t: t, url: "postgres://densemem_owner:" + secret + "@127.0.0.1:1/app?connect_timeout=5", ran: map[string]bool{}}
	for _, group := range []string{"migrate", "review", "team", "profile", "predicate", "policy"} {
		out, _, code := p.run("", group, "--help")
		if code != exitOK || !strings.Contains(out, "Usage: densemem "+group+" <command>") || !strings.Contains(out, group+" ") {
			t.Errorf("%s --help: exit %d\n%s", group, code, out)
		}
	}
	if _, errOut, code := p.run("", "migrate"); code != exitUsage || !strings.Contains(errOut, "migrate status") {
		t.Errorf("migrate alone: exit %d, %q; want 2 and the group's commands", code, errOut)
	}
	if _, errOut, code := p.run("", "migrate", "sideways"); code != exitUsage || !strings.Contains(errOut, `unknown command "migrate sideways"`) {
		t.Errorf("migrate sideways: exit %d, %q", code, errOut)
	}
	for _, args := range [][]string{
		{"team", "create", "--help"},
		{"team", "create", "--name", "x"},
		{"team", "create", "--name", "x", "--database-url", "postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=5"},
		{"team", "create", "--bogus"},
		{"review", "run", "--reviewer-database-url=postgres://r:" + secret + "@127.0.0.1:1/db?connect_timeout=5"},
		{"migrate", "status"},
	} {
		out, errOut, code := p.run("", args...)
		if code == exitOK && args[len(args)-1] != "--help" {
			t.Errorf("%v: exit 0 without a database", args)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%v printed the password:\n%s%s", args, out, errOut)
		}
	}
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/densemem/densemem/embedded"
	"github.com/densemem/densemem/migrations"
)

// TestPrivateServerAsASubprocess runs the built command with no database URL on a private server:
// --data DIR creates a team and a profile, they persist into the next invocations (each starts and
// stops the server), $DENSEMEM_DATA names the same directory, migrate status sees every migration
// applied, and mcp --stdio --data DIR serves an agent. Each invocation says in one line on stderr
// what it did and where the data lives.
func TestPrivateServerAsASubprocess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(env []string, stdin string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(binaryPath(t), args...)
		cmd.Env = append(os.Environ(), append([]string{envDatabaseURL + "=", envReviewerDatabaseURL + "=", embedded.EnvDataDir + "="}, env...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("densemem %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	team, errOut := run(nil, "", "team", "create", "--data", dir, "--name", "acme")
	team = strings.TrimSpace(team)
	if want := "densemem: no database URL: preparing a private PostgreSQL in " + dir; !strings.Contains(errOut, want) {
		t.Errorf("the first run says %q, want %q", errOut, want)
	}
	profile, errOut := run(nil, "", "profile", "create", "--data", dir, "--team", team, "--name", "agent")
	profile = strings.TrimSpace(profile)
	if want := "densemem: no database URL: using the private PostgreSQL in " + dir + "\n"; errOut != want {
		t.Errorf("a later run says %q, want %q", errOut, want)
	}
	if out, _ := run([]string{embedded.EnvDataDir + "=" + dir}, "", "team", "list"); !strings.Contains(out, team) {
		t.Errorf("team list with %s=%s lacks %s:\n%s", embedded.EnvDataDir, dir, team, out)
	}
	if out, _ := run(nil, "", "migrate", "version", "--data", dir); !strings.HasPrefix(out, fmt.Sprintf("%d ", migrations.Latest())) {
		t.Errorf("migrate version on the private server: %q, want version %d", out, migrations.Latest())
	}

	mcp := exec.Command(binaryPath(t), "mcp", "--stdio", "--data", dir, "--team", team, "--profile", profile)
	mcp.Env = append(os.Environ(), envDatabaseURL+"=", embedded.EnvDataDir+"=")
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
	_ = stdin.Close() // end of input ends the server, and the command stops the private PostgreSQL
	if werr := mcp.Wait(); err != nil || werr != nil || !strings.Contains(line, `"serverInfo"`) {
		t.Errorf("mcp --stdio --data: %q, %v, exit %v", line, err, werr)
	}
}

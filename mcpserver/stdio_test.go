package mcpserver_test

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testbin"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// densememBinary builds cmd/densemem once and returns its path.
func densememBinary(t *testing.T) string {
	return testbin.Path(t, "github.com/densemem/densemem/cmd/densemem")
}

// dsnOf is the URL of pool's database as its user, as a host would configure it.
func dsnOf(pool *pgxpool.Pool) string {
	cc := pool.Config().ConnConfig
	dsn := url.URL{Scheme: "postgres", User: url.User(cc.User), Host: fmt.Sprintf("%s:%d", cc.Host, cc.Port), Path: "/" + cc.Database,
		RawQuery: "sslmode=disable&search_path=public"}
	return dsn.String()
}

// A server that cannot start answers the MCP client's initialize with an error naming the fix (the
// client shows it), instead of exiting before the client can speak; a password in the URL is never
// shown.
func TestStdioStartupFailuresReachTheClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bin := densememBinary(t)
	empty := testdb.NewEmpty(t)
	for _, tc := range []struct {
		name string
		dsn  string
		args []string
		want []string
	}{
		{"no server", "postgres://densemem_runtime:s3cret-pw@127.0.0.1:1/app?sslmode=disable&connect_timeout=5",
			[]string{"--team", string(f.team), "--profile", string(f.A.ProfileID)},
			[]string{"Dense-Mem could not start", "is PostgreSQL running", "DENSEMEM_DATABASE_URL"}},
		{"no --team", dsnOf(f.db.Runtime), []string{"--profile", string(f.A.ProfileID)},
			[]string{"--team required", "to the server's args"}},
		{"no database URL", "", []string{"--team", string(f.team), "--profile", string(f.A.ProfileID)},
			[]string{"no database", "DENSEMEM_DATABASE_URL"}},
		{"an unknown profile", dsnOf(f.db.Runtime), []string{"--team", string(f.team), "--profile", "pf_nobody"},
			[]string{"has no profile \"pf_nobody\"", "densemem profile list"}},
		{"an unmigrated database", dsnOf(empty), []string{"--team", string(f.team), "--profile", string(f.A.ProfileID)},
			[]string{"not migrated", "densemem migrate up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"mcp", "--stdio"}, tc.args...)...)
			cmd.Env = append(os.Environ(), "DENSEMEM_DATABASE_URL="+tc.dsn, "DENSEMEM_BINDING_KEY="+hex.EncodeToString(f.db.BindingKey))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
			if err == nil {
				_ = cs.Close()
				t.Fatal("the client connected to a server that could not start")
			}
			mustContain(t, "the initialize error", err.Error(), tc.want...)
			if strings.Contains(err.Error()+stderr.String(), "s3cret-pw") {
				t.Errorf("the password was shown: %v\n%s", err, stderr.String())
			}
		})
	}
}

// The stdio server, "densemem mcp --stdio" built with go build and started as a subprocess, and
// driven by the SDK's client: tools/list returns the seven tools with their schemas, and one remember
// and one recall_memory work as the process's profile.
func TestStdioSubprocess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bin := densememBinary(t)
	cmd := exec.Command(bin, "mcp", "--stdio", "--team", string(f.A.TeamID), "--profile", string(f.A.ProfileID))
	cmd.Env = append(os.Environ(), "DENSEMEM_DATABASE_URL="+dsnOf(f.db.Runtime),
		"DENSEMEM_BINDING_KEY="+hex.EncodeToString(f.db.BindingKey))
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		checkTool(t, tool)
	}
	slices.Sort(names)
	if !slices.Equal(names, mcpserver.ToolNames()) {
		t.Errorf("tools %v, want %v", names, mcpserver.ToolNames())
	}
	out := onlyOutcome(t, call[densemem.Placement](t, cs, mcpserver.ToolRemember,
		deployment("Production deploys from main.", "main", nil, nil)).out)
	if out.Category != densemem.CategoryAccepted {
		t.Errorf("remember over stdio: %s (%s), want accepted", out.Category, out.Reason)
	}
	rec := call[densemem.RecallResponse](t, cs, mcpserver.ToolRecall, densemem.RecallRequest{Query: "production deploys from"})
	if len(rec.out.Results) != 1 || rec.out.Results[0].Relationship.RelationshipID != out.RelationshipID ||
		rec.out.Results[0].Relationship.OwnerProfileID != f.A.ProfileID {
		t.Errorf("recall over stdio: %+v, want the remembered relationship, owned by A", rec.out.Results)
	}
}

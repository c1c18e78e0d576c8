package mcpserver_test

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio server, "densemem mcp --stdio" built with go build and started as a subprocess, and
// driven by the SDK's client: tools/list returns the seven tools with their schemas, and one remember
// and one recall_memory work as the process's profile.
func TestStdioSubprocess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bin := filepath.Join(t.TempDir(), "densemem")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/densemem/densemem/cmd/densemem")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cc := f.db.Runtime.Config().ConnConfig
	dsn := url.URL{Scheme: "postgres", User: url.User(cc.User), Host: fmt.Sprintf("%s:%d", cc.Host, cc.Port), Path: "/" + cc.Database,
		RawQuery: "sslmode=disable&search_path=public"}
	cmd := exec.Command(bin, "mcp", "--stdio", "--team", string(f.A.TeamID), "--profile", string(f.A.ProfileID))
	cmd.Env = append(os.Environ(), "DENSEMEM_DATABASE_URL="+dsn.String())
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

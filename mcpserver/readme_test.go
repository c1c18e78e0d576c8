package mcpserver_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/densemem/densemem/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readmeServer is one server of an MCP client configuration in the README.
type readmeServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// header sets one header on every request.
type header struct {
	name, value string
	next        http.RoundTripper
}

func (h header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

// The README's MCP client configurations work: each parses, the stdio one starts the real command
// with its arguments and connects, and the HTTP ones reach a server with the URL path and the header
// they configure (the mcp-remote bridge itself is not run: its URL and header are).
func TestReadmeMCPConfigurations(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Use it from an AI agent (MCP)\n")
	if !ok {
		t.Fatal("README.md has no MCP section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	f := newFixture(t)
	fill := func(s string) string {
		return strings.NewReplacer("TEAM_ID", string(f.team), "PROFILE_ID", string(f.A.ProfileID)).Replace(s)
	}
	srv, _ := tokenServer(t, f, "TOKEN", nil)
	// httpClient connects to the test server at the configured URL's path, with one header.
	httpClient := func(t *testing.T, endpoint, name, value string) *mcp.ClientSession {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host != "127.0.0.1:8080" {
			t.Fatalf("URL %q: %v; want one on the documented address", endpoint, err)
		}
		tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + u.Path, HTTPClient: &http.Client{Transport: header{name, value, http.DefaultTransport}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme"}, nil).Connect(t.Context(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	kinds := map[string]int{}
	for _, block := range strings.Split(section, "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.HasPrefix(strings.TrimSpace(block), "[") {
			kinds["token file"]++
			var entries []map[string]string
			if err := json.Unmarshal([]byte(block), &entries); err != nil || len(entries) != 1 {
				t.Fatalf("the token file example: %v", err)
			}
			entries[0]["token_sha256"] = mcpserver.HashToken("TOKEN")
			b, _ := json.Marshal(entries)
			if _, err := mcpserver.ParseTokens([]byte(fill(string(b)))); err != nil {
				t.Errorf("the token file example: %v", err)
			}
			continue
		}
		var cfg struct {
			MCPServers map[string]readmeServer `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(block), &cfg); err != nil || len(cfg.MCPServers) != 1 {
			t.Fatalf("a configuration does not parse as one server: %v\n%s", err, block)
		}
		s := cfg.MCPServers["dense-mem"]
		var cs *mcp.ClientSession
		switch {
		case s.Command == "densemem" && slices.Contains(s.Args, "--data"):
			// A private PostgreSQL: the README's set-up commands make the team and the profile in it.
			kinds["stdio private"]++
			dir := t.TempDir()
			args := strings.Fields(strings.NewReplacer("DATA_DIR", dir).Replace(strings.Join(s.Args, " ")))
			team := privateCLI(t, dir, "team", "create", "--data", dir, "--name", "acme")
			profile := privateCLI(t, dir, "profile", "create", "--data", dir, "--team", team, "--name", "agent")
			args = strings.Fields(strings.NewReplacer("TEAM_ID", team, "PROFILE_ID", profile).Replace(strings.Join(args, " ")))
			cmd := exec.Command(densememBinary(t), args...)
			cmd.Env = append(os.Environ(), "DENSEMEM_DATABASE_URL=", "DENSEMEM_DATA=")
			if cs, err = mcp.NewClient(&mcp.Implementation{Name: "readme"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil); err != nil {
				t.Fatalf("the stdio configuration on a private server: %v", err)
			}
		case s.Command == "densemem":
			kinds["stdio"]++
			u, err := url.Parse(s.Env["DENSEMEM_DATABASE_URL"])
			if err != nil || u.User.Username() != "densemem_runtime" {
				t.Errorf("the stdio configuration's database URL %q: %v; want the runtime role's", s.Env["DENSEMEM_DATABASE_URL"], err)
			}
			args := strings.Fields(fill(strings.Join(s.Args, " ")))
			cmd := exec.Command(densememBinary(t), args...)
			cmd.Env = append(os.Environ(), "DENSEMEM_DATABASE_URL="+dsnOf(f.db.Runtime),
				"DENSEMEM_BINDING_KEY="+hex.EncodeToString(f.db.BindingKey))
			if cs, err = mcp.NewClient(&mcp.Implementation{Name: "readme"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil); err != nil {
				t.Fatalf("the stdio configuration: %v", err)
			}
		case s.URL != "":
			kinds["http"]++
			cs = httpClient(t, s.URL, "Authorization", s.Headers["Authorization"])
		case s.Command == "npx":
			kinds["mcp-remote"]++
			var endpoint, hdr string
			for i, a := range s.Args {
				if strings.HasPrefix(a, "http") {
					endpoint = a
				}
				if a == "--header" && i+1 < len(s.Args) {
					hdr = os.Expand(s.Args[i+1], func(k string) string { return s.Env[k] })
				}
			}
			name, value, _ := strings.Cut(hdr, ":")
			cs = httpClient(t, endpoint, name, value)
		default:
			t.Fatalf("a configuration of unknown shape: %+v", s)
		}
		tools, err := cs.ListTools(t.Context(), nil)
		_ = cs.Close()
		if err != nil || len(tools.Tools) != len(mcpserver.ToolNames()) {
			t.Errorf("%+v: tools/list: %v", s, err)
		}
	}
	for _, k := range []string{"stdio", "stdio private", "http", "mcp-remote", "token file"} {
		if kinds[k] == 0 {
			t.Errorf("the README's MCP section has no %s configuration", k)
		}
	}
}

// privateCLI runs the densemem command with no database URL and returns its output's first line.
func privateCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(densememBinary(t), args...)
	cmd.Env = append(os.Environ(), "DENSEMEM_DATABASE_URL=", "DENSEMEM_DATA=")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("densemem %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

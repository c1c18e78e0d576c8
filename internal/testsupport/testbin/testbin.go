// Package testbin builds the project's commands once per test process, for tests that run them as
// subprocesses as an operator or an MCP client would.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{} // package path -> binary
)

// Path builds the main package pkg (an import path) on first use and returns its binary's path.
func Path(tb testing.TB, pkg string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[pkg]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "densemem-testbin-")
		if err != nil {
			tb.Fatal(err)
		}
		dir = d
	}
	p := filepath.Join(dir, strings.ReplaceAll(pkg, "/", "_"))
	if out, err := exec.Command("go", "build", "-o", p, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = p
	return p
}

// Remove removes every binary built; a test package's TestMain calls it after m.Run.
func Remove() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

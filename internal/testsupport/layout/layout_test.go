// Package layout_test checks that the module's imports point down (docs/architecture.md, "Package
// map"): the engine never imports test or tool support, the adapters or the root; the store imports
// nothing internal; the public types' package imports only the domain.
package layout_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/densemem/densemem"

// imports lists every package of the module (tests aside) with the module's packages it imports,
// both relative to the module ("." is the root).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = filepath.Join("..", "..", "..")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	got := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		from, _ := rel(p.ImportPath)
		got[from] = []string{}
		for _, imp := range p.Imports {
			if to, ok := rel(imp); ok {
				got[from] = append(got[from], to)
			}
		}
	}
	return got
}

// under reports whether pkg is one of prefixes or inside one of them.
func under(pkg string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") })
}

func TestImportsPointDown(t *testing.T) {
	t.Parallel()
	pkgs := imports(t)
	if len(pkgs) < 20 || pkgs["."] == nil {
		t.Fatalf("go list found %d packages of the module, the root among them: %v", len(pkgs), pkgs["."] != nil)
	}
	domain := []string{"identity", "evidence", "relationship", "conflict", "review", "memtype"}
	engine := []string{"internal/placement", "internal/ledger", "internal/nightly", "internal/ranking", "internal/request"}
	rules := []struct {
		name  string
		from  func(string) bool
		never func(string) bool
	}{
		{"only tests, examples and densememtest use the test and tool support",
			func(p string) bool { return !under(p, "internal/testsupport", "densememtest", "examples") },
			func(p string) bool { return under(p, "internal/testsupport") }},
		{"the engine, the store and the domain never import the root, an adapter or their support",
			func(p string) bool { return under(p, append(append([]string{"store"}, engine...), domain...)...) },
			func(p string) bool {
				return p == "." || under(p, "mcpserver", "console", "cmd", "embedded", "densememtest", "examples", "internal/adapter")
			}},
		{"the store and the domain import nothing internal",
			func(p string) bool { return under(p, append([]string{"store"}, domain...)...) },
			func(p string) bool { return under(p, "internal") }},
		{"the domain imports no store and no migrations",
			func(p string) bool { return under(p, domain...) },
			func(p string) bool { return under(p, "store", "migrations") }},
	}
	for _, r := range rules {
		for from, tos := range pkgs {
			if !r.from(from) {
				continue
			}
			for _, to := range tos {
				if r.never(to) {
					t.Errorf("%s: %s imports %s", r.name, from, to)
				}
			}
		}
	}
}

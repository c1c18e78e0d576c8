package densemem_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// readmeBlock returns the first fenced block of language lang after the README's heading.
func readmeBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```"+lang+"\n")
	if !ok {
		t.Fatalf("README.md has no %s block after %q", lang, heading)
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("README.md: the %s block after %q is not closed", lang, heading)
	}
	return block
}

// TestReadmeTourIsTheExample: the README's API tour is the function tour of example_tour_test.go
// word for word, so the tour compiles as written and Example_tour runs it with its output checked.
func TestReadmeTourIsTheExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("example_tour_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_tour_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fn string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "tour" {
			fn = string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]) + "\n"
		}
	}
	if fn == "" {
		t.Fatal("example_tour_test.go has no func tour")
	}
	if got := readmeBlock(t, "## API tour", "go"); got != fn {
		t.Errorf("README.md's API tour differs from func tour in example_tour_test.go; copy it over.\nREADME:\n%s\nexample:\n%s", got, fn)
	}
}

package testdb

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// RaiseParallel sets -test.parallel to four per CPU, at most eight, and leaves a -parallel given on
// the command line alone.
func TestRaiseParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	old := f.Value.String()
	t.Cleanup(func() { _ = flag.Set("test.parallel", old) })
	onCommandLine := false
	flag.Visit(func(f *flag.Flag) { onCommandLine = onCommandLine || f.Name == "test.parallel" })

	RaiseParallel()
	want := strconv.Itoa(min(4*runtime.GOMAXPROCS(0), 8))
	if onCommandLine {
		want = old
	}
	if got := f.Value.String(); got != want {
		t.Errorf("-test.parallel = %s after RaiseParallel (command line: %v), want %s", got, onCommandLine, want)
	}
}

package testdb

import (
	"flag"
	"runtime"
	"strconv"
)

// ParallelPerCPU is how many parallel tests a package that calls RaiseParallel runs at once per CPU
// unless the command line says -parallel. The project's tests spend most of their time waiting on
// PostgreSQL (the root package's test binary used 4 s of CPU in 75 s of a run at -parallel 2), so at
// go test's default of one per CPU the cores stay half idle: at load 7 on 2 cores, a set of the root
// package's tests took 49–75 s at -parallel 2, 28 s at 4, 18 s at 8, and store/postgres's 25 s at 2
// and 13 s at 8. At 8 on 2 cores the server held at most 64 connections, all tests of the machine
// included.
const ParallelPerCPU = 4

// MaxParallel bounds what RaiseParallel sets whatever the CPUs: the root package's slow tests and
// store/postgres's at 8 each, run together, held at most 61 of the server's connections (100 by
// default), all tests of the machine included.
const MaxParallel = 8

// RaiseParallel sets -test.parallel to ParallelPerCPU per CPU, at most MaxParallel, unless the
// command line set it, or fuzzes (where it counts the fuzzing workers). A test package's TestMain
// calls it before m.Run.
func RaiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if fuzz := flag.Lookup("test.fuzz"); set || (fuzz != nil && fuzz.Value.String() != "") {
		return
	}
	_ = flag.Set("test.parallel", strconv.Itoa(min(ParallelPerCPU*runtime.GOMAXPROCS(0), MaxParallel)))
}

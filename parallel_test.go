package densemem_test

import (
	"flag"
	"runtime"
	"strconv"
)

// parallelPerCPU is how many parallel tests of this package run at once per CPU unless the command
// line says -parallel. The tests spend most of their time waiting on PostgreSQL (the test binary used
// 4 s of CPU in 75 s of a run at -parallel 2), so at go test's default of one per CPU the cores stay
// half idle: at load 7 on 2 cores, one set of them took 49–75 s at -parallel 2, 28 s at 4, 18 s at 8.
// At 8 on 2 cores the server held at most 64 connections, all tests of the machine included.
const parallelPerCPU = 4

// raiseParallel sets -test.parallel to parallelPerCPU per CPU unless the command line set it, or
// fuzzes (where it counts the fuzzing workers). TestMain calls it before m.Run.
func raiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if fuzz := flag.Lookup("test.fuzz"); set || (fuzz != nil && fuzz.Value.String() != "") {
		return
	}
	_ = flag.Set("test.parallel", strconv.Itoa(parallelPerCPU*runtime.GOMAXPROCS(0)))
}

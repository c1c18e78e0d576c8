package densemem_test

import "testing"

// slow skips t under `go test -short`, the quick run while working (README, "Set-up"). The slow
// tests are the races of real goroutines and transactions, the injected faults and lost
// connections, the generated call sequences and property replays, the lock-timeout checks and the
// loads of thousands of rows: together about half of the root package's time. The README's test
// command runs them all.
func slow(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow (concurrency, fault, generated sequences, scale): runs without -short")
	}
}

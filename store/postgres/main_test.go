package postgres_test

import (
	"os"
	"testing"

	"github.com/densemem/densemem/internal/testsupport/testdb"
)

func TestMain(m *testing.M) {
	testdb.RaiseParallel()
	os.Exit(m.Run())
}

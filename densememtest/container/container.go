// Package container lets tests that use densememtest fall back to a PostgreSQL container when no
// server is configured or running locally. Importing it for its side effect registers the fallback:
//
//	import _ "github.com/densemem/densemem/densememtest/container"
//
// densememtest then finds its server from DENSEMEM_TEST_DATABASE_URL, else PostgreSQL on
// 127.0.0.1:5432, else a postgres:15-alpine container started through testcontainers-go when Docker
// is available (once per test process; the testcontainers reaper removes it when the process exits).
//
// It is a package of its own so that a host importing densememtest alone does not depend on
// testcontainers-go and Docker's client: only a host that imports this package does.
package container

import (
	"context"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/densemem/densemem/internal/testsupport/testdb"
)

// Image is the container image started when nothing else answers.
const Image = "postgres:15-alpine"

func init() { testdb.RegisterContainer(Start) }

// Start starts a PostgreSQL container when a Docker provider is healthy and returns the URL of its
// maintenance database. The container is never terminated here: the testcontainers reaper (ryuk)
// removes it when the test process exits.
func Start() (u string, err error) {
	defer func() {
		// testcontainers may panic when no Docker host can be found at all.
		if r := recover(); r != nil {
			err = fmt.Errorf("docker unavailable: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	provider, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return "", err
	}
	healthErr := provider.Health(ctx)
	_ = provider.Close()
	if healthErr != nil {
		return "", healthErr
	}
	ctr, err := tcpostgres.Run(ctx, Image, tcpostgres.BasicWaitStrategies())
	if err != nil {
		return "", err
	}
	return ctr.ConnectionString(ctx, "sslmode=disable")
}

// Command stdioserver is a test-only host of mcpserver.ServeStdio: it serves Dense-Mem's MCP tools on
// standard input and output for the profile DENSEMEM_PROFILE of team DENSEMEM_TEAM, on the database
// at DENSEMEM_DATABASE_URL, so the package's tests can drive the stdio server as a subprocess. The
// densemem command's "mcp --stdio" is the real one.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/mcpserver"
	"github.com/densemem/densemem/store/postgres"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdioserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	st, err := postgres.Open(ctx, os.Getenv("DENSEMEM_DATABASE_URL"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	client, err := densemem.New(st, nil)
	if err != nil {
		return err
	}
	return mcpserver.ServeStdio(ctx, client, densemem.Principal{TeamID: densemem.TeamID(os.Getenv("DENSEMEM_TEAM")),
		ProfileID: densemem.ProfileID(os.Getenv("DENSEMEM_PROFILE"))})
}

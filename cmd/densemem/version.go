package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/densemem/densemem/migrations"
)

// buildVersion is the module version this binary was built from: "(devel)" in a checkout, the
// version go install fetched otherwise.
func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

func (c *cli) version(_ context.Context, args []string) error {
	fs, _ := c.flags("version", "")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	v := struct {
		Version    string `json:"version"`
		Migrations int64  `json:"migrations"`
		Go         string `json:"go"`
	}{buildVersion(), migrations.Latest(), runtime.Version()}
	return c.print(v, func() {
		fmt.Fprintf(c.stdout, "densemem %s (migrations 1..%d, %s)\n", v.Version, v.Migrations, v.Go)
	})
}

package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem/internal/testsupport/exampledb"
	"github.com/densemem/densemem/internal/testsupport/golden"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/store/postgres"
)

// TestSchedulerGolden runs the program twice against one isolated database and compares each output
// with the golden file: three instances race at every tick, yet the totals, reservations and final
// states must be the same on every run. Then it checks the durable reservations themselves.
func TestSchedulerGolden(t *testing.T) {
	t.Parallel()
	dsn := testdb.NewHostURL(t)
	var first, second, log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	if err := run(context.Background(), &first, logger, dsn); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := run(context.Background(), &second, logger, dsn); err != nil {
		t.Fatalf("second run: %v", err)
	}
	golden.Check(t, "scheduler", first.Bytes(), second.Bytes())
	// The host logs each failed call: per run one restarting instance and three during the outage.
	if n := strings.Count(log.String(), "nightly review failed"); n != 2*4 {
		t.Errorf("the host logged %d failed calls; want %d:\n%s", n, 2*4, log.String())
	}

	// One durable reservation per team and run date, taken by one of the instances: per run berlin
	// has 5 run dates (the outage day has none) and los-angeles 6.
	st, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows, teams, byInstances int
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*), count(DISTINCT team_id),
		count(*) FILTER (WHERE worker_id IN ('instance-1', 'instance-2', 'instance-3')) FROM densemem.nightly_runs`).
		Scan(&rows, &teams, &byInstances); err != nil {
		t.Fatal(err)
	}
	if rows != 2*11 || teams != 2*2 || byInstances != rows {
		t.Errorf("nightly_runs: %d rows of %d teams, %d by the instances; want %d rows of %d teams, all by the instances",
			rows, teams, byInstances, 2*11, 2*2)
	}
}

// TestNextRun checks the daily local schedule, across both of Europe/Berlin's changes of time: it
// fires once a day, at 02:00 local time where that exists.
func TestNextRun(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tt := range []struct {
		name string
		now  time.Time
		loc  *time.Location
		want time.Time
	}{
		{"before 02:00 the same day", utc("2026-06-01T22:30:00Z"), berlin, utc("2026-06-02T00:00:00Z")},
		{"exactly 02:00 fires the next day", utc("2026-06-02T00:00:00Z"), berlin, utc("2026-06-03T00:00:00Z")},
		{"in another zone", utc("2026-06-02T00:00:00Z"), la, utc("2026-06-02T09:00:00Z")},
		{"02:00 does not exist: past the gap, 03:00 CEST", utc("2026-03-28T01:00:00Z"), berlin, utc("2026-03-29T01:00:00Z")},
		{"the day after the gap is back at 02:00 CEST", utc("2026-03-29T01:00:00Z"), berlin, utc("2026-03-30T00:00:00Z")},
		{"02:00 happens twice: the second, 02:00 CET", utc("2026-10-24T00:00:00Z"), berlin, utc("2026-10-25T01:00:00Z")},
		{"after the first 02:00 the second still fires", utc("2026-10-25T00:00:00Z"), berlin, utc("2026-10-25T01:00:00Z")},
		{"after the second 02:00 the next day", utc("2026-10-25T01:00:00Z"), berlin, utc("2026-10-26T01:00:00Z")},
	} {
		if got := nextRun(tt.now, tt.loc, 2); !got.Equal(tt.want) {
			t.Errorf("%s: nextRun(%s) = %s; want %s", tt.name, tt.now.In(tt.loc), got.In(tt.loc), tt.want.In(tt.loc))
		}
	}
}

// TestSchedulerNoDatabase checks that an unreachable server gives an error that says how to
// provide one, without the URL's password.
func TestSchedulerNoDatabase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), &out, slog.New(slog.DiscardHandler), golden.UnreachableURL)
	golden.CheckNoDatabase(t, err, out.Bytes(), exampledb.EnvURL)
}

package densemem_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// TestErrorsAHostCanActOn: every failure to open is classified — retry (ErrUnavailable), fix the
// configuration (ErrMisconfigured), or run the migrations (ErrNotMigrated, naming what to run) — with
// the driver's error kept in the chain, one "densemem: " prefix and no repetition.
func TestErrorsAHostCanActOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := testdb.AdminURL()
	if err != nil {
		t.Fatal(err)
	}
	withDB := func(name string) string {
		u, err := url.Parse(admin)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		return u.String()
	}
	unmigrated := testdb.NewEmpty(t)
	var emptyName string
	if err := unmigrated.QueryRow(ctx, "SELECT current_database()").Scan(&emptyName); err != nil {
		t.Fatal(err)
	}
	older := testdb.NewEmpty(t)
	if err := migrations.UpTo(ctx, older, 5, nil); err != nil {
		t.Fatal(err)
	}
	var olderName string
	if err := older.QueryRow(ctx, "SELECT current_database()").Scan(&olderName); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dsn string
		want      error
		says      string
		pgCode    string
	}{
		{"empty DSN", "", densemem.ErrMisconfigured, "DSN is empty", ""},
		{"malformed DSN", "postgres://%zz", densemem.ErrMisconfigured, "", ""},
		{"unknown database", withDB("densemem_no_such_database"), densemem.ErrMisconfigured, "", "3D000"},
		{"unknown role", strings.Replace(admin, "postgres@", "densemem_no_such_role@", 1), densemem.ErrMisconfigured, "", "28000"},
		{"nothing listening", "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2", densemem.ErrUnavailable, "", ""},
		{"unmigrated", withDB(emptyName), densemem.ErrNotMigrated, "run migrations.Up", ""},
		{"older schema", withDB(olderName), densemem.ErrNotMigrated, "is at migration 5", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := postgres.Open(ctx, tc.dsn, nil)
			if err == nil {
				st.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("%v (%T), want %v", err, err, tc.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "densemem: ") || strings.Count(msg, "densemem: ") != 1 {
				t.Errorf("message %q: want exactly one leading \"densemem: \"", msg)
			}
			if tc.says != "" && !strings.Contains(msg, tc.says) {
				t.Errorf("message %q does not say %q", msg, tc.says)
			}
			var pgErr *pgconn.PgError
			if tc.pgCode != "" && (!errors.As(err, &pgErr) || pgErr.Code != tc.pgCode) {
				t.Errorf("no *pgconn.PgError %s in the chain of %v", tc.pgCode, err)
			}
		})
	}

	// A zero Client says how to make one.
	var zero densemem.Client
	if _, err := zero.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "x"}); !errors.Is(err, densemem.ErrMisconfigured) ||
		!strings.Contains(err.Error(), "densemem.New") {
		t.Errorf("zero Client: %v", err)
	}

	// A missing relationship says so once.
	e := newEnv(t)
	_, err = e.client.Trace(ctx, e.A, densemem.TraceRequest{RelationshipID: "rel_missing"})
	if !errors.Is(err, densemem.ErrNotFound) || strings.Count(err.Error(), "rel_missing") != 1 ||
		strings.Count(err.Error(), "densemem:") != 1 {
		t.Errorf("trace of a missing relationship: %q", err)
	}
}

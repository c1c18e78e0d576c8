package migrations

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
)

// DownTo rolls the migrations of the database behind pool back to version (for the tests of a
// migration's Down).
func DownTo(ctx context.Context, pool *pgxpool.Pool, version int64, opts *Options) error {
	return withProvider(ctx, pool, opts, false, func(p *goose.Provider) error {
		_, err := p.DownTo(ctx, version)
		return err
	})
}

// TransactionSettingsSQL creates migration 27's densemem_begin, for tests that run the store on a
// schema migrated only part of the way.
const TransactionSettingsSQL = transactionSettingsSQL

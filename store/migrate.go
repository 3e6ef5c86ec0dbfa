package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/mcp-rounds/rounds/migrations"
	"github.com/mcp-rounds/rounds/queue"
)

// migrationLock is the advisory lock that keeps instances starting together
// from migrating at the same time.
const migrationLock = 7_301_985_122

// Migrate applies River's schema and ours. Safe to call from every instance.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// Wait for the lock in short tries rather than in one statement: a
	// statement waiting holds a snapshot, and the migration holding the
	// lock may build an index concurrently, which waits for every older
	// snapshot of the database; neither would ever go on.
	for {
		var got bool
		if err := conn.QueryRow(ctx, "select pg_try_advisory_lock($1)", migrationLock).Scan(&got); err != nil {
			return err
		}
		if got {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer conn.Exec(context.WithoutCancel(ctx), "select pg_advisory_unlock($1)", migrationLock) //nolint:errcheck

	if err := queue.Migrate(ctx, pool); err != nil {
		return err
	}

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	sub, err := fs.Sub(migrations.FS, ".")
	if err != nil {
		return err
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithLogger(goose.NopLogger()), goose.WithAllowOutofOrder(true))
	if err != nil {
		return err
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	for _, r := range results {
		log.InfoContext(ctx, "applied migration", "version", r.Source.Version, "duration", r.Duration)
	}
	return nil
}

// EnsureDatabase creates the database named in url when it does not exist,
// so that a fresh machine's Postgres needs no setup.
func EnsureDatabase(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
		return err
	}
	name := cfg.Database
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize())
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created meanwhile by another instance
		return nil
	}
	return err
}

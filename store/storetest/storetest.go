// Package storetest gives tests a fresh, migrated Postgres database.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/store"
)

// AdminURL is the database used to create and drop test databases; set
// TEST_DATABASE_URL to point the tests elsewhere.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// NewDatabase creates a migrated database for one test (or test package)
// and drops it when the test ends. It returns the database's URL.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	url, drop, err := Create(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(drop)
	return url
}

// NewPool is NewDatabase with a pool over it.
func NewPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), NewDatabase(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// Create makes a fresh migrated database and returns its URL and a func
// that drops it.
func Create(ctx context.Context) (string, func(), error) {
	cfg, err := pgx.ParseConfig(AdminURL())
	if err != nil {
		return "", nil, err
	}
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("connecting to Postgres (is it running?): %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "rounds_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "create database "+name); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	admin.Close(ctx)
	cfg.Database = name
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	drop := func() {
		ctx := context.Background()
		if admin, err := pgx.Connect(ctx, AdminURL()); err == nil {
			_, _ = admin.Exec(ctx, "drop database if exists "+name+" with (force)")
			admin.Close(ctx)
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		drop()
		return "", nil, err
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool, slog.New(slog.DiscardHandler)); err != nil {
		drop()
		return "", nil, err
	}
	return url, drop, nil
}

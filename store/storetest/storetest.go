// Package storetest gives tests a fresh, migrated Postgres database.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
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

// DatabaseURL is admin, a connection string in URL or keyword/value form,
// naming database name instead: user, password, host, port and every
// parameter are kept.
func DatabaseURL(admin, name string) (string, error) {
	if strings.HasPrefix(admin, "postgres://") || strings.HasPrefix(admin, "postgresql://") {
		u, err := url.Parse(admin)
		if err != nil {
			return "", err
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	// Keyword/value: a later dbname wins.
	return strings.TrimSpace(admin) + " dbname=" + name, nil
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
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "rounds_test_" + hex.EncodeToString(b[:])
	dbURL, err := DatabaseURL(AdminURL(), name)
	if err != nil {
		return "", nil, err
	}
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", nil, fmt.Errorf("connecting to Postgres (is it running?): %w", err)
	}
	if _, err := admin.Exec(ctx, "create database "+name); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	admin.Close(ctx)
	drop := func() {
		ctx := context.Background()
		if admin, err := pgx.Connect(ctx, AdminURL()); err == nil {
			_, _ = admin.Exec(ctx, "drop database if exists "+name+" with (force)")
			admin.Close(ctx)
		}
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		drop()
		return "", nil, err
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool, slog.New(slog.DiscardHandler)); err != nil {
		drop()
		return "", nil, err
	}
	return dbURL, drop, nil
}

package migrations_test

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/mcp-rounds/rounds/migrations"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestDownAndUpAgain: every migration undoes what it did, so an operator
// can step back a release, and applies again cleanly after.
func TestDownAndUpAgain(t *testing.T) {
	pool := storetest.NewPool(t) // migrated up, as an instance does at start
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithAllowOutofOrder(true))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	top, err := p.GetDBVersion(ctx)
	if err != nil || top == 0 {
		t.Fatalf("version after migrating up: %d, %v", top, err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to nothing: %v", err)
	}
	if exists(t, db, "calls") || exists(t, db, "rounds") {
		t.Fatal("tables left after every migration went down")
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if v, _ := p.GetDBVersion(ctx); v != top || !exists(t, db, "rounds") {
		t.Fatalf("version %d after going up again, want %d", v, top)
	}
}

func exists(t *testing.T, db *sql.DB, table string) bool {
	t.Helper()
	var ok bool
	if err := db.QueryRowContext(t.Context(), `select to_regclass($1) is not null`, table).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

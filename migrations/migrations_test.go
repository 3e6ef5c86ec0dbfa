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

// TestToolsHeaderSchemas: a server's catalog keeps, by tool name, the
// inputSchemas that mark arguments for headers; the first tool of a name
// wins, and a catalog that is not a list keeps none.
func TestToolsHeaderSchemas(t *testing.T) {
	pool := storetest.NewPool(t)
	for _, tt := range []struct {
		tools any
		want  string
	}{
		{`[{"name":"a","inputSchema":{"properties":{"r":{"type":"string","x-mcp-header":"Region"}}}},
		   {"name":"b","inputSchema":{"properties":{"r":{"type":"string"}}}},
		   {"name":"a","inputSchema":{"properties":{"s":{"type":"string","x-mcp-header":"Second"}}}}]`,
			`{"a": {"properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}}`},
		{`[{"name":"b","inputSchema":{"type":"object"}}]`, `{}`},
		{`[{"name":7,"inputSchema":{"x-mcp-header":"X"}},{"inputSchema":{"x-mcp-header":"Y"}}]`, `{"7": {"x-mcp-header": "X"}}`},
		{`{"name":"a","inputSchema":{"x-mcp-header":"X"}}`, `{}`},
		{`null`, `{}`},
		{nil, `{}`}, // a server whose catalog was never read
	} {
		var got string
		if err := pool.QueryRow(t.Context(), `select tools_header_schemas($1::jsonb)::text`, tt.tools).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("tools_header_schemas(%v) = %s, want %s", tt.tools, got, tt.want)
		}
	}
}

// TestRoundOutcome: how a round ended, from its answers alone: cancelled
// if any question was cancelled, declined if every one was declined, else
// answered (a sampled or listed answer has no action).
func TestRoundOutcome(t *testing.T) {
	pool := storetest.NewPool(t)
	for _, tt := range []struct {
		responses any
		want      string
	}{
		{nil, "answered"},
		{`null`, "answered"},
		{`{}`, "answered"},
		{`[]`, "answered"},
		{`"declined"`, "answered"},
		{`{"a":{"action":"accept","content":{}}}`, "answered"},
		{`{"a":{"action":"decline"}}`, "declined"},
		{`{"a":{"action":"decline"},"b":{"action":"decline"}}`, "declined"},
		{`{"a":{"action":"decline"},"b":{"action":"accept","content":{}}}`, "answered"},
		{`{"a":{"action":"decline"},"b":{"role":"assistant","model":"m"}}`, "answered"},
		{`{"a":{"action":"decline"},"b":{"action":null}}`, "answered"},
		{`{"a":{"action":"decline"},"b":{"action":7}}`, "answered"},
		{`{"a":{"action":"accept","content":{}},"b":{"action":"cancel"}}`, "cancelled"},
		{`{"a":{"action":"decline"},"a":{"action":"cancel"}}`, "cancelled"},
		{`{"a":{"action":"decline"},"a":{"action":"accept"}}`, "answered"},
	} {
		var got string
		if err := pool.QueryRow(t.Context(), `select round_outcome($1::json)`, tt.responses).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("round_outcome(%v) = %s, want %s", tt.responses, got, tt.want)
		}
	}
}

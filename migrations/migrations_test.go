package migrations_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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

// TestProvisioningHardened: migrations 00069 and 00070 over what SCIM
// kept before them. Passwords a provider sent are taken out; token names
// are made unique with a number; a team made in Rounds that a group took
// over, and the admins' queue, go back to Rounds with an audit entry; an
// externalId two people share is cleared; and an account disabled without
// the provider's deactivation being the last word on it counts as
// disabled here.
func TestProvisioningHardened(t *testing.T) {
	pool := storetest.NewPool(t)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithAllowOutofOrder(true))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := p.DownTo(ctx, 68); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		insert into users (name, disabled) values ('ada', false), ('bob', true), ('cy', true), ('dee', true), ('eve', true);
		insert into scim_users (user_id, user_name, external_id, attributes)
		select id, name || '@example.com', case when name in ('ada', 'bob') then '00u1' else '00u' || name end,
		       case name when 'ada' then '{"userName":"ada@example.com","password":"s3cret","Password":"S3cret","name":{"givenName":"Ada"}}'::jsonb
		                 when 'bob' then '"not an object"'::jsonb else '{}'::jsonb end
		from users;
		insert into audit_log (instance, actor, action, target) values
			('i', 'admin', 'user.disabled', 'bob'),
			('i', 'admin', 'user.disabled', 'cy'), ('i', 'admin', 'user.enabled', 'cy'), ('i', 'provisioning', 'user.deactivated', 'cy'),
			('i', 'provisioning', 'user.deactivated', 'eve'), ('i', 'admin', 'user.disabled', 'eve');
		insert into scim_tokens (name, hash) values ('okta', '\x01'), ('okta', '\x02'), ('okta-2', '\x03'), ('okta', '\x04');
		insert into teams (name, created_at) values ('finance', now() - interval '1 day');
		insert into teams (name) values ('ops'), ('admins');
		insert into scim_groups (team_id, display_name) select id, name from teams;
		insert into team_members (team_id, user_id) select t.id, u.id from teams t, users u where u.name = 'ada'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 70); err != nil {
		t.Fatal(err)
	}

	var attrs string
	if err := pool.QueryRow(ctx, `select p.attributes::text from scim_users p join users u on u.id = p.user_id where u.name = 'ada'`).Scan(&attrs); err != nil {
		t.Fatal(err)
	}
	if attrs != `{"name": {"givenName": "Ada"}, "userName": "ada@example.com"}` {
		t.Errorf("ada's attributes: %s, want them without the passwords", attrs)
	}
	rows, _ := pool.Query(ctx, `select name from scim_tokens order by id`)
	if names, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || strings.Join(names, " ") != "okta okta-3 okta-2 okta-4" {
		t.Errorf("token names: %v, %v; want okta okta-3 okta-2 okta-4", names, err)
	}
	rows, _ = pool.Query(ctx, `select t.name from scim_groups g join teams t on t.id = g.team_id order by t.name`)
	if groups, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || strings.Join(groups, " ") != "ops" {
		t.Errorf("teams still the provider's: %v, %v; want ops alone", groups, err)
	}
	rows, _ = pool.Query(ctx, `select target from audit_log where action = 'team.released' order by target`)
	if released, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || strings.Join(released, " ") != "admins finance" {
		t.Errorf("team.released audit entries: %v, %v; want admins and finance", released, err)
	}
	rows, _ = pool.Query(ctx, `select u.name || '=' || coalesce(p.external_id, '') from scim_users p join users u on u.id = p.user_id order by u.name`)
	if ids, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || strings.Join(ids, " ") != "ada= bob= cy=00ucy dee=00udee eve=00ueve" {
		t.Errorf("externalIds: %v, %v; want the shared one cleared", ids, err)
	}
	rows, _ = pool.Query(ctx, `select name from users where disabled_here order by name`)
	if here, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || strings.Join(here, " ") != "bob dee eve" {
		t.Errorf("disabled here: %v, %v; want bob, dee (no record) and eve", here, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
}

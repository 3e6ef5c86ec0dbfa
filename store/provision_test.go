package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// statements records the statements a pool runs, with their arguments.
type statements struct {
	mu  sync.Mutex
	got []pgx.TraceQueryStartData
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, data)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) take() []pgx.TraceQueryStartData {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got = nil
	return got
}

// TestProvisionedLookupUsesIndex: among 3,000 provisioned people, every
// statement of a lookup by userName (in any case) or externalId reads
// scim_users through an index, as Postgres plans it, not by scanning it.
func TestProvisionedLookupUsesIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := &statements{}
	cfg.ConnConfig.Tracer = seen
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		insert into users (name) select 'p' || g from generate_series(1, 3000) g;
		insert into scim_users (user_id, user_name, external_id)
			select id, name || '@example.com', '00u' || name from users;
		analyze users; analyze scim_users`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.ProvisionedUserQuery{
		{UserName: "P1717@Example.com", Limit: 100},
		{ExternalID: "00up1717", Limit: 100},
	} {
		seen.take()
		found, total, err := st.ProvisionedUsers(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || len(found) != 1 || found[0].UserName != "p1717@example.com" {
			t.Errorf("%+v found %d (%v), want p1717 alone", q, total, found)
		}
		statements := seen.take()
		if len(statements) == 0 {
			t.Fatalf("%+v ran no statement", q)
		}
		for _, s := range statements {
			rows, _ := pool.Query(ctx, "explain "+s.SQL, s.Args...)
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			if strings.Contains(text, "Seq Scan on scim_users") || !strings.Contains(text, "scim_users_") {
				t.Errorf("%+v: Postgres reads scim_users without its index:\n%s\n%s", q, s.SQL, text)
			}
		}
	}
}

// TestSignOnLinksOnlyOne: a first sign-on is linked to a provisioned
// account by externalId only when exactly one person has it. The
// externalId is unique (a provider is refused a second), so the test
// takes the index away to make two.
func TestSignOnLinksOnlyOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	by := store.Provisioner{Instance: "test", Token: "okta"}
	var ids []int64
	for _, name := range []string{"ada@example.com", "eve@example.com"} {
		p, err := st.CreateProvisionedUser(ctx, store.ProvisionUser{UserName: name, ExternalID: "x-" + name, Attributes: []byte(`{}`)}, by)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	_, err := st.CreateProvisionedUser(ctx, store.ProvisionUser{UserName: "mallory@example.com", ExternalID: "x-ada@example.com",
		Attributes: []byte(`{}`)}, by)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "externalId") {
		t.Errorf("a second person with ada's externalId: %v, want a conflict", err)
	}
	if _, err := pool.Exec(ctx, `drop index scim_users_external_id_key;
		update scim_users set external_id = '00u1'`); err != nil {
		t.Fatal(err)
	}
	u, err := st.SignOnUser(ctx, store.SignOn{Issuer: "https://okta.example", Subject: "00u1", Name: "someone"})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID == ids[0] || u.ID == ids[1] || u.Name != "someone" {
		t.Errorf("signed in to %d (%s); want an account of its own, not one of %v", u.ID, u.Name, ids)
	}
}

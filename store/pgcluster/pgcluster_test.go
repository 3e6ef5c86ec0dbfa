package pgcluster

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestCluster writes through PgBouncer and reads the row back from the
// standby, then sees the standby hold a commit back for the apply delay.
func TestCluster(t *testing.T) {
	if m := Missing(); m != "" {
		t.Skip("needs " + m)
	}
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db, err := c.NewDatabase(ctx, "pgcluster")
	if err != nil {
		t.Fatal(err)
	}
	pooled, err := pgx.Connect(ctx, c.PooledURL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close(ctx)
	if _, err := pooled.Exec(ctx, `create table t (n int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pooled.Exec(ctx, `insert into t values (1)`); err != nil {
		t.Fatal(err)
	}
	replica, err := pgx.Connect(ctx, c.ReplicaURL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close(ctx)
	count := func() int {
		var n int
		if err := replica.QueryRow(ctx, `select count(*) from t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(want int, within time.Duration) time.Duration {
		start := time.Now()
		for time.Since(start) < within {
			if count() == want {
				return time.Since(start)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("the standby never showed %d rows", want)
		return 0
	}
	waitFor(1, 10*time.Second)

	if err := c.SetApplyDelay(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	defer c.SetApplyDelay(ctx, 0)
	began := time.Now()
	if _, err := pooled.Exec(ctx, `insert into t values (2)`); err != nil {
		t.Fatal(err)
	}
	waitFor(2, 20*time.Second)
	if took := time.Since(began); took < 2*time.Second {
		t.Fatalf("the standby replayed the commit after %s, before its 2s delay", took)
	}
	var poolMode string
	admin, err := pgx.Connect(ctx, c.PooledURL("pgbouncer")+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, "show config")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		vals, _ := rows.Values()
		if len(vals) > 1 && vals[0] == "pool_mode" {
			poolMode, _ = vals[1].(string)
		}
	}
	if poolMode != "transaction" {
		t.Fatalf("pool_mode = %q", poolMode)
	}
}

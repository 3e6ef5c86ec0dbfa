package engine_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// startEngine starts an engine over st, stopped when the test ends.
func startEngine(t *testing.T, pool *pgxpool.Pool, st *store.Store, mc *mcpclient.Client, cfg engine.Config, log *slog.Logger) *engine.Engine {
	t.Helper()
	eng, err := engine.New(pool, st, mc, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Stop(ctx)
	})
	return eng
}

// eventually checks cond every few milliseconds until it returns nil, and
// fails the test with cond's last error after limit: how these tests wait
// for something to happen, rather than sleep for a guessed while.
func eventually(t *testing.T, limit time.Duration, cond func() error) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", limit, err)
		}
		<-tick.C
	}
}

// clock is real time moved ahead by a test (engine.Config.Now), so the
// test sets the time a deadline needs rather than waiting for it.
type clock struct{ ahead atomic.Int64 }

// Now is the time by the clock.
func (c *clock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// Skip moves the clock ahead by d.
func (c *clock) Skip(d time.Duration) { c.ahead.Add(int64(d)) }

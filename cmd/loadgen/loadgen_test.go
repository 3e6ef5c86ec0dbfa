package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestSmoke runs the benchmark for a few seconds, to keep it working. Its
// figures mean nothing; cmd/loadgen without -short measures.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the app")
	}
	bin := filepath.Join(t.TempDir(), "web")
	if out, err := exec.Command("go", "build", "-o", bin, "../web").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg, err := pgx.ParseConfig(storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("rounds_loadgen_smoke_%d", os.Getpid())
	db := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	t.Cleanup(func() {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, storetest.AdminURL()); err == nil {
			_, _ = conn.Exec(ctx, "drop database if exists "+name+" with (force)")
			conn.Close(ctx)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, scale := range []int{0, 1000} {
		o := options{db: db, web: bin, instances: 2, users: 2, duration: time.Second, warmup: 2 * time.Second,
			runs: 1, modes: "baseline,api,html,half,agents", scale: scale}
		if err := run(ctx, o); err != nil {
			t.Fatalf("scale %d: %v", scale, err)
		}
	}
}

package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestChaos is `go run ./cmd/loadgen -chaos 2m`: users book flights through
// the API and the pages while instances are killed and Postgres of the
// run's own is restarted. No round may be lost, and no 5xx may come
// outside Postgres's restarts.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for two minutes")
	}
	if _, err := exec.LookPath("initdb"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			t.Skip("needs Postgres's initdb for a cluster of its own")
		}
	}
	bin := filepath.Join(t.TempDir(), "web")
	if out, err := exec.Command("go", "build", "-o", bin, "../web").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := runChaos(ctx, options{web: bin, instances: 2, users: 8}, 2*time.Minute)
	rep.print()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kills < 8 || rep.PGRestarts < 2 {
		t.Errorf("%d kills and %d Postgres restarts, want 8 and 2 in two minutes", rep.Kills, rep.PGRestarts)
	}
	if rep.Started == 0 || rep.Answered != rep.Started || len(rep.Lost) != 0 || rep.Unexpected5xx != 0 {
		t.Errorf("started %d, answered %d, lost %d, 5xx outside outages %d", rep.Started, rep.Answered, len(rep.Lost), rep.Unexpected5xx)
	}
}

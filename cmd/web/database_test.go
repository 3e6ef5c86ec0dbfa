package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNoPostgresSaysWhatIsMissing runs the command as a newcomer does,
// `go run ./cmd/web`, with DATABASE_URL at a port where nothing listens: it
// says in words that Postgres could not be reached, where it looked and the
// two ways to get one, and exits non-zero, without a JSON log line.
func TestNoPostgresSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	closed := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proc := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), "ROUNDS_TEST_INSTANCE=1", "LISTEN_ADDR="+freeAddr(t),
		"DATABASE_URL=postgres://postgres:hunter2secret@"+closed+"/rounds?sslmode=disable")
	var stdout, stderr bytes.Buffer
	proc.Stdout, proc.Stderr = &stdout, &stderr
	err := proc.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the command ended with %v, want a non-zero exit; it said:\n%s", err, stderr.String())
	}
	said := stderr.String()
	for _, want := range []string{
		"could not reach Postgres at " + closed,
		"connection refused",
		"DATABASE_URL",
		"host all postgres 127.0.0.1/32 trust",
		"docker compose up -d db",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("the command said:\n%s\nwant %q in it", said, want)
		}
	}
	if strings.Contains(said, "hunter2secret") {
		t.Errorf("the command printed the database password:\n%s", said)
	}
	if strings.Contains(said, `{"time"`) {
		t.Errorf("the command printed a JSON log line rather than words:\n%s", said)
	}
}

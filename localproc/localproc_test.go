package localproc_test

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/localproc"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestSupervisorRestartsAndRecords: a local server's process that exits is
// started again, and how it runs (its restarts, how it last ended, its
// stderr) is recorded for the admin page; once the supervisor stops, the
// record says it no longer runs.
func TestSupervisorRestartsAndRecords(t *testing.T) {
	ctx := t.Context()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	const instance = "localproc-test"
	if err := st.Beat(ctx, store.Heartbeat{ID: instance, StartedAt: time.Now(), Interval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	locals := mcpclient.NewLocals()
	locals.Add("quitter", mcpclient.Command{Path: "/bin/sh", Args: []string{"-c", "echo up >&2; exit 3"}}, 1, true)
	sup := localproc.New(st, localproc.Config{Locals: locals, InstanceID: instance}, slog.New(slog.DiscardHandler))
	sup.Start(ctx)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			sup.Stop()
		}
	})

	row := func() store.LocalProcess {
		t.Helper()
		rows, err := st.LocalProcesses(ctx, "quitter")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			return store.LocalProcess{}
		}
		return rows[0]
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(15 * time.Second); ; <-tick.C {
		r := row()
		if r.Restarts >= 1 && r.LastExit != nil && *r.LastExit == "exit status 3" && slices.Contains(r.Stderr, "up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process was not started again and recorded; last: %+v", r)
		}
	}

	sup.Stop()
	stopped = true
	if r := row(); r.Running || r.Sessions != 0 {
		t.Fatalf("after Stop the record says running=%v sessions=%d", r.Running, r.Sessions)
	}
}

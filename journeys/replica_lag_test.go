package journeys

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store/pgcluster"
)

// TestReplicaStaleWhenItStreamsNothing: the primary's WAL sender hangs
// (stopped where it stands), so the standby's receiver still says it
// streams and has replayed all it received, while the primary goes on
// committing. With READ_MAX_LAG at 1 s, the standby counts as stale once
// it is that far behind the primary, and the lists read the primary: a
// call started after the hang shows in a list read without the person's
// position. The test's cluster is its own, since it breaks replication.
func TestReplicaStaleWhenItStreamsNothing(t *testing.T) {
	t.Parallel()
	if m := pgcluster.Missing(); m != "" {
		t.Skip("needs " + m)
	}
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cl, err := pgcluster.Start(startCtx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	db := clusterDatabase(t, cl)
	env := map[string]string{
		"DATABASE_URL":      cl.PrimaryURL(db),
		"DATABASE_READ_URL": cl.ReplicaURL(db),
		"READ_MAX_LAG":      "1s",
		"MCP_SERVERS":       "demo=" + demoServer(t, nil),
	}
	var logs logSink
	insts := startInstances(t, 2, env, &logs)
	a, b := insts[0].URL, insts[1].URL
	token := clusterToken(t, env, "admin")
	// A program keeping no cookies: it starts calls on one instance and
	// lists them on the other, which knows no position of its writes, so
	// those lists read the standby whenever it counts as fresh.
	program := &client{t: t, token: token}

	before := program.startCall(a, "confirm_delete", `{"path":"/tmp/before.txt"}`)
	program.waitFor(a, before.ID, 20*time.Second, roundIs(1))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(20 * time.Second); program.apiCalls(b)[before.ID] != "input_required"; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("the standby never showed the first call")
		}
	}

	thaw, err := cl.FreezeSender(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	frozen := time.Now()
	after := program.startCall(a, "confirm_delete", `{"path":"/tmp/after.txt"}`)
	program.waitFor(a, after.ID, 20*time.Second, roundIs(1))
	for deadline := time.Now().Add(15 * time.Second); program.apiCalls(b)[after.ID] == ""; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("%s after the standby stopped receiving, the lists still read it: a call started since is missing",
				time.Since(frozen).Round(time.Millisecond))
		}
	}
	t.Logf("the lists read the primary %s after the standby stopped receiving", time.Since(frozen).Round(time.Millisecond))
	if errs := errorLines(logs.String()); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
}

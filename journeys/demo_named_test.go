package journeys

import (
	"testing"
	"time"
)

// TestDemoNamedInServers: naming the built-in demo in MCP_SERVERS, as the
// README's table shows, keeps its key, so its calls are not refused.
func TestDemoNamedInServers(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	addr := freeAddr(t)
	inst := startInstance(t, db, map[string]string{
		"LISTEN_ADDR": addr, "MCP_SERVERS": "demo[sampling,roots]=http://" + addr + "/demo/mcp",
	}, nil)
	c := newClient(t, db)
	call := c.startCall(inst.URL, "book_flight", `{}`)
	if got := c.waitFor(inst.URL, call.ID, 20*time.Second, func(c apiCall) bool { return roundIs(1)(c) || isDone(c) }); got.Status != "input_required" {
		t.Fatalf("the demo named in MCP_SERVERS: call %s (%+v), want its first round", got.Status, got.Error)
	}
}

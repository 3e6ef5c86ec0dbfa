package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// A session is read back as it was begun, from another store over the same
// database (another instance), ends once, for its user only, and a
// request's call is found by session and request id while it runs.
func TestAgentSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	a, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	ada, err := a.CreateUser(ctx, "ada", "ada's password", false)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := a.CreateToken(ctx, ada.ID, "agent")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("ab", 32)
	agent := store.Agent{Name: "claude-code", Version: "2.1", Protocol: "2025-11-25", TokenID: &tok.ID,
		Can: store.AgentCan{Form: true, Sampling: true}}
	if err := a.CreateAgentSession(ctx, store.AgentSession{ID: id, Server: "demo", UserID: ada.ID, Agent: agent}); err != nil {
		t.Fatal(err)
	}
	got, err := b.AgentSessionByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	agent.Session = id
	if got.Server != "demo" || got.UserID != ada.ID || got.Agent.Label() != "claude-code 2.1" ||
		got.Agent.Session != id || *got.Agent.TokenID != tok.ID || got.Agent.Can != agent.Can || got.Agent.Protocol != agent.Protocol {
		t.Fatalf("session read back as %+v, want %+v", got, agent)
	}

	call := waitingCall(t, a, "ada", "")
	if _, err := pool.Exec(ctx, `update calls set agent = $2 where id = $1`, call,
		`{"name":"claude-code","protocol":"2025-11-25","session":"`+id+`","request_id":"7"}`); err != nil {
		t.Fatal(err)
	}
	if found, err := b.AgentRequestCall(ctx, id, "7"); err != nil || found != call {
		t.Fatalf("call of request 7 = %q, %v; want %q", found, err, call)
	}
	if _, err := b.AgentRequestCall(ctx, id, `"7"`); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("request \"7\" (a string, not the number): want ErrNotFound, got %v", err)
	}

	if err := b.EndAgentSession(ctx, id, ada.ID+1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ending another's session: want ErrNotFound, got %v", err)
	}
	if err := b.EndAgentSession(ctx, id, ada.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AgentSessionByID(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an ended session: want ErrNotFound, got %v", err)
	}
	if err := a.EndAgentSession(ctx, id, ada.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ending it again: want ErrNotFound, got %v", err)
	}
	if n, err := a.DeleteAgentSessions(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("sessions ended an hour ago: %d deleted, %v; want none", n, err)
	}
	if n, err := a.DeleteAgentSessions(ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("sessions ended before now: %d deleted, %v; want 1", n, err)
	}
}

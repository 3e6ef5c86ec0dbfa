package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// pendingRound stores a call whose first round waits for answers.
func pendingRound(t *testing.T, st *store.Store) string {
	t.Helper()
	ctx := context.Background()
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "create_task"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartAttempt(ctx, call.ID, 0); err != nil {
		t.Fatal(err)
	}
	err = st.AddRound(ctx, call.ID, 0, store.NewRound{
		InputRequests: json.RawMessage(`{"task":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}`),
		ExpiresAt:     time.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	return call.ID
}

// TestDrafts keeps a pending round's draft, replaces it on each save, and
// neither shows nor takes one once the round is answered, which deletes it.
func TestDrafts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	id := pendingRound(t, st)

	if _, err := st.Draft(ctx, id, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("draft before any save: err = %v, want ErrNotFound", err)
	}
	first := url.Values{"q0.title": {"Wri"}, "q0$action": {"accept"}}
	if err := st.SaveDraft(ctx, id, 1, first); err != nil {
		t.Fatal(err)
	}
	second := url.Values{"q0.title": {"Write the docs"}, "q0.tags": {"docs", "chore"}, "q0$action": {"decline"}}
	if err := st.SaveDraft(ctx, id, 1, second); err != nil {
		t.Fatal(err)
	}
	d, err := st.Draft(ctx, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Form) != len(second) || !slices.Equal(d.Form["q0.tags"], second["q0.tags"]) || d.Form.Get("q0.title") != "Write the docs" {
		t.Errorf("draft = %v, want the last one saved, %v", d.Form, second)
	}
	if time.Since(d.UpdatedAt) > time.Minute {
		t.Errorf("updated at %v", d.UpdatedAt)
	}
	if err := st.SaveDraft(ctx, id, 2, first); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		t.Errorf("draft of a round that does not exist: err = %v", err)
	}

	if err := answerRound(ctx, st, id, 1, `{"task":{"action":"accept","content":{}}}`, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Draft(ctx, id, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("draft of an answered round: err = %v, want ErrNotFound", err)
	}
	if err := st.SaveDraft(ctx, id, 1, first); !errors.Is(err, store.ErrConflict) {
		t.Errorf("saving a draft of an answered round: err = %v, want ErrConflict", err)
	}
	// The answer took the draft with it: nothing of what was typed stays.
	var kept int
	if err := pool.QueryRow(ctx, `select count(*) from drafts where call_id = $1`, id).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 0 {
		t.Errorf("%d drafts kept after the answer, want none", kept)
	}
}

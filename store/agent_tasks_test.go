package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// An agent's task reads its call's round, the answers the agent gave it so
// far (until they are forgotten), and the server's JSON-RPC error once the
// call failed with one.
func TestAgentTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	id := waitingCall(t, st, "ada", "")
	if _, err := st.AgentAnswerPart(ctx, id, 1, []string{"q", "r"}, "r", json.RawMessage(`{"action":"decline"}`)); err != nil {
		t.Fatal(err)
	}
	task, err := st.AgentTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if task.Call.ID != id || task.Call.Status != store.CallInputRequired || task.Round == nil || task.Round.Seq != 1 ||
		task.Round.Status != store.RoundPending || !slices.Equal(task.Answered, []string{"r"}) || task.ServerError != nil {
		t.Fatalf("the waiting call's task: %+v %+v answered %v error %s", task.Call, task.Round, task.Answered, task.ServerError)
	}
	if err := st.ForgetAgentAnswers(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	if task, err = st.AgentTask(ctx, id); err != nil || len(task.Answered) != 0 {
		t.Fatalf("after forgetting: %v %v", task.Answered, err)
	}

	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	rpcErr := `{"code": -32602, "message": "unknown tool"}`
	if err := st.FailCallAnswered(ctx, call.ID, 0, "The server refused.", false, json.RawMessage(rpcErr)); err != nil {
		t.Fatal(err)
	}
	task, err = st.AgentTask(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	if task.Call.Status != store.CallFailed || task.Round != nil || json.Unmarshal(task.ServerError, &got) != nil ||
		got.Code != -32602 || got.Message != "unknown tool" {
		t.Fatalf("the failed call's task: %s %+v error %s", task.Call.Status, task.Round, task.ServerError)
	}

	if _, err := st.AgentTask(ctx, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown call: %v, want ErrNotFound", err)
	}
	if _, err := st.AgentTask(ctx, "not-a-call"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a malformed id: %v, want ErrInvalid", err)
	}
}

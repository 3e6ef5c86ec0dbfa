package apiv1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// TestNewCall shows a call as the API and its webhooks do: the waiting
// round with what was answered at its place before the server was asked
// afresh, every round once the server forgot its questions, the target
// under its method's name, and when a retry goes out.
func TestNewCall(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 5, 4, 16, 30, 0, 0, time.UTC)
	refusedAt := at.Add(-time.Minute)
	call := &store.Call{ID: "c1", Status: store.CallInputRequired, ServerName: "demo", Method: mcpclient.MethodGetPrompt,
		Target: "greet", CurrentSeq: 2, Restarts: 1}
	rounds := []store.Round{
		{Seq: 1, Status: store.RoundAnswered, Responses: json.RawMessage(`{"q":{"action":"decline"}}`), StateExpiredAt: &refusedAt},
		{Seq: 2, Status: store.RoundPending, Asking: 1, InputRequests: json.RawMessage(`{"q":{}}`), ExpiresAt: at},
	}
	if !WithRounds(call, rounds) {
		t.Error("a call asked afresh is shown without its rounds")
	}
	got := NewCall(call, rounds)
	if got.Prompt != "greet" || got.Tool != "" || got.URI != "" {
		t.Errorf("target = tool %q, prompt %q, uri %q; want the prompt", got.Tool, got.Prompt, got.URI)
	}
	if got.Round == nil || got.Round.Seq != 2 || got.Round.AnsweredBefore == nil || got.Round.AnsweredBefore.Seq != 1 {
		t.Fatalf("round = %+v, want round 2, answered before as round 1", got.Round)
	}
	if len(got.Rounds) != 1 || got.Rounds[0].Seq != 1 || got.Rounds[0].StateRefusedAt == nil {
		t.Errorf("rounds = %+v, want round 1, whose state was refused", got.Rounds)
	}
	if string(got.Result) != "null" || got.Retrying != nil {
		t.Errorf("result %s, retrying %+v; want null and none", got.Result, got.Retrying)
	}

	call = &store.Call{ID: "c2", Status: store.CallRunning, Method: mcpclient.MethodCallTool, Target: "echo", RetryAt: &at}
	got = NewCall(call, nil)
	if got.Retrying == nil || got.Retrying.Message != "The server is unreachable; trying again at 16:30:00 UTC." {
		t.Errorf("retrying = %+v", got.Retrying)
	}
	body, err := CallJSON(call, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"tool":"echo"`) || strings.Contains(string(body), "requestState") {
		t.Errorf("webhook body = %s", body)
	}
}

package agents

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

func TestTaskOf(t *testing.T) {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour)
	finished := created.Add(2 * time.Minute)
	agentAsked := store.AsksAgent
	ownerAsked := store.AsksOwner
	asked := `{"b":{"method":"elicitation/create","params":{"mode":"form","message":"<B>"}},"a":{"method":"elicitation/create","params":{"message":"A"}}}`
	text := func(s string) *string { return &s }
	call := func(status string, edit func(*store.Call)) *store.Call {
		c := &store.Call{ID: "c1", Owner: "ada", ServerName: "demo", Status: status, CurrentSeq: 2,
			CreatedAt: created, UpdatedAt: created.Add(time.Minute)}
		if edit != nil {
			edit(c)
		}
		return c
	}
	round := func(asks *string) *store.Round {
		return &store.Round{Seq: 2, Status: store.RoundPending, InputRequests: json.RawMessage(asked), Asks: asks}
	}
	tests := []struct {
		name     string
		facts    TaskFacts
		status   string
		message  string
		poll     time.Duration
		requests string
		result   string
		err      string
	}{
		{name: "Running", facts: TaskFacts{Call: call(store.CallRunning, func(c *store.Call) {
			c.Progress = json.RawMessage(`{"seq":2,"progress":1,"message":"Building…"}`)
		})}, status: "working", message: "Building…", poll: taskPollWorking},
		{name: "AsksAssignee", facts: TaskFacts{Call: call(store.CallInputRequired, func(c *store.Call) { c.Assignee = text("bob") }),
			Round: round(nil)}, status: "working", message: "Waiting for bob to answer in Rounds", poll: taskPollPerson},
		{name: "AsksTeam", facts: TaskFacts{Call: call(store.CallInputRequired, func(c *store.Call) { c.Assignee = text("team:ops") }),
			Round: round(nil)}, status: "working", message: "Waiting for someone in ops to answer in Rounds", poll: taskPollPerson},
		{name: "AsksOwner", facts: TaskFacts{Call: call(store.CallInputRequired, func(c *store.Call) { c.Assignee = text("team:ops") }),
			Round: round(&ownerAsked)}, status: "working", message: "Waiting for ada to answer in Rounds", poll: taskPollPerson},
		{name: "WaitsForApproval", facts: TaskFacts{Call: call(store.CallApprovalRequired, func(c *store.Call) {
			c.Approval = &store.Approval{Ask: []string{"team:finance"}, Needs: 1}
		})}, status: "working", message: "Waiting for approval from team:finance in Rounds", poll: taskPollPerson},
		{name: "WaitsForApprovals", facts: TaskFacts{Call: call(store.CallApprovalRequired, func(c *store.Call) {
			c.Approval = &store.Approval{Ask: []string{"fay", "team:ops"}, Needs: 2}
		})}, status: "working", message: "Waiting for 2 approvals from fay, team:ops in Rounds", poll: taskPollPerson},
		{name: "DeclinedApproval", facts: TaskFacts{Call: call(store.CallFailed, func(c *store.Call) {
			c.Error, c.FinishedAt = text("Declined by fay: not this month."), &finished
		})}, status: "completed", message: "Declined by fay: not this month.",
			result: `{"content":[{"text":"Declined by fay: not this month.","type":"text"}],"isError":true,"resultType":"complete"}`},
		{name: "AsksAgent", facts: TaskFacts{Call: call(store.CallInputRequired, nil), Round: round(&agentAsked)},
			status: "input_required", poll: taskPollWorking,
			requests: `{"2.b":{"method":"elicitation/create","params":{"mode":"form","message":"<B>"}},"2.a":{"method":"elicitation/create","params":{"message":"A"}}}`},
		{name: "AsksAgentPartlyAnswered", facts: TaskFacts{Call: call(store.CallInputRequired, nil), Round: round(&agentAsked), Answered: []string{"b"}},
			status: "input_required", poll: taskPollWorking,
			requests: `{"2.a":{"method":"elicitation/create","params":{"message":"A"}}}`},
		{name: "AsksAgentAllAnswered", facts: TaskFacts{Call: call(store.CallInputRequired, nil), Round: round(&agentAsked), Answered: []string{"a", "b"}},
			status: "working", poll: taskPollWorking},
		{name: "Completed", facts: TaskFacts{Call: call(store.CallComplete, func(c *store.Call) {
			c.Result, c.FinishedAt = json.RawMessage(`{"content":[],"isError":true}`), &finished
		})}, status: "completed", result: `{"resultType":"complete","content":[],"isError":true}`}, // a 2025-11-25 server's, made a 2026-07-28 CallToolResult
		{name: "FailedInRounds", facts: TaskFacts{Call: call(store.CallFailed, func(c *store.Call) {
			c.Error, c.FinishedAt = text("The server could not be reached."), &finished
		})}, status: "completed", message: "The server could not be reached.",
			result: `{"content":[{"text":"The server could not be reached.","type":"text"}],"isError":true,"resultType":"complete"}`},
		{name: "FailedByServer", facts: TaskFacts{Call: call(store.CallFailed, func(c *store.Call) {
			c.Error, c.FinishedAt = text("The server answered with an error."), &finished
		}), ServerError: json.RawMessage(`{"code":-32602,"message":"no such release","status":400}`)},
			status: "failed", message: "The server answered with an error.", err: `{"code":-32602,"message":"no such release"}`},
		{name: "CancelledByOwner", facts: TaskFacts{Call: call(store.CallCancelled, func(c *store.Call) {
			c.Error, c.FinishedAt = text(ownCancel), &finished
		})}, status: "cancelled", message: "ada stopped the call in Rounds."},
		{name: "Expired", facts: TaskFacts{Call: call(store.CallExpired, func(c *store.Call) {
			c.Error = text(store.RoundExpiredMessage)
		})}, status: "cancelled", message: "The round's deadline passed before it was answered."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.facts.Retention, tt.facts.Now = 24*time.Hour, now
			got := TaskOf(tt.facts)
			if got.ResultType != "complete" || got.TaskID != "c1" || got.CreatedAt != "2026-12-03T10:00:00Z" || got.LastUpdatedAt != "2026-12-03T10:01:00Z" {
				t.Errorf("task head = %+v", got)
			}
			if got.Status != tt.status || got.StatusMessage != tt.message || got.PollIntervalMs != tt.poll.Milliseconds() {
				t.Errorf("status %q %q poll %d, want %q %q %d", got.Status, got.StatusMessage, got.PollIntervalMs, tt.status, tt.message, tt.poll.Milliseconds())
			}
			if string(got.InputRequests) != tt.requests || string(got.Result) != tt.result || string(got.Error) != tt.err {
				t.Errorf("inputRequests %s result %s error %s", got.InputRequests, got.Result, got.Error)
			}
			want := time.Hour + 24*time.Hour
			if tt.facts.Call.FinishedAt != nil {
				want = 2*time.Minute + 24*time.Hour
			}
			if got.TTLMs != want.Milliseconds() {
				t.Errorf("ttlMs = %d, want %d", got.TTLMs, want.Milliseconds())
			}
		})
	}
}

func TestSplitTaskKey(t *testing.T) {
	for k, want := range map[string]struct {
		seq int
		key string
		ok  bool
	}{
		"3.name": {3, "name", true}, "12.a.b": {12, "a.b", true}, TaskKey(7, "x.y"): {7, "x.y", true},
		"name": {0, "", false}, "0.name": {0, "", false}, "03.name": {0, "", false}, "3.": {0, "", false}, "-1.a": {0, "", false},
	} {
		seq, key, ok := SplitTaskKey(k)
		if seq != want.seq || key != want.key || ok != want.ok {
			t.Errorf("SplitTaskKey(%q) = %d %q %v, want %+v", k, seq, key, ok, want)
		}
	}
}

package slack_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/slack"
	"github.com/mcp-rounds/rounds/slack/slackfake"
	"github.com/mcp-rounds/rounds/store"
)

var until = time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)

// inputRequests wraps one question file: elicitation params, or a whole
// input request when it names its method.
func inputRequests(t testing.TB, raw []byte) string {
	t.Helper()
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		t.Fatal(err)
	}
	if _, ok := probe["method"]; ok {
		return `{"q":` + string(raw) + `}`
	}
	return `{"q":{"method":"elicitation/create","params":` + string(raw) + `}}`
}

// pending is a waiting call and its round with the given inputRequests.
func pending(inputRequests string) (*store.Call, *store.Round) {
	call := &store.Call{ID: "8d0c6a1e-5b0e-4c51-9d53-2f4d5b8e7a10", ServerName: "demo", Status: store.CallInputRequired, CurrentSeq: 1}
	return call, &store.Round{CallID: call.ID, Seq: 1, InputRequests: json.RawMessage(inputRequests), Status: store.RoundPending}
}

// askFor builds the Ask of a round with inputRequests.
func askFor(t testing.TB, title, inputRequests string) slack.Ask {
	t.Helper()
	_, r := pending(inputRequests)
	qs, err := round.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	return slack.Ask{ID: r.CallID + "/1", Title: title, From: "deploy-bot (server demo)", For: "ada",
		Until: until, URL: "https://rounds.example/calls/" + r.CallID, Questions: qs}
}

// askFile builds the Ask of one question file.
func askFile(t testing.TB, path string) slack.Ask {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	title := "Answer " + strings.ReplaceAll(name, "-", " ")
	if name == "long-title" {
		title = "Rotate every credential of the payments service"
	}
	return askFor(t, title, inputRequests(t, raw))
}

// asJSON round-trips v through JSON, as Slack receives it.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkView fails the test on any Block Kit problem slackfake finds.
func checkView(t testing.TB, v any) {
	t.Helper()
	for _, p := range slackfake.CheckView(asJSON(t, v).(map[string]any)) {
		t.Errorf("modal breaks Block Kit: %s", p)
	}
}

// checkMessage fails the test on any Block Kit problem slackfake finds.
func checkMessage(t testing.TB, m slack.Message) {
	t.Helper()
	blocks, _ := asJSON(t, m.Blocks).([]any)
	for _, p := range slackfake.CheckMessage(blocks) {
		t.Errorf("message breaks Block Kit: %s", p)
	}
}

package demo_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
)

// rpc posts one JSON-RPC request to the demo, declaring the tasks
// extension when tasks is set, and returns its result or error.
func rpc(t *testing.T, endpoint, method, params string, tasks bool) (result map[string]any, rpcErr map[string]any) {
	t.Helper()
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if tasks {
		meta = strings.Replace(meta, `clientCapabilities":{}`, `clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, 1)
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + strings.Replace(params, "{", `{"_meta":`+meta+`,`, 1) + `}`
	req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %s", method, raw)
	}
	return out.Result, out.Error
}

// TestDeployReleaseTask: deploy_release answers with a task, which builds
// (its steps said on each poll), then asks whether to deploy, until
// answered with tasks/update; it then deploys and completes. Declined, it
// completes without deploying; stopped, it is cancelled; a client that
// declares no tasks is told it needs them.
func TestDeployReleaseTask(t *testing.T) {
	clk := newClock()
	endpoint := MustServe(t, demo.Options{Secret: []byte("test secret"), Now: clk.Now})
	start := func(release string) string {
		res, e := rpc(t, endpoint, "tools/call", `{"name":"deploy_release","arguments":{"release":"`+release+`","seconds":4}}`, true)
		if e != nil || res["resultType"] != "task" || res["status"] != "working" || res["taskId"] == "" {
			t.Fatalf("tools/call = %v, %v; want a working task", res, e)
		}
		return res["taskId"].(string)
	}
	get := func(id string) map[string]any {
		res, e := rpc(t, endpoint, "tasks/get", `{"taskId":"`+id+`"}`, true)
		if e != nil {
			t.Fatalf("tasks/get: %v", e)
		}
		return res
	}

	id := start("2.0")
	if got := get(id); got["statusMessage"] != "Building release 2.0: step 1 of 4" {
		t.Errorf("at once: %v", got)
	}
	clk.Add(2500 * time.Millisecond)
	if got := get(id); got["statusMessage"] != "Building release 2.0: step 3 of 4" {
		t.Errorf("after 2.5 s: %v", got)
	}
	clk.Add(2 * time.Second)
	asked := get(id)
	q, _ := json.Marshal(asked["inputRequests"])
	if asked["status"] != "input_required" || !strings.Contains(string(q), `"go_ahead":{"method":"elicitation/create"`) ||
		!strings.Contains(string(q), "Deploy it to production?") {
		t.Fatalf("once built: %v", asked)
	}
	clk.Add(time.Minute)
	if got := get(id); got["status"] != "input_required" {
		t.Errorf("a minute later, unanswered: %v", got)
	}
	if _, e := rpc(t, endpoint, "tasks/update", `{"taskId":"`+id+`","inputResponses":{"go_ahead":{"action":"accept","content":{"confirm":true}}}}`, true); e != nil {
		t.Fatal(e)
	}
	if got := get(id); got["status"] != "working" || got["statusMessage"] != "Deploying release 2.0" {
		t.Errorf("answered: %v", got)
	}
	clk.Add(2 * time.Second)
	done := get(id)
	text, _ := json.Marshal(done["result"])
	if done["status"] != "completed" || !strings.Contains(string(text), "Deployed release 2.0 to production.") {
		t.Errorf("deployed: %v", done)
	}

	t.Run("Declined", func(t *testing.T) {
		id := start("2.1")
		clk.Add(5 * time.Second)
		if _, e := rpc(t, endpoint, "tasks/update", `{"taskId":"`+id+`","inputResponses":{"go_ahead":{"action":"decline"}}}`, true); e != nil {
			t.Fatal(e)
		}
		done := get(id)
		text, _ := json.Marshal(done["result"])
		if done["status"] != "completed" || !strings.Contains(string(text), "Release 2.1 was built and not deployed.") {
			t.Errorf("declined: %v", done)
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		id := start("2.2")
		if _, e := rpc(t, endpoint, "tasks/cancel", `{"taskId":"`+id+`"}`, true); e != nil {
			t.Fatal(e)
		}
		if got := get(id); got["status"] != "cancelled" {
			t.Errorf("cancelled: %v", got)
		}
	})
	t.Run("ErrNoTasksDeclared", func(t *testing.T) {
		_, e := rpc(t, endpoint, "tools/call", `{"name":"deploy_release","arguments":{}}`, false)
		if e == nil || e["code"] != float64(-32021) {
			t.Errorf("without the extension: %v", e)
		}
	})
	t.Run("ErrUnknownTask", func(t *testing.T) {
		_, e := rpc(t, endpoint, "tasks/get", `{"taskId":"nope"}`, true)
		if e == nil || e["code"] != float64(-32602) {
			t.Errorf("an unknown task: %v", e)
		}
	})
}

package mcpclient_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
)

// TestTaskRequiresTheExtension: a server of tasks answers a tool call that
// does not declare the extension with -32021; Rounds declares it, gets a
// task, and says in words what a -32021 would mean.
func TestTaskRequiresTheExtension(t *testing.T) {
	tasker := mcptest.NewTasker(t, time.Second)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"deploy","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, tasker.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Method", "tools/call")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	_ = jsonDecode(resp, &got)
	if got.Error.Code != mcpclient.CodeMissingCapability {
		t.Fatalf("a client without the extension got %+v", got)
	}
	c := mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second})
	out, err := c.Send(t.Context(), mcpclient.Server{URL: tasker.URL}, mcpclient.Request{Name: "deploy", Arguments: []byte(`{}`)}, nil)
	if err != nil || out.Task == nil || out.Task.Status != mcpclient.TaskWorking || out.Task.PollInterval != time.Second {
		t.Fatalf("Rounds' call: %+v, %v", out, err)
	}
	p, _ := mcpclient.Describe(&mcpclient.ServerError{Code: mcpclient.CodeMissingCapability, Message: "Missing required client capability"})
	if !strings.Contains(p.Sentence(), "needs something of its client that Rounds does not offer") {
		t.Fatalf("-32021 reads %q", p.Sentence())
	}
	task, err := c.GetTask(t.Context(), mcpclient.Server{URL: tasker.URL}, out.Task.ID)
	if err != nil || task.Status != mcpclient.TaskWorking || task.Message != "Building 1 of 2" {
		t.Fatalf("tasks/get: %+v, %v", task, err)
	}
	if _, err := c.GetTask(t.Context(), mcpclient.Server{URL: tasker.URL}, "no-such-task"); !mcpclient.TaskGone(err) {
		t.Fatalf("an unknown task: %v", err)
	}
	if v := tasker.Violations(); len(v) > 0 {
		t.Fatalf("against the extension: %q", v)
	}
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

package journeys

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestURLModeAPI runs a URL-mode round through the API: the client declares
// URL elicitation, so the server asks; an accept with content is refused, as
// URL mode has none; a plain accept finishes the call.
func TestURLModeAPI(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)

	call := c.startCall(inst.URL, "connect_account", `{}`)
	asked := c.waitFor(inst.URL, call.ID, 10*time.Second, func(a apiCall) bool { return roundIs(1)(a) || isDone(a) })
	if asked.Status != "input_required" {
		t.Fatalf("status = %s, error = %+v; want the server to ask", asked.Status, asked.Error)
	}
	var ask struct {
		Params struct {
			Mode string `json:"mode"`
			URL  string `json:"url"`
		} `json:"params"`
	}
	if err := json.Unmarshal(asked.Round.InputRequests["connect"], &ask); err != nil {
		t.Fatal(err)
	}
	if ask.Params.Mode != "url" || !strings.HasPrefix(ask.Params.URL, "https://example.com/connect?session=") {
		t.Errorf("asked %+v, want URL mode with the connect page", ask.Params)
	}
	if status, body := c.answer(inst.URL, call.ID, 1, `{"connect":{"action":"accept","content":{"token":"hunter2"}}}`); status != http.StatusUnprocessableEntity {
		t.Errorf("accept with content: %d %s, want 422", status, body)
	}
	if status, body := c.answer(inst.URL, call.ID, 1, `{"connect":{"action":"accept"}}`); status != http.StatusAccepted {
		t.Fatalf("accept: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if got := resultText(t, done.Result); done.Status != "complete" || got != "Connected" {
		t.Errorf("status %s, result %q; want complete and Connected", done.Status, got)
	}
}

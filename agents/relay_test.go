package agents

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

// TestRelayToTheAgent: the agent hears the server's progress as the
// server said it while it rises, Rounds' own words and a server that
// starts again at one more than last heard, so that what it hears always
// rises; and the server's log messages at its level and above.
func TestRelayToTheAgent(t *testing.T) {
	rec := httptest.NewRecorder()
	q := &Request{W: rec, Meta: Meta{ProgressToken: json.RawMessage(`"t1"`), LogLevel: "warning"}}
	p := &progress{q: q}
	ev := func(method, params string) store.CallEvent {
		return store.CallEvent{Method: method, Params: json.RawMessage(params)}
	}
	p.relay([]store.CallEvent{
		ev(store.EventProgress, `{"progress":0,"total":100,"message":"started"}`),
		ev(store.EventLog, `{"level":"info","data":"below the level"}`),
		ev(store.EventProgress, `{"progress":50,"total":100}`),
		ev(store.EventLog, `{"level":"error","logger":"db","data":{"lost":2}}`),
	})
	p.say("Waiting for ada to answer in Rounds")
	p.relay([]store.CallEvent{
		ev(store.EventProgress, `{"progress":0,"total":10,"message":"again"}`),
		ev(store.EventProgress, `{"progress":60,"total":100}`),
	})
	var got []string
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatal(err)
		}
		if m.Method == "notifications/message" {
			got = append(got, fmt.Sprintf("log %v %v %v", m.Params["level"], m.Params["logger"], m.Params["data"]))
			continue
		}
		got = append(got, fmt.Sprintf("%v %v/%v %v", m.Params["progressToken"], m.Params["progress"], m.Params["total"], m.Params["message"]))
	}
	want := []string{
		"t1 0/100 started",
		"t1 50/100 <nil>",
		"log error db map[lost:2]",
		"t1 51/<nil> Waiting for ada to answer in Rounds",
		"t1 52/<nil> again",
		"t1 60/100 <nil>",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the agent heard\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

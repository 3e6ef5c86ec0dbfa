package journeys

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcptest"
)

// everythingEnv registers the go-sdk's conformance everything-server twice:
// as "everything", with sampling and roots on and two roots configured, and
// as "plain", with both off.
func everythingEnv(t *testing.T) map[string]string {
	t.Helper()
	url := mcptest.Everything(t)
	return map[string]string{
		"MCP_SERVERS": "everything[sampling,roots]=" + url + ",plain=" + url,
		"MCP_ROOTS":   "everything=file:///srv/data|Data;file:///home/user|Home",
	}
}

// start begins a call of any method through the API.
func (c *client) start(base, body string) apiCall {
	c.t.Helper()
	status, b := c.do("POST", base+"/api/v1/calls", "application/json", body)
	if status != http.StatusCreated {
		c.t.Fatalf("start %s: %d %s", body, status, b)
	}
	var call apiCall
	if err := json.Unmarshal(b, &call); err != nil {
		c.t.Fatal(err)
	}
	return call
}

// asked waits for round seq and returns its input requests by key, each as
// its method and params.
func (c *client) asked(base, id string, seq int) map[string]struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
} {
	c.t.Helper()
	call := c.waitFor(base, id, 10*time.Second, func(a apiCall) bool { return roundIs(seq)(a) || isDone(a) })
	if call.Status != "input_required" {
		c.t.Fatalf("status = %s, error = %+v, result = %s; want round %d", call.Status, call.Error, call.Result, seq)
	}
	out := map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}{}
	for key, raw := range call.Round.InputRequests {
		v := out[key]
		if err := json.Unmarshal(raw, &v); err != nil {
			c.t.Fatal(err)
		}
		out[key] = v
	}
	return out
}

func (c *client) mustAnswer(base, id string, seq int, responses string) {
	c.t.Helper()
	if status, body := c.answer(base, id, seq, responses); status != http.StatusAccepted {
		c.t.Fatalf("answer round %d: %d %s", seq, status, body)
	}
}

const humanReply = `{"role":"assistant","content":{"type":"text","text":"%s"},"model":"human","stopReason":"endTurn"}`

// TestConformanceSurfaceAPI runs the conformance server's sampling, roots,
// multi-round and prompt scenarios through the API.
func TestConformanceSurfaceAPI(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, everythingEnv(t), nil)
	c := newClient(t, db)

	t.Run("test_input_required_result_sampling", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"everything","tool":"test_input_required_result_sampling"}`)
		asked := c.asked(inst.URL, call.ID, 1)
		if q := asked["capital_question"]; q.Method != "sampling/createMessage" || !strings.Contains(string(q.Params), "capital of France") {
			t.Fatalf("asked %+v; want the sampling request", asked)
		}
		// The same rules as the page: an empty reply, or one from the user, is refused.
		for _, bad := range []string{fmt.Sprintf(humanReply, " "), `{"role":"user","content":{"type":"text","text":"Paris"},"model":"human"}`, `{"action":"accept"}`} {
			if status, body := c.answer(inst.URL, call.ID, 1, `{"capital_question":`+bad+`}`); status != http.StatusUnprocessableEntity {
				t.Errorf("answer %s: %d %s, want 422", bad, status, body)
			}
		}
		c.mustAnswer(inst.URL, call.ID, 1, `{"capital_question":`+fmt.Sprintf(humanReply, "Paris")+`}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if got := resultText(t, done.Result); done.Status != "complete" || got != "Sampling response: Paris" {
			t.Errorf("status %s, result %q; want complete and the reply", done.Status, got)
		}
	})

	t.Run("test_input_required_result_list_roots", func(t *testing.T) {
		// A round of roots only is answered by the engine, at once.
		call := c.start(inst.URL, `{"server":"everything","tool":"test_input_required_result_list_roots"}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		want := "Client exposed 2 root(s): file:///srv/data, file:///home/user"
		if got := resultText(t, done.Result); done.Status != "complete" || got != want {
			t.Fatalf("status %s, result %q, error %+v; want %q", done.Status, got, done.Error, want)
		}
		// The round's history says what was answered, and that nobody was asked.
		c.login(inst.URL, "admin", adminPassword)
		_, page := c.do("GET", inst.URL+"/calls/"+call.ID, "", "")
		for _, want := range []string{"Answered automatically with 2 roots", "Data: file:///srv/data", "file:///home/user"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("call page lacks %q", want)
			}
		}
	})

	t.Run("test_input_required_result_multi_round", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"everything","tool":"test_input_required_result_multi_round"}`)
		if _, ok := c.asked(inst.URL, call.ID, 1)["step1"]; !ok {
			t.Fatal("round 1 does not ask step1")
		}
		c.mustAnswer(inst.URL, call.ID, 1, `{"step1":{"action":"accept","content":{"name":"Ada"}}}`)
		if _, ok := c.asked(inst.URL, call.ID, 2)["step2"]; !ok {
			t.Fatal("round 2 does not ask step2")
		}
		c.mustAnswer(inst.URL, call.ID, 2, `{"step2":{"action":"accept","content":{"color":"teal"}}}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if got := resultText(t, done.Result); got != "Multi-round complete: Ada likes teal" {
			t.Errorf("status %s, result %q", done.Status, got)
		}
	})

	t.Run("test_input_required_result_prompt", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"everything","method":"prompts/get","prompt":"test_input_required_result_prompt"}`)
		if call.Status != "queued" {
			t.Errorf("status = %s", call.Status)
		}
		if q := c.asked(inst.URL, call.ID, 1)["user_context"]; q.Method != "elicitation/create" {
			t.Fatalf("asked %+v; want user_context", q)
		}
		c.mustAnswer(inst.URL, call.ID, 1, `{"user_context":{"action":"accept","content":{"context":"a rainy Tuesday"}}}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		// The result is the server's GetPromptResult, as it sent it.
		var got struct {
			Method      string `json:"method"`
			Prompt      string `json:"prompt"`
			Description string `json:"description"`
			Messages    []struct {
				Role    string `json:"role"`
				Content struct {
					Type, Text string
				} `json:"content"`
			} `json:"messages"`
		}
		_, body := c.do("GET", inst.URL+"/api/v1/calls/"+call.ID, "", "")
		var envelope struct {
			Method string          `json:"method"`
			Prompt string          `json:"prompt"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(body, &envelope); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(envelope.Result, &got); err != nil {
			t.Fatal(err)
		}
		if done.Status != "complete" || envelope.Method != "prompts/get" || envelope.Prompt != "test_input_required_result_prompt" ||
			len(got.Messages) != 1 || got.Messages[0].Role != "user" || got.Messages[0].Content.Text != "Context: a rainy Tuesday" {
			t.Errorf("call %s: %s", done.Status, body)
		}
	})

	t.Run("PromptArguments", func(t *testing.T) {
		status, body := c.do("POST", inst.URL+"/api/v1/calls", "application/json",
			`{"server":"everything","method":"prompts/get","prompt":"test_prompt_with_arguments","arguments":{"arg1":"a","arg3":"c"}}`)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"arg2"`) || !strings.Contains(string(body), `"arg3"`) {
			t.Errorf("missing and unknown arguments: %d %s; want 422 naming arg2 and arg3", status, body)
		}
		call := c.start(inst.URL, `{"server":"everything","method":"prompts/get","prompt":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if !strings.Contains(string(done.Result), "arg1='a', arg2='b'") {
			t.Errorf("result %s", done.Result)
		}
	})

	t.Run("ResourceRead", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"everything","method":"resources/read","uri":"test://static-binary"}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		var got struct {
			Contents []struct{ URI, MIMEType, Blob string } `json:"contents"`
		}
		if err := json.Unmarshal(done.Result, &got); err != nil || len(got.Contents) != 1 || got.Contents[0].Blob == "" {
			t.Fatalf("result %s: %v", done.Result, err)
		}
		if status, body := c.do("POST", inst.URL+"/api/v1/calls", "application/json", `{"server":"everything","method":"resources/read","uri":"no scheme"}`); status != http.StatusUnprocessableEntity {
			t.Errorf("a relative URI: %d %s, want 422", status, body)
		}
	})

	t.Run("ErrUndeclaredSampling", func(t *testing.T) {
		// "plain" has sampling off: a server asking for it anyway fails the
		// call at once, saying why, rather than leaving it waiting.
		call := c.start(inst.URL, `{"server":"plain","tool":"test_input_required_result_sampling"}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if done.Status != "failed" || done.Error == nil || !strings.Contains(done.Error.Message, "sampling") ||
			!strings.Contains(done.Error.Message, "did not declare") {
			t.Errorf("status %s, error %+v; want a failure naming undeclared sampling", done.Status, done.Error)
		}
	})

	t.Run("DeclaredOnlyWhereOn", func(t *testing.T) {
		// The capabilities tool asks for what the client declared.
		for server, want := range map[string][]string{"everything": {"client_roots", "greeting", "user_name"}, "plain": {"user_name"}} {
			call := c.start(inst.URL, `{"server":"`+server+`","tool":"test_input_required_result_capabilities"}`)
			asked := c.waitFor(inst.URL, call.ID, 10*time.Second, func(a apiCall) bool { return roundIs(1)(a) || isDone(a) })
			if asked.Round == nil {
				t.Fatalf("%s: %+v; want a round", server, asked)
			}
			var keys []string
			for k := range asked.Round.InputRequests {
				keys = append(keys, k)
			}
			if slices.Sort(keys); !slices.Equal(keys, want) {
				t.Errorf("%s: asked %v, want %v", server, keys, want)
			}
		}
	})
}

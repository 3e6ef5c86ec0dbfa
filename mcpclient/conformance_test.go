package mcpclient_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
)

// answerAll builds inputResponses for every question of a round, the way a
// person (or our roots configuration) would.
func answerAll(t *testing.T, round *mcpclient.Round, form map[string]any) json.RawMessage {
	t.Helper()
	responses := map[string]any{}
	for _, q := range round.Questions {
		switch q.Kind {
		case mcpclient.KindForm:
			responses[q.Key] = map[string]any{"action": "accept", "content": form}
		case mcpclient.KindSampling:
			responses[q.Key] = map[string]any{
				"role": "assistant", "model": "human", "stopReason": "endTurn",
				"content": map[string]any{"type": "text", "text": "Paris"},
			}
		case mcpclient.KindRoots:
			responses[q.Key] = map[string]any{"roots": []any{map[string]any{"uri": "file:///srv/data", "name": "data"}}}
		default:
			t.Fatalf("unexpected question kind %q", q.Kind)
		}
	}
	b, err := json.Marshal(responses)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func resultText(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Messages []struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	for _, m := range r.Messages {
		parts = append(parts, m.Content.Text)
	}
	return strings.Join(parts, "\n")
}

func TestEverythingServer(t *testing.T) {
	url := mcptest.Everything(t)
	all := mcpclient.Server{URL: url, Capabilities: mcpclient.Capabilities{FormElicitation: true, Sampling: true, Roots: true}}

	for _, tc := range []struct {
		name   string
		req    mcpclient.Request
		form   map[string]any
		rounds int
		want   string
	}{
		{"Elicitation", mcpclient.Request{Name: "test_input_required_result_elicitation"}, map[string]any{"name": "Ada"}, 1, "Hello, Ada!"},
		{"RequestState", mcpclient.Request{Name: "test_input_required_result_request_state"}, map[string]any{"ok": true}, 1, "state-ok"},
		{"TamperedState", mcpclient.Request{Name: "test_input_required_result_tampered_state"}, map[string]any{"ok": true}, 1, "state-ok"},
		{"MultiRound", mcpclient.Request{Name: "test_input_required_result_multi_round"}, map[string]any{"name": "Ada", "color": "teal"}, 2, "Ada likes teal"},
		{"MultipleInputs", mcpclient.Request{Name: "test_input_required_result_multiple_inputs"}, map[string]any{"name": "Ada"}, 1, "Paris Ada — 1 root(s) visible"},
		{"Sampling", mcpclient.Request{Name: "test_input_required_result_sampling"}, nil, 1, "Sampling response: Paris"},
		{"ListRoots", mcpclient.Request{Name: "test_input_required_result_list_roots"}, nil, 1, "file:///srv/data"},
		{"Prompt", mcpclient.Request{Method: mcpclient.MethodGetPrompt, Name: "test_input_required_result_prompt"}, map[string]any{"context": "tests"}, 1, "Context: tests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient()
			out, err := c.Send(ctx(t), all, tc.req, nil)
			rounds := 0
			for err == nil && out.Round != nil {
				rounds++
				if rounds > 5 {
					t.Fatal("too many rounds")
				}
				out, err = c.Send(ctx(t), all, tc.req, &mcpclient.Answers{
					InputResponses: answerAll(t, out.Round, tc.form),
					RequestState:   out.Round.RequestState,
				})
			}
			if err != nil {
				t.Fatal(err)
			}
			if rounds != tc.rounds {
				t.Errorf("rounds = %d, want %d", rounds, tc.rounds)
			}
			if got := resultText(t, out.Result); !strings.Contains(got, tc.want) {
				t.Errorf("result %q does not contain %q", got, tc.want)
			}
			if out.Protocol != mcpclient.ProtocolStateless {
				t.Errorf("protocol = %q", out.Protocol)
			}
		})
	}

	t.Run("ErrUndeclaredSampling", func(t *testing.T) {
		_, err := newClient().Send(ctx(t), forms(url), mcpclient.Request{Name: "test_input_required_result_multiple_inputs"}, nil)
		var undeclared *mcpclient.UndeclaredError
		if !errors.As(err, &undeclared) {
			t.Fatalf("err = %v, want UndeclaredError", err)
		}
	})

	t.Run("ListTools", func(t *testing.T) {
		tools, err := newClient().ListTools(ctx(t), forms(url))
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, tool := range tools.Tools {
			found = found || tool.Name == "test_input_required_result_multi_round"
		}
		if !found {
			t.Errorf("multi_round not among %d tools", len(tools.Tools))
		}
	})
}

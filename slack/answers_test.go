package slack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/slack"
	"github.com/mcp-rounds/rounds/slack/slackfake"
)

// endpoint is a minimal interactions endpoint: it reads the payload with
// slack-go and answers a view_submission with what reply returns.
type endpoint struct {
	mu    sync.Mutex
	reply func(goslack.InteractionCallback) any
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var cb goslack.InteractionCallback
	if err := json.Unmarshal([]byte(r.FormValue("payload")), &cb); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if v := e.reply(cb); v != nil {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}

// submitThroughSlack posts a's message to the fake, presses Answer, opens
// the modal, submits answers (by block_id), and returns what the endpoint
// answered, with the values Values read from the submission.
func submitThroughSlack(t *testing.T, a slack.Ask, answers map[string]any, check func(goslack.InteractionCallback) any) *slackfake.Sent {
	t.Helper()
	f := slackfake.New(t)
	f.AddChannel("C1")
	f.AddUser(slackfake.User{ID: "U1", Name: "ada"})
	e := &endpoint{reply: func(goslack.InteractionCallback) any { return nil }}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	f.InteractionURL = srv.URL
	api := goslack.New(slackfake.BotToken, goslack.OptionAPIURL(f.APIURL()))
	m := slack.NewMessage(a)
	if _, _, err := api.PostMessage("C1", goslack.MsgOptionText(m.Text, false), goslack.MsgOptionBlocks(m.Blocks...)); err != nil {
		t.Fatal(err)
	}
	press, err := f.Press("U1", f.Messages()[0], slack.ActionAnswer)
	if err != nil {
		t.Fatal(err)
	}
	v, err := slack.Modal(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.OpenView(press.TriggerID(), v); err != nil {
		t.Fatalf("views.open: %v (%v)", err, f.Violations())
	}
	sub, err := f.Submit("U1", f.Views()[0], answers)
	if err != nil {
		t.Fatal(err)
	}
	e.reply = check
	s, err := f.Send(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
	return s
}

// TestSubmitAllKinds: every kind of field, answered in the modal, comes
// back through Values and round.FormAnswer as the content the page would
// have sent, and the modal closes.
func TestSubmitAllKinds(t *testing.T) {
	raw, err := os.ReadFile("../forms/testdata/slack/schemas/all-kinds.json")
	if err != nil {
		t.Fatal(err)
	}
	reqs := inputRequests(t, raw)
	a := askFor(t, "Plan the release", reqs)
	at := time.Date(2026, 12, 10, 9, 45, 0, 0, time.UTC).Unix()
	answers := map[string]any{
		"q0.f0": "Winter 26", "q0.f1": "line one\nline two", "q0.f2": "ada@example.com", "q0.f3": "https://x.example",
		"q0.f4": "0.5", "q0.f5": "7", "q0.f6": []string{}, "q0.f7": "1", "q0.f8": "6",
		"q0.f9": []string{"0", "1"}, "q0.f10": []string{"2", "4"}, "q0.f11": "2026-12-11", "q0.f12": at,
	}
	var content map[string]any
	s := submitThroughSlack(t, a, answers, func(cb goslack.InteractionCallback) any {
		call, r := pending(reqs)
		ans, err := round.FormAnswer(call, r, slack.Values(a.Questions, cb.View.State))
		if err != nil {
			t.Fatal(err)
		}
		if errs, rest := slack.FieldErrors(ans.Questions); len(errs)+len(rest) > 0 {
			return slack.ErrorsResponse(errs)
		}
		var resp map[string]struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if err := json.Unmarshal(ans.Responses, &resp); err != nil {
			t.Fatal(err)
		}
		content = resp["q"].Content
		return nil
	})
	if action, errs := s.ResponseAction(); action != "" || errs != nil {
		t.Fatalf("reply = %s %v, want the modal closed", action, errs)
	}
	want := `{"at":"2026-12-10T09:45:00Z","checks":["smoke","load"],"day":"2026-12-11","name":"Winter 26",` +
		`"notes":"line one\nline two","notify":false,"owner":"ada@example.com","page":"https://x.example","ratio":0.5,` +
		`"region":"us","replicas":7,"teams":["ops","ml"],"zone":"g"}`
	if got, _ := json.Marshal(content); string(got) != want {
		t.Errorf("content =\n%s\nwant\n%s", got, want)
	}
}

// TestSubmitFieldErrors: what Rounds' checks refuse comes back as Slack
// field errors keyed by the fields' block_ids, and the modal stays open.
func TestSubmitFieldErrors(t *testing.T) {
	raw, _ := os.ReadFile("../forms/testdata/slack/schemas/all-kinds.json")
	reqs := inputRequests(t, raw)
	a := askFor(t, "Plan the release", reqs)
	answers := map[string]any{"q0.f0": "W", "q0.f2": "not an address", "q0.f5": "0", "q0.f7": "0", "q0.f11": "2026-12-11",
		"q0.f10": []string{"0", "1", "2", "3"}}
	s := submitThroughSlack(t, a, answers, func(cb goslack.InteractionCallback) any {
		call, r := pending(reqs)
		ans, _ := round.FormAnswer(call, r, slack.Values(a.Questions, cb.View.State))
		errs, _ := slack.FieldErrors(ans.Questions)
		return slack.ErrorsResponse(errs)
	})
	action, errs := s.ResponseAction()
	if action != "errors" {
		t.Fatalf("response_action = %q", action)
	}
	for _, id := range []string{"q0.f0", "q0.f2", "q0.f5", "q0.f10"} {
		if errs[id] == "" {
			t.Errorf("no error on %s; errors = %v", id, errs)
		}
	}
	if errs["q0.f7"] != "" || errs["q0.f11"] != "" {
		t.Errorf("errors on good answers: %v", errs)
	}
}

// TestQuickAnswers: an approval, a yes/no and a single choice are answered
// by the message's buttons, and Decline and Cancel decline or cancel.
func TestQuickAnswers(t *testing.T) {
	approval := `{"q":{"method":"elicitation/create","params":{"message":"Deploy?","requestedSchema":{"type":"object","properties":{}}}}}`
	yesNo := `{"q":{"method":"elicitation/create","params":{"message":"Restart?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}}`
	choice := `{"q":{"method":"elicitation/create","params":{"message":"Which?","requestedSchema":{"type":"object","properties":{"env":{"type":"string","enum":["staging","prod"]}},"required":["env"]}}}}`
	for _, tc := range []struct {
		name, reqs, action string
		buttons            []string
		want               string
	}{
		{"Approve", approval, slack.ActionApprove, []string{"Approve", "Decline", "Open in Rounds"}, `{"q":{"action":"accept","content":{}}}`},
		{"Yes", yesNo, slack.ActionYes, []string{"Yes", "No", "Decline", "Open in Rounds"}, `{"q":{"action":"accept","content":{"ok":true}}}`},
		{"No", yesNo, slack.ActionNo, nil, `{"q":{"action":"accept","content":{"ok":false}}}`},
		{"Choice", choice, slack.ActionChoosePrefix + "1", []string{"staging", "prod", "Decline", "Open in Rounds"}, `{"q":{"action":"accept","content":{"env":"prod"}}}`},
		{"Decline", choice, slack.ActionDecline, nil, `{"q":{"action":"decline"}}`},
		{"Cancel", yesNo, slack.ActionCancel, nil, `{"q":{"action":"cancel"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := askFor(t, "Quick", tc.reqs)
			m := slack.NewMessage(a)
			checkMessage(t, m)
			if tc.buttons != nil {
				if got := buttonTexts(t, m); strings.Join(got, "|") != strings.Join(tc.buttons, "|") {
					t.Errorf("buttons = %v, want %v", got, tc.buttons)
				}
			}
			b, ok := slack.ParseButton(tc.action)
			if !ok {
				t.Fatalf("ParseButton(%q) refused", tc.action)
			}
			values, ok := slack.QuickValues(a.Questions, b)
			if !ok {
				t.Fatal("QuickValues refused")
			}
			call, r := pending(tc.reqs)
			ans, err := round.FormAnswer(call, r, values)
			if err != nil || !ans.Fits() {
				t.Fatalf("answer does not fit: %v %+v", err, ans)
			}
			if string(ans.Responses) != tc.want {
				t.Errorf("responses = %s, want %s", ans.Responses, tc.want)
			}
		})
	}
	a := askFor(t, "Quick", approval)
	if _, ok := slack.QuickValues(a.Questions, slack.Button{Action: slack.ActionYes, Choice: -1}); ok {
		t.Error("a Yes button answered an approval (a stale message's button must not)")
	}
	if _, ok := slack.ParseButton("rounds_choose_01"); ok {
		t.Error("ParseButton read a choice index with a leading zero")
	}
}

// buttonTexts are the texts of a message's buttons, in order.
func buttonTexts(t *testing.T, m slack.Message) []string {
	var out []string
	for _, b := range m.Blocks {
		if ab, ok := b.(*goslack.ActionBlock); ok {
			for _, e := range ab.Elements.ElementSet {
				if btn, ok := e.(*goslack.ButtonBlockElement); ok {
					out = append(out, btn.Text.Text)
				}
			}
		}
	}
	return out
}

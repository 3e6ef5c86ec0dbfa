package slackfake_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/slack/slackfake"
)

// app is a stand-in for the app's interactions endpoint: it checks the
// signature with slack-go's verifier, parses the payload with slack-go, and
// answers what reply says.
type app struct {
	mu       sync.Mutex
	got      []slack.InteractionCallback
	retries  []string
	refused  int
	reply    func(slack.InteractionCallback) any
	fakeSent *slackfake.Fake
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sv, err := slack.NewSecretsVerifier(r.Header, slackfake.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.refused++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.Body = io.NopCloser(bytesReader(body))
	_ = r.ParseForm()
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(r.PostForm.Get("payload")), &cb); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	a.got = append(a.got, cb)
	a.retries = append(a.retries, r.Header.Get("X-Slack-Retry-Num"))
	if a.reply != nil {
		if v := a.reply(cb); v != nil {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
	}
}

func setup(t *testing.T) (*slackfake.Fake, *app, *slack.Client) {
	f := slackfake.New(t)
	f.AddChannel("C1")
	f.AddUser(slackfake.User{ID: "U1", Name: "ada", Email: "ada@example.com"})
	a := &app{}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	f.InteractionURL = srv.URL
	return f, a, client(f, slackfake.BotToken)
}

func testView() slack.ModalViewRequest {
	text := slack.NewPlainTextInputBlockElement(nil, "v")
	num := &slack.NumberInputBlockElement{Type: slack.METNumber, ActionID: "v", IsDecimalAllowed: false}
	sel := slack.NewOptionsSelectBlockElement("static_select", nil, "v",
		slack.NewOptionBlockObject("a", slack.NewTextBlockObject("plain_text", "A", false, false), nil),
		slack.NewOptionBlockObject("b", slack.NewTextBlockObject("plain_text", "B", false, false), nil))
	boxes := slack.NewCheckboxGroupsBlockElement("v",
		slack.NewOptionBlockObject("x", slack.NewTextBlockObject("plain_text", "X", false, false), nil),
		slack.NewOptionBlockObject("y", slack.NewTextBlockObject("plain_text", "Y", false, false), nil))
	return slack.ModalViewRequest{
		Type:       slack.VTModal,
		Title:      slack.NewTextBlockObject("plain_text", "Deploy", false, false),
		Submit:     slack.NewTextBlockObject("plain_text", "Send", false, false),
		CallbackID: "round",
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock("name", slack.NewTextBlockObject("plain_text", "Name", false, false), nil, text),
			slack.NewInputBlock("count", slack.NewTextBlockObject("plain_text", "Count", false, false), nil, num),
			slack.NewInputBlock("pick", slack.NewTextBlockObject("plain_text", "Pick", false, false), nil, sel),
			slack.NewInputBlock("boxes", slack.NewTextBlockObject("plain_text", "Boxes", false, false), nil, boxes),
		}},
	}
}

// TestPressOpenSubmit: a button press reaches the app signed, its trigger
// opens a modal once, and the submission carries state.values as Slack
// writes them; a reply with errors keeps the view open, an empty one closes it.
func TestPressOpenSubmit(t *testing.T) {
	f, a, api := setup(t)
	ctx := context.Background()
	if _, _, err := api.PostMessage("C1", slack.MsgOptionBlocks(approveBlocks...)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Press("U1", f.Messages()[0], "nope"); err == nil {
		t.Error("pressing a button the message lacks worked")
	}
	press, err := f.Press("U1", f.Messages()[0], "approve")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := f.Send(ctx, press); err != nil || s.Status != http.StatusOK {
		t.Fatalf("send = %+v, %v", s, err)
	}
	cb := a.got[0]
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "U1" || cb.ActionCallback.BlockActions[0].ActionID != "approve" ||
		cb.ActionCallback.BlockActions[0].Value != "r1" || cb.Container.MessageTs != f.Messages()[0].TS || cb.TriggerID == "" {
		t.Errorf("block_actions as parsed = %+v", cb)
	}
	vr, err := api.OpenView(cb.TriggerID, testView())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.OpenView(cb.TriggerID, testView()); err == nil || err.Error() != "exchanged_trigger_id" {
		t.Errorf("second open with one trigger: %v", err)
	}
	sub, err := f.Submit("U1", f.Views()[0], map[string]any{"name": "Ada", "count": "3", "pick": "b", "boxes": []string{"y"}})
	if err != nil {
		t.Fatal(err)
	}
	a.reply = func(slack.InteractionCallback) any {
		return map[string]any{"response_action": "errors", "errors": map[string]string{"count": "Too many"}}
	}
	s, err := f.Send(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if act, errs := s.ResponseAction(); act != "errors" || errs["count"] != "Too many" || f.Views()[0].Closed {
		t.Errorf("reply = %s %v, closed %v", act, errs, f.Views()[0].Closed)
	}
	got := a.got[1].View.State.Values
	if got["name"]["v"].Value != "Ada" || got["count"]["v"].Value != "3" || got["pick"]["v"].SelectedOption.Value != "b" ||
		len(got["boxes"]["v"].SelectedOptions) != 1 || got["boxes"]["v"].SelectedOptions[0].Value != "y" || a.got[1].View.ID != vr.ID {
		t.Errorf("state.values as parsed = %+v", got)
	}
	a.reply = nil
	if _, err := f.Resend(ctx, s, 1); err != nil {
		t.Fatal(err)
	}
	if a.retries[2] != "1" || a.got[2].View.ID != vr.ID {
		t.Errorf("resend: retry header %q", a.retries[2])
	}
	if _, err := f.Send(ctx, sub); err != nil || !f.Views()[0].Closed {
		t.Errorf("an empty reply did not close the view: %v", err)
	}
	if _, err := f.Submit("U1", f.Views()[0], map[string]any{"pick": "zzz"}); err == nil {
		t.Error("a choice outside the options was sent")
	}
}

// TestTriggerExpires: a trigger older than 3 seconds opens nothing.
func TestTriggerExpires(t *testing.T) {
	f, _, api := setup(t)
	if _, _, err := api.PostMessage("C1", slack.MsgOptionBlocks(approveBlocks...)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f.Now = func() time.Time { return now }
	press, _ := f.Press("U1", f.Messages()[0], "approve")
	now = now.Add(slackfake.TriggerTTL + time.Second)
	if _, err := api.OpenView(press.TriggerID(), testView()); err == nil || err.Error() != "expired_trigger_id" {
		t.Errorf("err = %v, want expired_trigger_id", err)
	}
}

// TestBadSignature: a wrong secret or a stale timestamp fails slack-go's check.
func TestBadSignature(t *testing.T) {
	f, a, api := setup(t)
	if _, _, err := api.PostMessage("C1", slack.MsgOptionBlocks(approveBlocks...)); err != nil {
		t.Fatal(err)
	}
	press, _ := f.Press("U1", f.Messages()[0], "approve")
	ctx := context.Background()
	for _, tc := range []struct {
		name, secret string
		at           time.Time
	}{
		{"WrongSecret", "not-the-secret", time.Now()},
		{"Stale", slackfake.SigningSecret, time.Now().Add(-6 * time.Minute)},
	} {
		s, err := f.SendSigned(ctx, press.Encode(), tc.secret, tc.at, nil)
		if err != nil || s.Status != http.StatusUnauthorized {
			t.Errorf("%s: status %v, %v", tc.name, s, err)
		}
	}
	if a.refused != 2 || len(a.got) != 0 {
		t.Errorf("refused %d, accepted %d", a.refused, len(a.got))
	}
}

func TestSign(t *testing.T) {
	// The worked example of "Verifying requests from Slack".
	body := []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
	got := slackfake.Sign("8f742231b10e8888abcd99yyyzzz85a5", 1531420618, body)
	if got != "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503" {
		t.Errorf("Sign = %s", got)
	}
}

// TestPressInViewAndResponseURL: a button in a modal sends block_actions
// from the view; a message button's response_url replaces the message.
func TestPressInViewAndResponseURL(t *testing.T) {
	f, a, api := setup(t)
	ctx := context.Background()
	if _, _, err := api.PostMessage("C1", slack.MsgOptionBlocks(approveBlocks...)); err != nil {
		t.Fatal(err)
	}
	press, _ := f.Press("U1", f.Messages()[0], "approve")
	v := testView()
	v.Blocks.BlockSet = append([]slack.Block{slack.NewActionBlock("top",
		slack.NewButtonBlockElement("decline", "r1", slack.NewTextBlockObject("plain_text", "Decline", false, false)))}, v.Blocks.BlockSet...)
	if _, err := api.OpenView(press.TriggerID(), v); err != nil {
		t.Fatal(err)
	}
	inView, err := f.PressInView("U1", f.Views()[0], "decline")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Send(ctx, inView); err != nil {
		t.Fatal(err)
	}
	cb := a.got[0]
	if cb.Container.Type != "view" || cb.View.ID != f.Views()[0].ID || cb.ActionCallback.BlockActions[0].ActionID != "decline" {
		t.Errorf("block_actions from a view = %+v", cb)
	}
	err = slack.PostWebhookContext(ctx, press["response_url"].(string), &slack.WebhookMessage{Text: "Approved", ReplaceOriginal: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := f.Messages()[0]; m.Text != "Approved" || len(m.Blocks) != 0 || m.Updated != 1 {
		t.Errorf("message after response_url = %+v", m)
	}
}

// TestSlowReply: a reply after Slack's 3 seconds is listed as late.
func TestSlowReply(t *testing.T) {
	f, a, api := setup(t)
	if _, _, err := api.PostMessage("C1", slack.MsgOptionBlocks(approveBlocks...)); err != nil {
		t.Fatal(err)
	}
	a.reply = func(slack.InteractionCallback) any {
		<-time.After(slackfake.ReplyTimeout + 100*time.Millisecond) // an app that works too long before replying
		return nil
	}
	press, _ := f.Press("U1", f.Messages()[0], "approve")
	s, err := f.Send(context.Background(), press)
	if err != nil {
		t.Fatal(err)
	}
	if late := f.Late(); s.Took <= slackfake.ReplyTimeout || len(late) != 1 || !strings.Contains(late[0], "block_actions replied after") {
		t.Errorf("took %s, late %v", s.Took, late)
	}
}

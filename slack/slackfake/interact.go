package slackfake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Payload is an interaction payload, as Slack sends it in payload=.
type Payload map[string]any

// Type is the payload's type: block_actions, view_submission, view_closed.
func (p Payload) Type() string { s, _ := p["type"].(string); return s }

// TriggerID is the trigger_id a views.open may use within TriggerTTL.
func (p Payload) TriggerID() string { s, _ := p["trigger_id"].(string); return s }

// ReplyTimeout is how long Slack waits for the app's reply to an
// interaction before it shows the person an error and retries.
const ReplyTimeout = 3 * time.Second

// Sent is what the app answered to one interaction.
type Sent struct {
	Status int
	Header http.Header
	Body   []byte
	Took   time.Duration // from sending to the whole reply, by the wall clock
	body   []byte        // the form body sent, for Resend
}

// ResponseAction reads a view_submission reply: its response_action and,
// for "errors", the messages by block_id. An empty 200 reply is "" (close).
func (s *Sent) ResponseAction() (action string, errs map[string]string) {
	var r struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if len(bytes.TrimSpace(s.Body)) > 0 {
		_ = json.Unmarshal(s.Body, &r)
	}
	return r.ResponseAction, r.Errors
}

// Sign computes X-Slack-Signature for a body sent at unix time ts:
// v0= and the hex HMAC-SHA256, keyed by the signing secret, of "v0:ts:body".
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func (f *Fake) userObject(id string) map[string]any {
	f.mu.Lock()
	u, ok := f.users[id]
	f.mu.Unlock()
	if !ok {
		u = User{ID: id, Name: id}
	}
	return map[string]any{"id": u.ID, "username": u.Name, "name": u.Name, "team_id": TeamID}
}

func (f *Fake) base(kind, userID string) Payload {
	return Payload{
		"type": kind, "team": map[string]any{"id": TeamID, "domain": "fake"},
		"user": f.userObject(userID), "api_app_id": AppID, "token": "fake-verification-token",
		"is_enterprise_install": false,
	}
}

// Press is the block_actions a user's press of the button actionID in the
// message m sends. It fails when m has no such button.
func (f *Fake) Press(userID string, m Message, actionID string) (Payload, error) {
	blockID, button, ok := findButton(m.Blocks, actionID)
	if !ok {
		return nil, fmt.Errorf("slackfake: message %s has no button %q", m.TS, actionID)
	}
	f.mu.Lock()
	trigger, now := f.trigger(), f.Now()
	f.mu.Unlock()
	action := map[string]any{
		"type": "button", "action_id": actionID, "block_id": blockID, "text": button["text"],
		"action_ts": fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000),
	}
	if v, has := button["value"]; has {
		action["value"] = v
	}
	p := f.base("block_actions", userID)
	p["trigger_id"] = trigger
	p["container"] = map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false}
	p["channel"] = map[string]any{"id": m.Channel}
	p["message"] = m.wire()
	p["response_url"] = f.Server.URL + "/response/" + m.Channel + "/" + m.TS
	p["actions"] = []any{action}
	p["state"] = map[string]any{"values": map[string]any{}}
	return p, nil
}

// Late lists the replies to Send slower than ReplyTimeout. It is kept
// apart from Violations because it depends on the machine's load.
func (f *Fake) Late() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.late...)
}

// PressInView is the block_actions a user's press of the button actionID
// in an open view sends (container type "view"). It fails when the view
// has no such button.
func (f *Fake) PressInView(userID string, v View, actionID string) (Payload, error) {
	blocks, _ := v.View["blocks"].([]any)
	blockID, button, ok := findButton(blocks, actionID)
	if !ok {
		return nil, fmt.Errorf("slackfake: view %s has no button %q", v.ID, actionID)
	}
	f.mu.Lock()
	trigger, now := f.trigger(), f.Now()
	f.mu.Unlock()
	action := map[string]any{
		"type": "button", "action_id": actionID, "block_id": blockID, "text": button["text"],
		"value": button["value"], "action_ts": fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000),
	}
	p := f.base("block_actions", userID)
	p["trigger_id"] = trigger
	p["container"] = map[string]any{"type": "view", "view_id": v.ID}
	p["view"] = v.wire()
	p["actions"] = []any{action}
	return p, nil
}

// findButton finds a button by action_id in actions blocks and section accessories.
func findButton(blocks []any, actionID string) (blockID string, button map[string]any, ok bool) {
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		els, _ := bm["elements"].([]any)
		if acc, has := bm["accessory"]; has {
			els = append(els, acc)
		}
		for _, e := range els {
			em, _ := e.(map[string]any)
			if em["type"] == "button" && em["action_id"] == actionID {
				id, _ := bm["block_id"].(string)
				return id, em, true
			}
		}
	}
	return "", nil, false
}

// Submit is the view_submission a user's submit of view v sends, with
// answers by block_id: a string for text, number, e-mail, URL, date
// (YYYY-MM-DD) and one choice (the option's value); a []string for
// several choices; an int64 UNIX time for a date-time. An input not in
// answers is sent empty, as Slack sends it. It fails on an answer for no
// input block, or a choice that is not an option.
func (f *Fake) Submit(userID string, v View, answers map[string]any) (Payload, error) {
	values, err := stateValues(v.View, answers)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	trigger := f.trigger()
	f.mu.Unlock()
	view := v.wire()
	view["state"] = map[string]any{"values": values}
	p := f.base("view_submission", userID)
	p["trigger_id"] = trigger
	p["view"] = view
	p["response_urls"] = []any{}
	return p, nil
}

// Close is the view_closed Slack sends when the user closes v (the view
// must set notify_on_close).
func (f *Fake) Close(userID string, v View) Payload {
	p := f.base("view_closed", userID)
	p["view"] = v.wire()
	p["is_cleared"] = false
	return p
}

// Encode is the form body Slack posts: payload= and the JSON.
func (p Payload) Encode() []byte {
	b, _ := json.Marshal(p)
	return []byte(url.Values{"payload": {string(b)}}.Encode())
}

// Send posts p to InteractionURL as Slack does, signed now, and applies a
// view_submission's reply to the view (closed, updated, or kept with
// errors). A reply slower than ReplyTimeout is listed in Late: Slack
// would have shown the person an error and retried.
func (f *Fake) Send(ctx context.Context, p Payload) (*Sent, error) {
	s, err := f.SendSigned(ctx, p.Encode(), SigningSecret, f.Now(), nil)
	if err != nil {
		return nil, err
	}
	if s.Took > ReplyTimeout {
		f.mu.Lock()
		f.late = append(f.late, fmt.Sprintf("%s replied after %s, over Slack's %s", p.Type(), s.Took.Round(time.Millisecond), ReplyTimeout))
		f.mu.Unlock()
	}
	f.afterReply(p, s.Status, s.Body)
	return s, nil
}

// Resend sends the same body again as Slack's retry does after no reply
// within 3 seconds: freshly signed, with X-Slack-Retry-Num.
func (f *Fake) Resend(ctx context.Context, s *Sent, retryNum int) (*Sent, error) {
	h := http.Header{}
	h.Set("X-Slack-Retry-Num", strconv.Itoa(retryNum))
	h.Set("X-Slack-Retry-Reason", "http_timeout")
	return f.SendSigned(ctx, s.body, SigningSecret, f.Now(), h)
}

// SendSigned posts a body to InteractionURL signed with secret at time at,
// plus any extra headers: a test of refused requests passes a wrong secret
// or an old time.
func (f *Fake) SendSigned(ctx context.Context, body []byte, secret string, at time.Time, extra http.Header) (*Sent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.InteractionURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("X-Slack-Signature", Sign(secret, at.Unix(), body))
	for k, v := range extra {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	return &Sent{Status: resp.StatusCode, Header: resp.Header, Body: got, Took: time.Since(start), body: body}, nil
}

// afterReply does to the view what the reply to its submission asks.
func (f *Fake) afterReply(p Payload, status int, body []byte) {
	if p.Type() != "view_submission" || status != http.StatusOK {
		return
	}
	view, _ := p["view"].(map[string]any)
	id, _ := view["id"].(string)
	s := &Sent{Body: body}
	action, _ := s.ResponseAction()
	var r struct {
		View map[string]any `json:"view"`
	}
	_ = json.Unmarshal(body, &r)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.views {
		switch {
		case action == "clear":
			v.Closed = true
		case v.ID != id:
		case action == "" || action == "push":
			v.Closed = action == ""
		case action == "update":
			if problems := CheckView(r.View); len(problems) > 0 {
				f.breach("response_action update", problems)
				continue
			}
			v.View, v.Hash = r.View, hash(r.View)
		}
	}
}

package slackfake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// handler is one Web API method: arguments in, the fields of an ok answer out.
type handler func(args map[string]any) (map[string]any, *apiError)

func (f *Fake) methods() map[string]handler {
	return map[string]handler{
		"auth.test":             f.authTest,
		"chat.postMessage":      f.postMessage,
		"chat.update":           f.update,
		"chat.postEphemeral":    f.postEphemeral,
		"views.open":            f.viewsOpen,
		"views.update":          f.viewsUpdate,
		"users.lookupByEmail":   f.lookupByEmail,
		"conversations.open":    f.conversationsOpen,
		"apps.connections.open": f.connectionsOpen,
	}
}

func (f *Fake) authTest(map[string]any) (map[string]any, *apiError) {
	return map[string]any{"url": "https://fake.slack.com/", "team": "Fake", "user": "rounds",
		"team_id": TeamID, "user_id": BotUserID, "bot_id": "B0BOT"}, nil
}

// ts makes a message timestamp as Slack writes them: seconds.sequence.
func (f *Fake) ts() string {
	return fmt.Sprintf("%d.%06d", f.Now().Unix(), f.next())
}

// channel resolves where a message goes: a known channel, an opened
// conversation, or a user's id (their direct messages with the app).
func (f *Fake) channel(id string) (string, *apiError) {
	switch {
	case id == "":
		return "", refuse("channel_not_found")
	case f.channels[id]:
		return id, nil
	}
	if _, ok := f.users[id]; ok {
		return f.dm(id), nil
	}
	return "", refuse("channel_not_found")
}

// dm is the id of the app's direct conversation with a user.
func (f *Fake) dm(userID string) string {
	id := "D" + strings.TrimPrefix(userID, "U")
	f.channels[id] = true
	return id
}

// blocksArg checks the blocks of a message; ok is false when they broke a
// rule, already recorded.
func (f *Fake) blocksArg(method string, args map[string]any) ([]any, *apiError) {
	raw, has := args["blocks"]
	if !has {
		return nil, nil
	}
	blocks, ok := raw.([]any)
	if !ok {
		return nil, f.breach(method, []string{"blocks must be an array"})
	}
	if problems := CheckMessage(blocks); len(problems) > 0 {
		return nil, f.breach(method, problems)
	}
	return blocks, nil
}

// breach records Block Kit problems and refuses as Slack does.
func (f *Fake) breach(method string, problems []string) *apiError {
	for _, p := range problems {
		f.violations = append(f.violations, Violation{Method: method, Problem: p})
	}
	code := "invalid_blocks"
	if strings.HasPrefix(method, "views.") {
		code = "invalid_arguments"
	}
	return refuse(code)
}

func textArg(args map[string]any) string { s, _ := args["text"].(string); return s }

func (f *Fake) postMessage(args map[string]any) (map[string]any, *apiError) {
	ch, e := f.channel(str(args, "channel"))
	if e != nil {
		return nil, e
	}
	blocks, e := f.blocksArg("chat.postMessage", args)
	if e != nil {
		return nil, e
	}
	text := textArg(args)
	if text == "" && len(blocks) == 0 {
		return nil, refuse("no_text")
	}
	if len([]rune(text)) > 40000 {
		return nil, refuse("msg_too_long")
	}
	m := &Message{Channel: ch, TS: f.ts(), Text: text, ThreadTS: str(args, "thread_ts"), Blocks: blocks}
	f.messages = append(f.messages, m)
	return map[string]any{"channel": ch, "ts": m.TS, "message": m.wire()}, nil
}

func (m *Message) wire() map[string]any {
	return map[string]any{"type": "message", "user": BotUserID, "bot_id": "B0BOT",
		"text": m.Text, "ts": m.TS, "blocks": m.Blocks}
}

func (f *Fake) update(args map[string]any) (map[string]any, *apiError) {
	ch, ts := str(args, "channel"), str(args, "ts")
	var m *Message
	for _, x := range f.messages {
		if x.Channel == ch && x.TS == ts {
			m = x
		}
	}
	if m == nil {
		if !f.channels[ch] {
			return nil, refuse("channel_not_found")
		}
		return nil, refuse("message_not_found")
	}
	blocks, e := f.blocksArg("chat.update", args)
	if e != nil {
		return nil, e
	}
	if _, has := args["blocks"]; has {
		m.Blocks = blocks
	}
	if _, has := args["text"]; has {
		m.Text = textArg(args)
	}
	m.Updated++
	return map[string]any{"channel": ch, "ts": ts, "text": m.Text, "message": m.wire()}, nil
}

func (f *Fake) postEphemeral(args map[string]any) (map[string]any, *apiError) {
	ch, e := f.channel(str(args, "channel"))
	if e != nil {
		return nil, e
	}
	user := str(args, "user")
	if _, ok := f.users[user]; !ok {
		return nil, refuse("user_not_in_channel")
	}
	blocks, e := f.blocksArg("chat.postEphemeral", args)
	if e != nil {
		return nil, e
	}
	if textArg(args) == "" && len(blocks) == 0 {
		return nil, refuse("no_text")
	}
	f.ephemerals = append(f.ephemerals, Ephemeral{Channel: ch, User: user, Text: textArg(args), Blocks: blocks})
	return map[string]any{"message_ts": f.ts()}, nil
}

// trigger issues a trigger_id, as an interaction carries one.
func (f *Fake) trigger() string {
	id := fmt.Sprintf("%d.%d.fake%06d", f.Now().Unix(), f.next(), f.seq)
	f.triggers[id] = f.Now()
	return id
}

func (f *Fake) viewsOpen(args map[string]any) (map[string]any, *apiError) {
	tid := str(args, "trigger_id")
	issued, ok := f.triggers[tid]
	switch {
	case tid == "":
		return nil, refuse("invalid_arguments")
	case !ok:
		return nil, refuse("invalid_trigger_id")
	case issued.IsZero():
		return nil, refuse("exchanged_trigger_id")
	case f.Now().Sub(issued) > TriggerTTL:
		return nil, refuse("expired_trigger_id")
	}
	view, e := f.viewArg("views.open", args)
	if e != nil {
		return nil, e
	}
	f.triggers[tid] = time.Time{} // a trigger opens one view
	v := &View{ID: fmt.Sprintf("V%08d", f.next()), View: view}
	v.ExternalID, _ = view["external_id"].(string)
	v.Hash = hash(view)
	f.views = append(f.views, v)
	return map[string]any{"view": v.wire()}, nil
}

func (f *Fake) viewArg(method string, args map[string]any) (map[string]any, *apiError) {
	view, ok := args["view"].(map[string]any)
	if !ok {
		return nil, refuse("invalid_arguments")
	}
	if problems := CheckView(view); len(problems) > 0 {
		return nil, f.breach(method, problems)
	}
	return view, nil
}

func (f *Fake) viewsUpdate(args map[string]any) (map[string]any, *apiError) {
	id, ext := str(args, "view_id"), str(args, "external_id")
	var v *View
	for _, x := range f.views {
		if (id != "" && x.ID == id) || (ext != "" && x.ExternalID == ext) {
			v = x
		}
	}
	if v == nil {
		return nil, refuse("not_found")
	}
	if h := str(args, "hash"); h != "" && h != v.Hash {
		return nil, refuse("hash_conflict")
	}
	view, e := f.viewArg("views.update", args)
	if e != nil {
		return nil, e
	}
	v.View, v.Hash = view, hash(view)
	return map[string]any{"view": v.wire()}, nil
}

func (v *View) wire() map[string]any {
	out := map[string]any{}
	for k, x := range v.View {
		out[k] = x
	}
	out["id"], out["team_id"], out["hash"] = v.ID, TeamID, v.Hash
	out["app_id"], out["bot_id"], out["root_view_id"] = AppID, "B0BOT", v.ID
	out["state"] = map[string]any{"values": map[string]any{}}
	return out
}

func hash(view map[string]any) string {
	b, _ := json.Marshal(view)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func (f *Fake) lookupByEmail(args map[string]any) (map[string]any, *apiError) {
	email := strings.ToLower(str(args, "email"))
	if email == "" {
		return nil, refuse("invalid_arguments")
	}
	for _, u := range f.users {
		if strings.ToLower(u.Email) == email {
			return map[string]any{"user": map[string]any{
				"id": u.ID, "team_id": TeamID, "name": u.Name, "real_name": u.RealName,
				"profile": map[string]any{"email": u.Email, "real_name": u.RealName, "display_name": u.Name},
			}}, nil
		}
	}
	return nil, refuse("users_not_found")
}

func (f *Fake) conversationsOpen(args map[string]any) (map[string]any, *apiError) {
	if ch := str(args, "channel"); ch != "" {
		if !f.channels[ch] {
			return nil, refuse("channel_not_found")
		}
		return map[string]any{"channel": map[string]any{"id": ch}}, nil
	}
	users := strings.Split(str(args, "users"), ",")
	if len(users) != 1 || users[0] == "" {
		return nil, refuse("users_list_not_supplied")
	}
	if _, ok := f.users[users[0]]; !ok {
		return nil, refuse("user_not_found")
	}
	return map[string]any{"channel": map[string]any{"id": f.dm(users[0])}}, nil
}

func (f *Fake) connectionsOpen(map[string]any) (map[string]any, *apiError) {
	u := "ws" + strings.TrimPrefix(f.Server.URL, "http") + fmt.Sprintf("/socket?ticket=%d", f.next())
	return map[string]any{"url": u}, nil
}

// str reads a string argument; a JSON body may carry numbers as json.Number.
func str(args map[string]any, name string) string {
	switch v := args[name].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

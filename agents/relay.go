package agents

import (
	"encoding/json"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// A held request tells its agent, on its stream, what the server behind
// says while it works: each notifications/progress (when the request
// asked for progress), each notifications/message of the level the agent
// asked for or above; and, between them, Rounds' own progress (who is
// asked in Rounds, and at the keepalive interval). The progress the agent
// hears always increases, as the spec wants: the server's is relayed as
// it sent it while it is above what the agent last heard; otherwise (a
// request of the server starting again at 0, after Rounds' own words) and
// for Rounds' own, the agent hears one more than last time.

// progress is what a held request has told its agent.
type progress struct {
	q *Request
	// last is the progress the agent last heard, once sent is true.
	last float64
	sent bool
	said string
}

// relay tells the agent what the server said, in order.
func (p *progress) relay(events []store.CallEvent) {
	for _, ev := range events {
		switch ev.Method {
		case store.EventProgress:
			p.server(ev.Params)
		case store.EventLog:
			p.log(ev.Params)
		}
	}
}

// server relays a server's notifications/progress params.
func (p *progress) server(params json.RawMessage) {
	var sp mcpclient.Progress
	if len(p.q.Meta.ProgressToken) == 0 || json.Unmarshal(params, &sp) != nil {
		return
	}
	if p.sent && sp.Progress <= p.last {
		p.send(p.last+1, nil, sp.Message)
		return
	}
	p.send(sp.Progress, sp.Total, sp.Message)
}

// log relays a server's notifications/message params, when of the level
// the agent asked for or above.
func (p *progress) log(params json.RawMessage) {
	var m mcpclient.LogMessage
	if p.q.Meta.LogLevel == "" || json.Unmarshal(params, &m) != nil || !mcpclient.LogAtLeast(m.Level, p.q.Meta.LogLevel) {
		return
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": m})
	_ = p.q.startStream().event(b)
}

// say sends msg, Rounds' own words, as progress when the request asked
// for progress and msg is news.
func (p *progress) say(msg string) {
	if msg == p.said || len(p.q.Meta.ProgressToken) == 0 {
		return
	}
	p.said = msg
	p.own(msg)
}

// keepalive says msg again as progress, or sends a comment.
func (p *progress) keepalive(msg string) {
	if len(p.q.Meta.ProgressToken) > 0 {
		p.said = msg
		p.own(msg)
		return
	}
	_ = p.q.startStream().comment()
}

// own sends Rounds' words msg, one above what the agent last heard.
func (p *progress) own(msg string) {
	next := float64(1)
	if p.sent {
		next = p.last + 1
	}
	p.send(next, nil, msg)
}

func (p *progress) send(value float64, total *float64, msg string) {
	p.last, p.sent = value, true
	params := map[string]any{"progressToken": p.q.Meta.ProgressToken, "progress": value}
	if total != nil {
		params["total"] = *total
	}
	if msg != "" {
		params["message"] = msg
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
	_ = p.q.startStream().event(b)
}

package agents

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// Some methods belong to a session alone: 2026-07-28 removed them, and a
// stateless agent hears that they are not found.

// sessionMethods answers the methods only a session has.
func (d *Door) sessionMethods() map[string]Method {
	return map[string]Method{
		"logging/setLevel":      d.setLogLevel,
		"resources/subscribe":   d.subscribe,
		"resources/unsubscribe": d.subscribe,
	}
}

// setLogLevel keeps a level the spec knows with the session: the server's
// log messages of that level and above, sent during the calls the session
// starts from then on, reach the agent on each call's stream. Rounds
// sends no log lines of its own.
func (d *Door) setLogLevel(q *Request) error {
	var p struct {
		Level string `json:"level"`
	}
	if len(q.Params) == 0 || json.Unmarshal(q.Params, &p) != nil || !slices.Contains(mcpclient.LogLevels, p.Level) {
		return invalidParams("logging/setLevel takes a level: one of debug, info, notice, warning, error, critical, alert or emergency.")
	}
	if err := d.o.Store.SetAgentSessionLogLevel(context.WithoutCancel(q.Ctx), q.session.ID, p.Level); err != nil {
		return err
	}
	return q.Result(json.RawMessage(`{}`))
}

// subscribe accepts resources/subscribe and resources/unsubscribe of a
// resource URI. Rounds declares no resources.subscribe capability and
// keeps no subscription: a resource is read afresh from the server behind
// at each resources/read, so there is nothing to tell of its changes.
func (d *Door) subscribe(q *Request) error {
	var p struct {
		URI string `json:"uri"`
	}
	if len(q.Params) == 0 || json.Unmarshal(q.Params, &p) != nil || p.URI == "" {
		return invalidParams(q.Method + " takes the uri of a resource.")
	}
	return q.Result(json.RawMessage(`{}`))
}

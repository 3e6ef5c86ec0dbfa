package agents

import (
	"encoding/json"
	"slices"
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

// logLevels are the syslog severities of the spec's logging, least first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLogLevel accepts a level the spec knows. Rounds sends the agent no
// log lines of its own or of the server behind, so none is above the
// level and the level needs no keeping.
func (d *Door) setLogLevel(q *Request) error {
	var p struct {
		Level string `json:"level"`
	}
	if len(q.Params) == 0 || json.Unmarshal(q.Params, &p) != nil || !slices.Contains(logLevels, p.Level) {
		return invalidParams("logging/setLevel takes a level: one of debug, info, notice, warning, error, critical, alert or emergency.")
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

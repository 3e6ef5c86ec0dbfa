package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
)

// CodeInvalidParams is JSON-RPC's "invalid params" error code.
const CodeInvalidParams = -32602

// ReasonInvalidRequestState is the data.reason with which mcp 2.0 (and
// FastMCP 4 on top of it) refuses a requestState it can no longer open:
// sealed longer ago than its time limit (600 s by default), or by another
// process (a restart, a replica without the shared key). The server cannot
// tell the two apart, and says so in one reason. See docs/servers.md.
const ReasonInvalidRequestState = "invalid_request_state"

// StateExpired reports whether err is a server's refusal of the
// requestState it was sent: the server no longer knows the round it asked,
// and the request must start afresh. Only the reason says so: other
// invalid-params errors (a bad argument, an unknown tool) are not this,
// whatever their message.
func StateExpired(err error) bool {
	var gone *ProcessGoneError
	if errors.As(err, &gone) {
		return true
	}
	var refused *HTTPError
	if errors.As(err, &refused) {
		return refused.Code == CodeInvalidParams && refused.Reason == ReasonInvalidRequestState
	}
	var server *ServerError
	if errors.As(err, &server) {
		return server.Code == CodeInvalidParams && server.Reason == ReasonInvalidRequestState
	}
	return false
}

// dataReason reads data.reason of a JSON-RPC error, or "".
func dataReason(data json.RawMessage) string {
	var d struct {
		Reason string `json:"reason"`
	}
	if len(data) == 0 || json.Unmarshal(data, &d) != nil {
		return ""
	}
	return d.Reason
}

// SameQuestions reports whether two rounds' inputRequests ask the very
// same questions: the same keys in the same order, each with the same
// method and params byte for byte (its message, mode, requested schema,
// URL or messages), whatever a request's _meta says. Rounds gives a
// person's earlier answers again only to questions that are the same.
func SameQuestions(a, b json.RawMessage) bool {
	ka, kb := ObjectKeys(a), ObjectKeys(b)
	if len(ka) == 0 || len(ka) != len(kb) {
		return false
	}
	var ra, rb map[string]map[string]json.RawMessage
	if json.Unmarshal(a, &ra) != nil || json.Unmarshal(b, &rb) != nil {
		return false
	}
	for i, key := range ka {
		if kb[i] != key || !sameRequest(ra[key], rb[key]) {
			return false
		}
	}
	return true
}

// sameRequest compares one input request's method and params, leaving
// out params._meta, which a server may vary per request.
func sameRequest(a, b map[string]json.RawMessage) bool {
	if !bytes.Equal(a["method"], b["method"]) {
		return false
	}
	pa, pb := noParams(a["params"]), noParams(b["params"])
	if pa == nil || pb == nil {
		return pa == nil && pb == nil
	}
	keysA, keysB := withoutMeta(ObjectKeys(pa)), withoutMeta(ObjectKeys(pb))
	if len(keysA) != len(keysB) {
		return false
	}
	var fa, fb map[string]json.RawMessage
	if json.Unmarshal(pa, &fa) != nil || json.Unmarshal(pb, &fb) != nil {
		return false
	}
	for i, k := range keysA {
		if keysB[i] != k || !bytes.Equal(fa[k], fb[k]) {
			return false
		}
	}
	return true
}

// noParams is nil for params absent or null, else params.
func noParams(p json.RawMessage) json.RawMessage {
	if p = bytes.TrimSpace(p); len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return nil
	}
	return p
}

func withoutMeta(keys []string) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if k != "_meta" {
			out = append(out, k)
		}
	}
	return out
}

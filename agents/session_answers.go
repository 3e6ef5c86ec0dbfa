package agents

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// A 2025-11-25 agent answers each question on its own, as the JSON-RPC
// response to the request Rounds sent it: an ElicitResult, a
// CreateMessageResult or a ListRootsResult. Each is, as it is, the entry
// of the round's inputResponses that a 2026-07-28 agent would send for the
// question, so only an error needs translating.

// userRejected is the error code the spec gives a person's refusal of a
// sampling request; clients use it for other refusals too.
const userRejected = -1

// responseEntry is the inputResponses entry for an agent's response to a
// question of kind: its result, or for an error what the question's
// refusal is (decline or cancel), with a sentence saying what the agent
// said. ok is false for a result that is not a JSON object.
func responseEntry(kind string, result json.RawMessage, rpcErr *wireError) (entry json.RawMessage, said string, ok bool) {
	if rpcErr == nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(result, &obj) != nil || obj == nil {
			return nil, "", false
		}
		return result, "", true
	}
	said = fmt.Sprintf("The agent answered with an error (%d): %s", rpcErr.Code, clip(rpcErr.Message, 200))
	switch kind {
	case mcpclient.KindRoots:
		// Roots cannot be refused: an agent that gives none gives an
		// empty list.
		return json.RawMessage(`{"roots":[]}`), said, true
	case mcpclient.KindSampling:
		return json.RawMessage(`{"action":"decline"}`), said, true
	}
	if rpcErr.Code == userRejected {
		return json.RawMessage(`{"action":"decline"}`), said, true
	}
	return json.RawMessage(`{"action":"cancel"}`), said, true
}

// clip cuts what an agent said to n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

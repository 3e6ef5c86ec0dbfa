package agents

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// cacheTTLMs is the ttlMs of every list, discover and outcome the door
// answers a 2026-07-28 agent with. It is 0 (fetch again each time): what
// an agent sees depends on who asks (the person's connection to the
// server behind decides the lists, and a call's outcome changes while it
// runs), and Rounds keeps the server's tools in Postgres for the server's
// own ttlMs, so asking again costs the agent one read in Rounds, not a
// trip to the server. 0 is also never above any hint the server gave.
const cacheTTLMs = 0

// cacheScope is "private" for the same reason: a different token, a
// different person, may see a different answer.
const cacheScope = "private"

// cacheable adds the CacheableResult fields (ttlMs, cacheScope) to a
// result the door makes, for a 2026-07-28 agent; the 2025-11-25 revision
// has no such fields, and a session's agent gets out as it is.
func (q *Request) cacheable(out map[string]any) map[string]any {
	if q.session == nil {
		out["ttlMs"], out["cacheScope"] = cacheTTLMs, cacheScope
	}
	return out
}

// completed is a server's result as a 2026-07-28 agent must get it: the
// server's JSON object byte for byte, with only what the revision
// requires and the server left out put in front: resultType (a
// 2025-11-25 server has none), and for resources/read ttlMs and
// cacheScope. A session's agent gets the result as the server sent it.
func (q *Request) completed(result json.RawMessage) json.RawMessage {
	if q.session != nil {
		return result
	}
	return fillResult(result, q.Method == mcpclient.MethodReadResource)
}

// fillResult inserts into the JSON object result the fields a 2026-07-28
// result needs and it lacks; anything but an object is left as it is.
func fillResult(result json.RawMessage, cacheable bool) json.RawMessage {
	var have map[string]json.RawMessage
	if json.Unmarshal(result, &have) != nil || have == nil {
		return result
	}
	var add [][2]string
	rt, ok := have["resultType"]
	if !ok {
		add = append(add, [2]string{"resultType", `"complete"`})
	}
	// Only a complete result is a ReadResourceResult.
	if cacheable && (!ok || string(rt) == `"complete"`) {
		if _, ok := have["ttlMs"]; !ok {
			add = append(add, [2]string{"ttlMs", strconv.Itoa(cacheTTLMs)})
		}
		if _, ok := have["cacheScope"]; !ok {
			add = append(add, [2]string{"cacheScope", strconv.Quote(cacheScope)})
		}
	}
	if len(add) == 0 {
		return result
	}
	open := bytes.IndexByte(result, '{')
	var b bytes.Buffer
	b.Write(result[:open+1])
	for i, f := range add {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(f[0]) + ":" + f[1])
	}
	if len(have) > 0 {
		b.WriteByte(',')
	}
	b.Write(result[open+1:])
	return b.Bytes()
}

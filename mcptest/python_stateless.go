package mcptest

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The 2026-07-28 side of the Python fakes: requests that stand alone,
// rounds with FastMCP's sealed requestState, and its refusal of a state
// it can no longer open.

// stateless answers a 2026-07-28 request, as FastMCP 4 and mcp 2.0 do:
// plain JSON with a Content-Length, never SSE, no session.
func (f *Fake) stateless(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
	f.checkStateless(r, msg)
	switch msg.Method {
	case "server/discover":
		name := "fastmcp-discover.json"
		if f.flavour == PythonSDK2 {
			name = "mcp2-discover.json"
		}
		writeJSON(w, http.StatusOK, envelope(msg.ID, fixture(name)))
	case "tools/list":
		if f.flavour == PythonSDK2 {
			writeJSON(w, http.StatusOK, envelope(msg.ID, fixture("mcp2-tools.json")))
			return
		}
		out := fixture("fastmcp-tools.json")
		if f.listsRateShare() {
			// rate_share spliced in at the list's end, the recording's bytes kept.
			out = bytes.Replace(out, []byte(`],"ttlMs"`), []byte(","+rateShareTool+`],"ttlMs"`), 1)
		}
		writeJSON(w, http.StatusOK, envelope(msg.ID, out))
	case "tools/call":
		var p struct {
			Name           string                     `json:"name"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			RequestState   *string                    `json:"requestState"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if p.RequestState != nil {
			// The SDK opens the state before the tool runs.
			if _, why := f.unseal(p.RequestState); why != "" {
				stateRefused(w, msg.ID)
				return
			}
		}
		if f.flavour == PythonSDK2 {
			writeJSON(w, http.StatusBadRequest, []byte(`{"jsonrpc":"2.0","id":`+string(msg.ID)+
				`,"error":{"code":-32600,"message":"Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."}}`))
			return
		}
		writeJSON(w, http.StatusOK, envelope(msg.ID, f.fastmcpRound(p.Name, p.InputResponses, p.RequestState)))
	default:
		writeJSON(w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`))
	}
}

var roundsID = regexp.MustCompile(`^"rounds-[0-9a-f]{24}"$`)

// checkStateless notes what differs from Rounds' recorded 2026-07-28 requests.
func (f *Fake) checkStateless(r *http.Request, msg rpcMessage) {
	h := r.Header
	if h.Get("Accept") != "application/json, text/event-stream" || h.Get("Content-Type") != "application/json" {
		f.violate("%s: Accept %q, Content-Type %q", msg.Method, h.Get("Accept"), h.Get("Content-Type"))
	}
	if h.Get("Mcp-Protocol-Version") != "2026-07-28" || h.Get("Mcp-Method") != msg.Method {
		f.violate("%s: Mcp-Protocol-Version %q, Mcp-Method %q", msg.Method, h.Get("Mcp-Protocol-Version"), h.Get("Mcp-Method"))
	}
	if !bytes.HasPrefix(msg.Params, []byte(`{"_meta":{`)) {
		f.violate("%s: params do not start with _meta", msg.Method)
	}
	if msg.Method == "tools/call" {
		var p struct{ Name string }
		_ = json.Unmarshal(msg.Params, &p)
		if h.Get("Mcp-Name") != p.Name {
			f.violate("tools/call %s: Mcp-Name %q", p.Name, h.Get("Mcp-Name"))
		}
		if !roundsID.Match(msg.ID) {
			f.violate("tools/call id %s is not rounds- and 24 hex", msg.ID)
		}
	}
}

var fastmcpMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"Elicitation Server","version":"4.0.0b3"}}`

// seal is FastMCP's opaque requestState: "v1." and base64url of the state
// and its MAC. Only the server can read it; it must come back unchanged.
func (f *Fake) seal(state string) string {
	pad := make([]byte, 120)
	_, _ = rand.Read(pad)
	payload, _ := json.Marshal(map[string]any{"s": state, "t": time.Now().UnixMilli(), "n": base64.RawURLEncoding.EncodeToString(pad)})
	f.mu.Lock()
	mac := hmac.New(sha256.New, f.secret)
	f.mu.Unlock()
	mac.Write(payload)
	return "v1." + base64.RawURLEncoding.EncodeToString(append(mac.Sum(nil), payload...))
}

// unseal opens a sealed requestState, or says why not as mcp 2.0 logs it:
// "expired" or "unknown key" (sealed by another process).
func (f *Fake) unseal(token *string) (string, string) {
	if token == nil || !strings.HasPrefix(*token, "v1.") {
		return "", "malformed"
	}
	raw, err := base64.RawURLEncoding.DecodeString((*token)[3:])
	if err != nil || len(raw) < sha256.Size {
		return "", "malformed"
	}
	f.mu.Lock()
	mac := hmac.New(sha256.New, f.secret)
	ttl, expired := f.stateTTL, f.expired
	f.mu.Unlock()
	mac.Write(raw[sha256.Size:])
	if !hmac.Equal(mac.Sum(nil), raw[:sha256.Size]) {
		return "", "unknown key"
	}
	var payload struct {
		S string
		T int64
	}
	if json.Unmarshal(raw[sha256.Size:], &payload) != nil {
		return "", "malformed"
	}
	sealed := time.UnixMilli(payload.T)
	if (ttl > 0 && time.Since(sealed) > ttl) || !sealed.After(expired) {
		return "", "expired"
	}
	return payload.S, ""
}

// stateRefused is mcp 2.0's answer to a requestState it cannot open,
// whatever the reason (recorded: HTTP 400, JSON, the reason in data).
func stateRefused(w http.ResponseWriter, id json.RawMessage) {
	writeJSON(w, http.StatusBadRequest, []byte(`{"jsonrpc":"2.0","id":`+string(id)+
		`,"error":{"code":-32602,"message":"Invalid or expired requestState","data":{"reason":"invalid_request_state"}}}`))
}

// pyString writes s as the Python servers' JSON does (pydantic): UTF-8 as
// it is, and no escaping of &, < and > as Go's encoder does by default.
func pyString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func fastmcpResult(text string, isError bool) []byte {
	t := pyString(text)
	if isError {
		return []byte(`{"content":[{"text":` + string(t) + `,"type":"text"}],"isError":true,"resultType":"complete",` + fastmcpMeta + `}`)
	}
	return []byte(`{"_meta":{"fastmcp":{"wrap_result":true},"io.modelcontextprotocol/serverInfo":{"name":"Elicitation Server","version":"4.0.0b3"}},"content":[{"text":` +
		string(t) + `,"type":"text"}],"isError":false,"resultType":"complete","structuredContent":{"result":` + string(t) + `}}`)
}

func inputRequired(requests string, state string) []byte {
	out := `{"inputRequests":` + requests
	if state != "" {
		out += `,"requestState":` + strconv.Quote(state)
	}
	return []byte(out + `,"resultType":"input_required",` + fastmcpMeta + `}`)
}

func formAsk(message, schema string) string {
	m := pyString(message)
	return `{"method":"elicitation/create","params":{"message":` + string(m) + `,"mode":"form","requestedSchema":` + schema + `}}`
}

// answered reads one accepted answer's content field, or the action.
func answered(raw json.RawMessage, field string) (string, string) {
	var a struct {
		Action  string                     `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &a)
	v := a.Content[field]
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	return a.Action, s
}

// fastmcpRound runs FastMCP 4's 2026-07-28 tools.
func (f *Fake) fastmcpRound(tool string, answers map[string]json.RawMessage, state *string) []byte {
	switch tool {
	case "book_flight":
		switch {
		case answers["date"] != nil:
			dest, why := f.unseal(state)
			if why != "" {
				f.violate("book_flight: requestState did not come back as sent")
				return fastmcpResult("Error calling tool 'book_flight': invalid request state", true)
			}
			_, date := answered(answers["date"], "date")
			return fastmcpResult("Booked a flight to "+dest+" on "+date, false)
		case answers["destination"] != nil:
			if state != nil {
				f.violate("book_flight: a requestState on the retry of a round that had none")
			}
			_, dest := answered(answers["destination"], "destination")
			ask := "When would you like to fly to " + dest + "?"
			f.mu.Lock()
			if f.fares > 0 {
				ask += fmt.Sprintf(" Fares from €%d.", f.fares)
				f.fares += 15
			}
			f.mu.Unlock()
			return inputRequired(`{"date":`+formAsk(ask,
				`{"properties":{"date":{"type":"string"}},"required":["date"],"type":"object"}`)+`}`, f.seal(dest))
		}
		return inputRequired(`{"destination":`+formAsk("Where would you like to fly?",
			`{"properties":{"destination":{"type":"string"}},"required":["destination"],"type":"object"}`)+`}`, "")
	case "book_trip_batched":
		if answers == nil {
			return inputRequired(`{"destination":`+formAsk("Where to?", `{"properties":{"value":{"type":"string","title":"Destination"}},"required":["value"],"type":"object"}`)+
				`,"travellers":`+formAsk("How many travellers?", `{"properties":{"value":{"type":"integer","minimum":1,"maximum":9}},"required":["value"],"type":"object"}`)+
				`,"cabin":`+formAsk("Which cabin?", `{"properties":{"value":{"type":"string","enum":["economy","business","first"],"default":"economy"}},"required":["value"],"type":"object"}`)+
				`}`, f.seal("round=1"))
		}
		if s, why := f.unseal(state); why != "" || s != "round=1" {
			f.violate("book_trip_batched: requestState did not come back as sent")
		}
		_, dest := answered(answers["destination"], "value")
		_, n := answered(answers["travellers"], "value")
		_, cabin := answered(answers["cabin"], "value")
		return fastmcpResult("Booked "+n+" to "+dest+", "+cabin, false)
	case "seed_types_modern":
		// The dataclass kind: a round (fact 6 of the recordings' README)
		// carrying the dataclass schema FastMCP writes (fact 13).
		if answers == nil {
			return inputRequired(`{"user_info":`+formAsk("Please provide your information", sessionTools["collect_user_info"].schema)+`}`, "")
		}
		action, name := answered(answers["user_info"], "name")
		if action != "accept" {
			return fastmcpResult("Information not provided", false)
		}
		_, age := answered(answers["user_info"], "age")
		return fastmcpResult("Hello "+name+", you are "+age+" years old", false)
	case "get_user_name", "collect_user_info", "select_tags":
		return fastmcpResult("elicitation via server-initiated requests is unavailable on 2026-07-28 connections.", true)
	}
	return fastmcpResult("Unknown tool: "+tool, true)
}

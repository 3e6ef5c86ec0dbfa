package mcptest

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRefusesForgottenState: the fake refuses a requestState sealed before
// its TTL ran out, or by a process before its restart, with the bytes
// mcp 2.0 answered in the recording (HTTP 400, JSON, -32602, the reason in
// data), and takes a fresh one.
func TestRefusesForgottenState(t *testing.T) {
	f := NewFake(t, FastMCP4)
	post := func(body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.URL, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "book_flight")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(b)
	}
	const meta = `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"rounds","version":"dev"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"book_flight","arguments":{}`
	call := func(id, rest string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":` + meta + rest + `}}`
	}
	// Round 2, with its sealed state.
	_, body := post(call("rounds-000000000000000000000001", `,"inputResponses":{"destination":{"action":"accept","content":{"destination":"Lisbon"}}}`))
	var round struct {
		Result struct{ RequestState string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &round); err != nil || !strings.HasPrefix(round.Result.RequestState, "v1.") {
		t.Fatalf("round 2: %s", body)
	}
	answer := func(n string) string {
		return call("rounds-00000000000000000000000"+n, `,"inputResponses":{"date":{"action":"accept","content":{"date":"2031-05-04"}}},"requestState":"`+round.Result.RequestState+`"`)
	}
	refused := func(t *testing.T, n string) {
		t.Helper()
		resp, body := post(answer(n))
		want := `{"jsonrpc":"2.0","id":"rounds-00000000000000000000000` + n + `","error":{"code":-32602,"message":"Invalid or expired requestState","data":{"reason":"invalid_request_state"}}}`
		if resp.StatusCode != 400 || body != want || resp.Header.Get("Content-Type") != "application/json" ||
			resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) || resp.Header.Get("Server") != "uvicorn" {
			t.Errorf("HTTP %d %q (%s, %s bytes):\n got %s\nwant %s", resp.StatusCode, resp.Header.Get("Content-Type"),
				resp.Header.Get("Server"), resp.Header.Get("Content-Length"), body, want)
		}
	}
	// A TTL shorter than the state's age: it has run out.
	f.SetStateTTL(time.Nanosecond)
	t.Run("expired", func(t *testing.T) { refused(t, "2") })
	f.SetStateTTL(0)
	if resp, body := post(answer("3")); resp.StatusCode != 200 || !regexp.MustCompile(`Booked a flight to Lisbon on 2031-05-04`).MatchString(body) {
		t.Fatalf("without a TTL the state is taken: %d %s", resp.StatusCode, body)
	}
	f.Restart()
	t.Run("sealed before a restart", func(t *testing.T) { refused(t, "4") })
}

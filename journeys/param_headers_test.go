package journeys

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// headerTools are two tools the wrapped demo server adds to its list: one
// mirroring an argument into a header, one whose annotation is invalid (on
// a number), which a client must leave out while keeping the rest.
const headerTools = `{"name":"region_sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}}}},` +
	`{"name":"bad_header","inputSchema":{"type":"object","properties":{"ratio":{"type":"number","x-mcp-header":"Ratio"}}}},`

// TestParamHeadersAndInvalidTools checks x-mcp-header end to end: the tool
// with an invalid annotation is not listed (the others are), and a call of
// the annotated tool carries its argument as Mcp-Param-Region, encoded.
func TestParamHeadersAndInvalidTools(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen http.Header
	var sent []byte
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"region_sql"`)) {
				mu.Lock()
				seen, sent = r.Header.Clone(), body
				mu.Unlock()
			}
			if !bytes.Contains(body, []byte(`"tools/list"`)) {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			out := bytes.Replace(rec.Body.Bytes(), []byte(`"tools":[`), []byte(`"tools":[`+headerTools), 1)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(out)
		})
	}
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, wrap)}, nil)
	c := newClient(t, db)
	status, tools := c.do("GET", inst.URL+"/api/v1/servers/demo/tools", "", "")
	if status != http.StatusOK || !strings.Contains(string(tools), `"region_sql"`) || !strings.Contains(string(tools), `"book_flight"`) {
		t.Fatalf("tools: %d %s", status, tools)
	}
	if strings.Contains(string(tools), "bad_header") {
		t.Fatalf("the tool with an invalid x-mcp-header is listed: %s", tools)
	}
	call := c.start(inst.URL, `{"server":"demo","tool":"region_sql","arguments":{"region":"Hello, 世界","query":"select 1"}}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	mu.Lock()
	if seen == nil {
		t.Fatal("the call never reached the server")
	}
	if got := seen.Get("Mcp-Param-Region"); got != "=?base64?SGVsbG8sIOS4lueVjA==?=" {
		t.Fatalf("Mcp-Param-Region = %q; headers %v", got, seen)
	}
	if got := seen.Get("Mcp-Param-Query"); got != "" {
		t.Fatalf("an unmarked argument became a header: %q", got)
	}
	mu.Unlock()

	// An optional argument given as null is taken as not given: the call
	// goes, without it and without its header (the conformance suite's
	// http-custom-headers sends {"verbose": null} so).
	call = c.start(inst.URL, `{"server":"demo","tool":"region_sql","arguments":{"region":null,"query":"select 2"}}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(sent, []byte(`"arguments":{"query":"select 2"}`)) || seen.Get("Mcp-Param-Region") != "" {
		t.Fatalf("the call with a null argument went as %s, Mcp-Param-Region %q", sent, seen.Get("Mcp-Param-Region"))
	}
}

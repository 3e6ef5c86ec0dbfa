package journeys

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// payload tries two ways to run script; either sets window.__pwned.
const payload = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">`

// hostileServer is a 2026-07-28 MCP server that puts the payload in every
// string it sends, and a javascript: URL where a URL goes.
func hostileServer(t *testing.T) string {
	t.Helper()
	p, _ := json.Marshal(payload)
	h := string(p) // the payload as a JSON string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				InputResponses json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		var result string
		switch {
		case msg.Method == "server/discover":
			result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":` + h + `,"version":"1"}}}`
		case msg.Method == "tools/list":
			result = `{"tools":[{"name":"trap","title":` + h + `,"description":` + h + `,"inputSchema":{"type":"object","properties":{"note":{"type":"string","title":` + h + `,"description":` + h + `,"default":` + h + `}}}}]}`
		case msg.Method == "tools/call" && len(msg.Params.InputResponses) == 0:
			result = `{"resultType":"input_required","requestState":"s","inputRequests":{
				"form":{"method":"elicitation/create","params":{"mode":"form","message":` + h + `,"requestedSchema":{"type":"object","properties":{
					"name":{"type":"string","title":` + h + `,"description":` + h + `,"default":` + h + `},
					"pick":{"type":"string","title":` + h + `,"oneOf":[{"const":` + h + `,"title":` + h + `},{"const":"safe","title":"Safe"}]}}}}},
				"link":{"method":"elicitation/create","params":{"mode":"url","message":` + h + `,"url":"javascript:window.__pwned=1","elicitationId":"e1"}}}}`
		case msg.Method == "tools/call":
			result = `{"content":[{"type":"text","text":` + h + `},{"type":"resource_link","uri":"javascript:window.__pwned=1","name":` + h + `}],"structuredContent":{"x":` + h + `},"isError":true}`
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":%s}}`, msg.ID, h)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBrowserHostileServer: nothing a server sends runs in the page, not
// even a javascript: URL, and the pages carry the CSP.
func TestBrowserHostileServer(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "evil=" + hostileServer(t)}, nil)
	tab := newTab(t, browser, true)
	pwned := func(where string) {
		t.Helper()
		ran := tab.eval(`window.__pwned === 1 || document.querySelector('a[href^="javascript"]') !== null`)
		if ran {
			t.Errorf("%s: the server's payload ran, or a javascript: link exists", where)
		}
	}

	tab.do("sign in",
		chromedp.Navigate(inst.URL+"/"),
		chromedp.SendKeys(chromedp.ID("username"), "admin"),
		chromedp.SendKeys(chromedp.ID("password"), adminPassword),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[data-testid="tool-trap"]`)),
	)
	pwned("home")
	if !strings.Contains(tab.text(`a[data-testid="tool-trap"]`), "<script>") {
		t.Error("the tool's title is not shown as text")
	}
	tab.do("open the tool", chromedp.Click(chromedp.CSS(`a[data-testid="tool-trap"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[data-testid="start"]`)))
	pwned("tool page")
	tab.do("start", chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)))
	pwned("round page")
	if text := tab.text(`form[data-testid="round-form"]`); !strings.Contains(text, "<img src=x onerror=") {
		t.Errorf("the payload is not shown as text on the round page: %q", text)
	}
	tab.do("answer: accept the form, decline the link",
		chromedp.Click(chromedp.CSS(`section[data-key="link"] input[value="decline"]`)),
		chromedp.Click(chromedp.CSS(`section[data-key="form"] input[value="safe"]`)),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="result"]`)),
	)
	pwned("result page")
	if !strings.Contains(tab.text(`[data-testid="result"]`), "<script>") {
		t.Error("the result's text is not shown as text")
	}

	resp, err := http.Get(inst.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP = %q", csp)
	}
}

// eval runs a JavaScript expression in the tab and returns its truth.
func (tb *tab) eval(expr string) bool {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

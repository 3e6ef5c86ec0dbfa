package journeys

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// demoSurfaceEnv registers the demo server with sampling and roots on.
func demoSurfaceEnv(url string) map[string]string {
	return map[string]string{
		"MCP_SERVERS": "demo[sampling,roots]=" + url,
		"MCP_ROOTS":   "demo=file:///srv/data|Data;file:///home/user",
	}
}

// TestDemoSurfaceAPI runs the demo's prompt, resources, sampling tool and
// roots tool through the API.
func TestDemoSurfaceAPI(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	watch := &retryWatcher{}
	inst := startInstance(t, db, demoSurfaceEnv(demoServer(t, watch.wrap)), nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	t.Run("Prompt", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"demo","method":"prompts/get","prompt":"trip_plan","arguments":{"destination":"Porto"}}`)
		if q := c.asked(inst.URL, call.ID, 1)["trip"]; !strings.Contains(string(q.Params), "How long will you stay in Porto") {
			t.Fatalf("asked %s", q.Params)
		}
		c.mustAnswer(inst.URL, call.ID, 1, `{"trip":{"action":"accept","content":{"days":4,"likes":"tiles"}}}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if !strings.Contains(string(done.Result), "Plan a 4-day trip to Porto. I like tiles.") {
			t.Errorf("status %s, result %s", done.Status, done.Result)
		}
		_, page := c.do("GET", inst.URL+"/calls/"+call.ID, "", "")
		for _, want := range []string{`data-testid="prompt-messages"`, "A 4-day plan for Porto", "Plan a 4-day trip to Porto. I like tiles.", `data-role="assistant"`} {
			if !strings.Contains(string(page), want) {
				t.Errorf("call page lacks %q", want)
			}
		}
	})

	t.Run("ResourceAsks", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"demo","method":"resources/read","uri":"demo://notes/secret"}`)
		c.asked(inst.URL, call.ID, 1)
		if status, body := c.answer(inst.URL, call.ID, 1, `{"reason":{"action":"accept","content":{"reason":"x"}}}`); status != http.StatusUnprocessableEntity {
			t.Errorf("a reason too short: %d %s, want 422", status, body)
		}
		c.mustAnswer(inst.URL, call.ID, 1, `{"reason":{"action":"accept","content":{"reason":"an audit"}}}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if !strings.Contains(string(done.Result), "Read because: an audit") {
			t.Errorf("status %s, result %s", done.Status, done.Result)
		}
	})

	t.Run("BlobDownload", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"demo","method":"resources/read","uri":"demo://images/logo.png"}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if done.Status != "complete" {
			t.Fatalf("status %s, error %+v", done.Status, done.Error)
		}
		_, page := c.do("GET", inst.URL+"/calls/"+call.ID, "", "")
		if !strings.Contains(string(page), `href="/calls/`+call.ID+`/contents/0"`) || strings.Contains(string(page), "<img") {
			t.Errorf("the call page should offer the image as a download, not show it")
		}
		req, _ := http.NewRequest("GET", inst.URL+"/calls/"+call.ID+"/contents/0", nil)
		resp, err := (&http.Client{Jar: c.jar}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		h := resp.Header
		if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || !strings.Contains(h.Get("Content-Disposition"), "logo.png") {
			t.Errorf("download: %d %v", resp.StatusCode, h)
		}
		if _, err := png.Decode(&body); err != nil {
			t.Errorf("the download is not the PNG: %v", err)
		}
		if status, _ := c.do("GET", inst.URL+"/calls/"+call.ID+"/contents/1", "", ""); status != http.StatusNotFound {
			t.Errorf("a content that does not exist: %d, want 404", status)
		}
	})

	t.Run("Sampling", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"demo","tool":"write_haiku","arguments":{"topic":"rain"}}`)
		if q := c.asked(inst.URL, call.ID, 1)["haiku"]; q.Method != "sampling/createMessage" {
			t.Fatalf("asked %+v", q)
		}
		c.mustAnswer(inst.URL, call.ID, 1, `{"haiku":`+fmt.Sprintf(humanReply, `Drops on the window\nslow`)+`}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if got := resultText(t, done.Result); got != "A haiku about rain, by human:\nDrops on the window\nslow" {
			t.Errorf("status %s, result %q", done.Status, got)
		}
	})

	t.Run("SamplingDeclined", func(t *testing.T) {
		// A declined sampling request is not sent back: the call ends.
		call := c.start(inst.URL, `{"server":"demo","tool":"write_haiku","arguments":{"topic":"snow"}}`)
		c.asked(inst.URL, call.ID, 1)
		before := watch.count()
		c.mustAnswer(inst.URL, call.ID, 1, `{"haiku":{"action":"decline"}}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if done.Status != "cancelled" || done.Error == nil || !strings.Contains(done.Error.Message, "declined the server's sampling request") {
			t.Errorf("status %s, error %+v; want cancelled, saying why", done.Status, done.Error)
		}
		if after := watch.count(); after != before {
			t.Errorf("the server got %d retries after the decline, want none", after-before)
		}
	})

	t.Run("Roots", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"demo","tool":"show_roots"}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if got := resultText(t, done.Result); got != "You shared 2 roots: Data (file:///srv/data), file:///home/user" {
			t.Errorf("status %s, result %q, error %+v", done.Status, got, done.Error)
		}
	})

	t.Run("ServerPage", func(t *testing.T) {
		_, page := c.do("GET", inst.URL+"/servers/demo", "", "")
		for _, want := range []string{`data-testid="tool-write_haiku"`, `data-name="trip_plan"`, `data-resource="demo://notes/secret"`,
			`data-template="demo://greetings/{name}"`, "file:///srv/data", `data-testid="asks-sampling"`} {
			if !strings.Contains(string(page), want) {
				t.Errorf("server page lacks %s", want)
			}
		}
	})
}

// TestDemoRootsAnsweredOnSubmit: a round asking for roots and something
// else waits for the person; the API answer leaves the roots out and the
// app adds them. Giving them is refused.
func TestDemoRootsAnsweredOnSubmit(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, everythingEnv(t), nil)
	c := newClient(t, db)

	call := c.start(inst.URL, `{"server":"everything","tool":"test_input_required_result_multiple_inputs"}`)
	asked := c.asked(inst.URL, call.ID, 1)
	if asked["client_roots"].Method != "roots/list" || asked["greeting"].Method != "sampling/createMessage" {
		t.Fatalf("asked %+v", asked)
	}
	reply := fmt.Sprintf(humanReply, "Hello")
	given := `{"user_name":{"action":"accept","content":{"name":"Ada"}},"greeting":` + reply + `,"client_roots":{"roots":[]}}`
	if status, body := c.answer(inst.URL, call.ID, 1, given); status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "leave this answer out") {
		t.Errorf("roots given: %d %s, want 422", status, body)
	}
	c.mustAnswer(inst.URL, call.ID, 1, `{"user_name":{"action":"accept","content":{"name":"Ada"}},"greeting":`+reply+`}`)
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if got := resultText(t, done.Result); got != "Hello Ada — 2 root(s) visible" {
		t.Errorf("status %s, result %q", done.Status, got)
	}
}

// TestHandshakeSamplingAndRoots: a handshake-era server asks for sampling
// mid-call, which a person answers as a held round, and lists the roots,
// which the session answers from the configuration.
func TestHandshakeSamplingAndRoots(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	var mu sync.Mutex
	var told []string
	server := mcp.NewServer(&mcp.Implementation{Name: "old-sampler", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "muse", Description: "Asks a model mid-call, then lists the roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			roots, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range roots.Roots {
				uris = append(uris, r.URI)
			}
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 20,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say something"}}}})
			mu.Lock()
			told = append(told, fmt.Sprint(err))
			mu.Unlock()
			if err != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + err.Error()}}}, nil, nil
			}
			reply := res.Content.(*mcp.TextContent).Text
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: reply + " (" + res.Model + ") " + strings.Join(uris, " ")}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	inst := startInstance(t, db, map[string]string{
		"MCP_SERVERS": "old[sampling,roots,2025-11-25]=" + srv.URL + ",off[2025-11-25]=" + srv.URL,
		"MCP_ROOTS":   "old=file:///srv/data|Data",
	}, nil)
	c := newClient(t, db)

	t.Run("Answered", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"old","tool":"muse"}`)
		if q := c.asked(inst.URL, call.ID, 1)["sampling"]; q.Method != "sampling/createMessage" || !strings.Contains(string(q.Params), "Say something") {
			t.Fatalf("asked %+v", q)
		}
		c.mustAnswer(inst.URL, call.ID, 1, `{"sampling":`+fmt.Sprintf(humanReply, "Hi")+`}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if got := resultText(t, done.Result); got != "Hi (human) file:///srv/data" {
			t.Errorf("status %s, result %q, error %+v", done.Status, got, done.Error)
		}
	})
	t.Run("Declined", func(t *testing.T) {
		call := c.start(inst.URL, `{"server":"old","tool":"muse"}`)
		c.asked(inst.URL, call.ID, 1)
		c.mustAnswer(inst.URL, call.ID, 1, `{"sampling":{"action":"decline"}}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if got := resultText(t, done.Result); !strings.Contains(got, "refused") || !strings.Contains(got, "rejected") {
			t.Errorf("status %s, result %q; want the server told of the refusal", done.Status, got)
		}
	})
	t.Run("Off", func(t *testing.T) {
		// Neither is declared, so the server's request fails on its side
		// and no round is made.
		call := c.start(inst.URL, `{"server":"off","tool":"muse"}`)
		done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
		if got := resultText(t, done.Result); done.Status != "complete" || !strings.Contains(got, "refused") {
			t.Errorf("status %s, result %q; want the server refused sampling, with no round", done.Status, got)
		}
	})
}

package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
)

// flakyServer is the demo MCP server on a loopback port that can go away
// (the port refuses connections) and come back on the same port.
type flakyServer struct {
	t       *testing.T
	addr    string
	handler http.Handler
	srv     *http.Server
}

func newFlakyServer(t *testing.T, watch *retryWatcher) *flakyServer {
	t.Helper()
	var h http.Handler = demo.Handler(demo.Options{Secret: []byte("test secret, shared by every instance")})
	if watch != nil {
		h = watch.wrap(h)
	}
	f := &flakyServer{t: t, handler: h}
	f.up("127.0.0.1:0")
	t.Cleanup(f.down)
	return f
}

func (f *flakyServer) URL() string { return "http://" + f.addr + "/mcp" }

func (f *flakyServer) up(addr string) {
	f.t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.addr = l.Addr().String()
	f.srv = &http.Server{Handler: f.handler}
	go f.srv.Serve(l)
}

// down closes the listener and every connection: the port refuses.
func (f *flakyServer) down() { _ = f.srv.Close() }

// TestServerComesBack: the server goes away while a person's answer is
// being sent. The call says it is trying again and when, on the page and in
// the API; the instance that took the answer stops meanwhile; when the
// server is back on its port, the other instance sends the answer, once,
// without anyone doing anything.
func TestServerComesBack(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	watch := &retryWatcher{}
	mcp := newFlakyServer(t, watch)
	env := map[string]string{"MCP_SERVERS": "demo=" + mcp.URL(), "RETRY_WINDOW": "2m"}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)
	c.login(b.URL, "admin", adminPassword)

	call := c.startCall(a.URL, "confirm_delete", `{"path":"/srv/cache"}`)
	c.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))
	mcp.down()
	if status, body := c.answer(a.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	waiting := c.waitFor(b.URL, call.ID, 10*time.Second, func(c apiCall) bool { return c.Retrying != nil })
	if waiting.Status == "failed" || !strings.HasPrefix(waiting.Retrying.Message, "The server is unreachable; trying again at ") ||
		!strings.Contains(waiting.Retrying.Message, waiting.Retrying.At.UTC().Format("15:04:05")) ||
		waiting.Retrying.Reason != "connection refused" {
		t.Fatalf("while the server is away: %+v %+v", waiting, waiting.Retrying)
	}
	_, page := c.do("GET", b.URL+"/calls/"+call.ID, "", "")
	if !strings.Contains(string(page), `data-testid="retry-note"`) ||
		!strings.Contains(string(page), "The server is unreachable; trying again at <time") {
		t.Fatalf("the call page does not say it is trying again:\n%s", page)
	}
	if strings.Contains(string(page), `data-testid="retry"`) {
		t.Error("the call page offers the manual retry while retrying by itself")
	}

	// Past a few tries, the instance that took the answer goes away too.
	time.Sleep(2500 * time.Millisecond)
	if err := a.shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	mcp.up(mcp.addr)
	done := c.waitFor(b.URL, call.ID, 90*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Deleted /srv/cache" || done.Retrying != nil {
		t.Fatalf("after the server came back: %+v", done)
	}
	if n := watch.count(); n != 1 {
		t.Errorf("the server saw the answers %d times, want 1", n)
	}
}

package journeys

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
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
	eventually(t, 20*time.Second, func() error {
		var tries int
		queryRow(t, db, `select count(*) from attempts where call_id = $1 and seq = 1 and outcome = 'error'`,
			[]any{call.ID}, &tries)
		if tries < 3 {
			return fmt.Errorf("%d tries of the answer so far", tries)
		}
		return nil
	})
	if err := a.Shutdown(t.Context()); err != nil {
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

// dbProxy stands between an instance and Postgres on a loopback port of
// its own. Down closes the port and cuts every connection, which is what
// the app sees when Postgres stops; up opens the same port again.
type dbProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newDBProxy(t *testing.T, dbURL string) (*dbProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{t: t, target: u.Host, conns: map[net.Conn]bool{}}
	p.up("127.0.0.1:0")
	t.Cleanup(p.down)
	u.Host = p.addr
	return p, u.String()
}

func (p *dbProxy) up(addr string) {
	p.t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *dbProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(s, c); s.Close(); c.Close() }()
	_, _ = io.Copy(c, s)
	c.Close()
	s.Close()
}

func (p *dbProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// TestDatabaseDown: while Postgres is down, pages and the API answer 503
// with Retry-After, never 500; the instance needs no restart afterwards,
// and an answer given after the outage goes through.
func TestDatabaseDown(t *testing.T) {
	t.Parallel()
	proxy, dbURL := newDBProxy(t, newDatabase(t))
	inst := startInstance(t, dbURL, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, dbURL)
	c.login(inst.URL, "admin", adminPassword)
	call := c.startCall(inst.URL, "confirm_delete", `{"path":"/srv/cache"}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))

	proxy.down()
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/", ""},
		{"GET", "/inbox", ""},
		{"GET", "/calls/" + call.ID, ""},
		{"GET", "/servers/demo/tools/confirm_delete", ""},
		{"GET", "/api/v1/calls/" + call.ID, ""},
		{"POST", "/api/v1/calls", `{"server":"demo","tool":"confirm_delete","arguments":{"path":"/x"}}`},
		{"POST", "/api/v1/calls/" + call.ID + "/rounds/1", `{"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}}`},
		{"GET", "/readyz", ""},
	} {
		// Twice: first on the pool's broken connections, then on new ones.
		for range 2 {
			req, _ := http.NewRequest(r.method, inst.URL+r.path, strings.NewReader(r.body))
			req.Header.Set("Authorization", "Bearer "+c.token)
			req.Header.Set("Content-Type", "application/json")
			for _, ck := range c.jar.Cookies(req.URL) {
				req.AddCookie(ck)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("%s %s with the database down: %d, want 503: %s", r.method, r.path, resp.StatusCode, body)
			}
			if r.path != "/readyz" && resp.Header.Get("Retry-After") == "" {
				t.Errorf("%s %s: 503 without Retry-After", r.method, r.path)
			}
			if strings.HasPrefix(r.path, "/api/") && !strings.Contains(string(body), "database is not answering") {
				t.Errorf("%s %s: %s", r.method, r.path, body)
			}
		}
	}

	proxy.up(proxy.addr)
	eventually(t, 20*time.Second, func() error {
		status, body := c.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`)
		if status != http.StatusAccepted && status != http.StatusServiceUnavailable {
			t.Fatalf("answer after the outage: %d %s", status, body)
		}
		if status != http.StatusAccepted {
			return fmt.Errorf("answer after the outage: %d %s", status, body)
		}
		return nil
	})
	done := c.waitFor(inst.URL, call.ID, 20*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Deleted /srv/cache" {
		t.Fatalf("after the outage: %+v", done)
	}
}

// TestServerUnreachableIs502: what needs the server at once — the tool's
// form, starting a call — says it could not be reached, with a 502.
func TestServerUnreachableIs502(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mcp := newFlakyServer(t, nil)
	mcp.down()
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + mcp.URL()}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	status, page := c.do("GET", inst.URL+"/servers/demo/tools/confirm_delete", "", "")
	if status != http.StatusBadGateway || !strings.Contains(string(page), "could not be reached (connection refused)") {
		t.Errorf("tool page: %d %s", status, page)
	}
	status, body := c.do("POST", inst.URL+"/api/v1/calls", "application/json", `{"server":"demo","tool":"confirm_delete"}`)
	if status != http.StatusBadGateway || !strings.Contains(string(body), "could not be reached (connection refused)") {
		t.Errorf("API call: %d %s", status, body)
	}
}

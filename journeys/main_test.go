// Package journeys holds the end-to-end journeys: instances of the app over
// fresh Postgres databases, driven through the pages, the API, the command
// line and headless Chromium, against the demo and other MCP servers.
package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	// As in cmd/web: people's time zones are looked up by name, with the
	// zone database built in.
	_ "time/tzdata"

	"github.com/mcp-rounds/rounds/app"
	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/mcptest"
	"github.com/mcp-rounds/rounds/store/pgcluster"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestMain doubles as an instance of the app when run with
// ROUNDS_TEST_INSTANCE=1, so tests can run an instance as a process of its
// own and kill it; and as a fake Python server over stdio when run with
// ROUNDS_TEST_STDIO set to its flavour (stdio_test.go), or as the hostile
// and the flooding local servers of stdio_local_test.go.
func TestMain(m *testing.M) {
	if flavour := os.Getenv("ROUNDS_TEST_STDIO"); flavour != "" {
		serve := func() error { return mcptest.ServeStdio(mcptest.Flavour(flavour), os.Stdin, os.Stdout, os.Stderr) }
		switch flavour {
		case askTwiceStdio:
			serve = serveAskTwice
		case snoopStdio:
			serve = serveSnoop
		case floodStdio:
			serve = serveFlood
		}
		if err := serve(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("ROUNDS_TEST_INSTANCE") == "1" {
		if err := runInstance(); err != nil {
			fmt.Fprintln(os.Stderr, "instance:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	pgcluster.CloseShared() // the cluster some tests start for themselves
	os.Exit(code)
}

// runInstance is what cmd/web does without a subcommand: an instance
// configured by the environment, logging JSON to standard error, until it
// is told to stop.
func runInstance() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := app.ConfigFromEnvironment()
	if err != nil {
		return err
	}
	a, err := app.Start(ctx, cfg, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	return a.Wait(ctx)
}

// logSink collects every log line of the instances a test runs.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// instance is an app started in this process.
type instance struct {
	*app.App
	URL string
}

// startInstance starts an app over dbURL with the given environment, and
// stops it when the test ends.
func startInstance(t *testing.T, dbURL string, env map[string]string, logs io.Writer) *instance {
	t.Helper()
	getenv := func(k string) string {
		switch k {
		case "DATABASE_URL":
			return dbURL
		case "ADMIN_PASSWORD":
			if v, ok := env[k]; ok {
				return v
			}
			return adminPassword
		case "LISTEN_ADDR":
			if v, ok := env[k]; ok {
				return v
			}
			return "127.0.0.1:0"
		}
		return env[k]
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if logs == nil {
		logs = io.Discard
	}
	a, err := app.Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return &instance{App: a, URL: "http://" + a.Addr()}
}

// demoServer serves the demo MCP server for a test, through an optional
// middleware that may watch or hold requests.
func demoServer(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = demo.Handler(demo.Options{Secret: []byte("test secret, shared by every instance")})
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// retryWatcher counts the tools/call requests that carry answers, and may
// hold them until released.
type retryWatcher struct {
	mu      sync.Mutex
	retries int
	hold    chan struct{} // when set, retries wait until it closes
	arrived chan struct{} // gets a value when a retry arrives
}

func (w *retryWatcher) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"inputResponses"`)) {
			w.mu.Lock()
			w.retries++
			hold := w.hold
			w.mu.Unlock()
			if w.arrived != nil {
				select {
				case w.arrived <- struct{}{}:
				default:
				}
			}
			if hold != nil {
				select {
				case <-hold:
				case <-r.Context().Done():
					return
				}
			}
		}
		next.ServeHTTP(rw, r)
	})
}

func (w *retryWatcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.retries
}

// apiCall is the API's view of a call, as tests read it.
type apiCall struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Round  *struct {
		Seq           int                        `json:"seq"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	} `json:"round"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	Retrying *struct {
		At      time.Time `json:"at"`
		Reason  string    `json:"reason"`
		Message string    `json:"message"`
	} `json:"retrying"`
}

// adminPassword is the first admin's password in tests.
const adminPassword = "correct horse battery staple"

// client is an HTTP client for tests that records every response body. It
// sends its token to the API and keeps a session for the pages.
type client struct {
	t      *testing.T
	token  string
	csrf   string
	jar    http.CookieJar
	mu     sync.Mutex
	bodies []string
}

// newClient returns a client with an API token for the first admin.
func newClient(t *testing.T, db string) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &client{t: t, token: newToken(t, db, "admin"), jar: jar}
}

// newToken makes an API token for a user through the command line.
func newToken(t *testing.T, db, name string) string {
	t.Helper()
	var out bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	if err := app.Command(context.Background(), []string{"token", "create", name}, strings.NewReader(""), &out, getenv); err != nil {
		t.Fatalf("web token create %s: %v", name, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1]
}

// login signs the client's session in through the sign-in form.
func (c *client) login(base, name, password string) {
	c.t.Helper()
	_, page := c.do("GET", base+"/login", "", "")
	form := url.Values{"username": {name}, "password": {password}, "csrf_token": {csrfFrom(page)}, "next": {"/"}}
	status, body := c.do("POST", base+"/login", "application/x-www-form-urlencoded", form.Encode())
	if status != http.StatusSeeOther {
		c.t.Fatalf("sign in as %s: %d %s", name, status, body)
	}
	_, home := c.do("GET", base+"/", "", "")
	c.csrf = csrfFrom(home)
	if c.csrf == "" {
		c.t.Fatal("no CSRF token on the home page after signing in")
	}
}

// post sends a form the way a browser does, with the CSRF token.
func (c *client) post(url string, form url.Values) (int, []byte) {
	c.t.Helper()
	form.Set("csrf_token", c.csrf)
	return c.do("POST", url, "application/x-www-form-urlencoded", form.Encode())
}

// csrfFrom finds the CSRF token in a page.
func csrfFrom(page []byte) string {
	const marker = `name="csrf_token" value="`
	i := bytes.Index(page, []byte(marker))
	if i < 0 {
		return ""
	}
	rest := page[i+len(marker):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

func (c *client) do(method, url, contentType string, body string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" && strings.Contains(url, "/api/") {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	noRedirect := &http.Client{Jar: c.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	c.mu.Lock()
	var hdr strings.Builder
	_ = resp.Header.Write(&hdr)
	c.bodies = append(c.bodies, url+"\n"+hdr.String()+"\n"+string(b))
	c.mu.Unlock()
	return resp.StatusCode, b
}

func (c *client) startCall(base, tool, args string) apiCall {
	c.t.Helper()
	status, b := c.do("POST", base+"/api/v1/calls", "application/json", `{"server":"demo","tool":"`+tool+`","arguments":`+args+`}`)
	if status != http.StatusCreated {
		c.t.Fatalf("start %s: %d %s", tool, status, b)
	}
	var call apiCall
	if err := json.Unmarshal(b, &call); err != nil {
		c.t.Fatal(err)
	}
	return call
}

// waitFor polls the call until done says so, or fails the test after limit.
func (c *client) waitFor(base, id string, limit time.Duration, done func(apiCall) bool) apiCall {
	c.t.Helper()
	var call apiCall
	eventually(c.t, limit, func() error {
		status, b := c.do("GET", base+"/api/v1/calls/"+id, "", "")
		if status != http.StatusOK {
			c.t.Fatalf("get call: %d %s", status, b)
		}
		call = apiCall{}
		if err := json.Unmarshal(b, &call); err != nil {
			c.t.Fatal(err)
		}
		if !done(call) {
			return fmt.Errorf("call %s did not get there; last: %+v", id, call)
		}
		return nil
	})
	return call
}

func roundIs(seq int) func(apiCall) bool {
	return func(c apiCall) bool {
		return c.Status == "input_required" && c.Round != nil && c.Round.Seq == seq
	}
}

func isDone(c apiCall) bool {
	switch c.Status {
	case "complete", "failed", "cancelled", "expired":
		return true
	}
	return false
}

func (c *client) answer(base, id string, seq int, responses string) (int, []byte) {
	c.t.Helper()
	return c.do("POST", fmt.Sprintf("%s/api/v1/calls/%s/rounds/%d", base, id, seq), "application/json",
		`{"inputResponses":`+responses+`}`)
}

func resultText(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("result %s: %v", result, err)
	}
	var out []string
	for _, c := range r.Content {
		out = append(out, c.Text)
	}
	return strings.Join(out, "\n")
}

const (
	tripAnswers = `{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04"}},"party":{"action":"accept","content":{"passengers":2}}}`
	seatAnswers = `{"seat":{"action":"accept","content":{"class":"business"}}}`
)

// newDatabase is storetest.NewDatabase, named for the reader.
func newDatabase(t *testing.T) string { return storetest.NewDatabase(t) }

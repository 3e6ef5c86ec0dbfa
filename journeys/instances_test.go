package journeys

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTwoInstances starts a call on A, answers round 1 on B and round 2 on
// A, over one database, as a load balancer would spread them.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "book_flight", `{}`)
	c.waitFor(b.URL, call.ID, 10*time.Second, roundIs(1))
	if status, body := c.answer(b.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("answer round 1 on B: %d %s", status, body)
	}
	c.waitFor(a.URL, call.ID, 10*time.Second, roundIs(2))
	if status, body := c.answer(a.URL, call.ID, 2, seatAnswers); status != http.StatusAccepted {
		t.Fatalf("answer round 2 on A: %d %s", status, body)
	}
	done := c.waitFor(b.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" {
		t.Fatalf("status = %s, error = %+v", done.Status, done.Error)
	}
	if got := resultText(t, done.Result); !strings.Contains(got, "Booked 2 passengers to Lisbon on 2031-05-04, Business class") {
		t.Errorf("result = %q", got)
	}
}

// TestAnsweredExactlyOnce sends 20 concurrent answers to one round across
// two instances: one is taken, the others are told it was already
// answered, and the server sees exactly one retry.
func TestAnsweredExactlyOnce(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	watch := &retryWatcher{}
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, watch.wrap)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "confirm_delete", `{"path":"/tmp/report.txt"}`)
	c.waitFor(a.URL, call.ID, 10*time.Second, roundIs(1))

	const submits = 20
	statuses := make([]int, submits)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range submits {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		wg.Go(func() {
			<-start
			statuses[i], _ = c.answer(base, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`)
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[http.StatusAccepted] != 1 || count[http.StatusConflict] != submits-1 {
		t.Fatalf("statuses = %v, want one 202 and %d 409s", count, submits-1)
	}
	done := c.waitFor(b.URL, call.ID, 10*time.Second, isDone)
	if got := resultText(t, done.Result); got != "Deleted /tmp/report.txt" {
		t.Errorf("result = %q", got)
	}
	// A stray duplicate job would be due now: once every request due has
	// run, the server has seen it.
	jobsRun(t, db, "mcp_request", call.ID)
	if n := watch.count(); n != 1 {
		t.Errorf("the server saw %d retries, want exactly 1", n)
	}
}

// TestCrashDuringRetry kills an instance (SIGKILL, a process of its own)
// while its retry is in flight. The other instance rescues the orphaned job
// and finishes the call within a minute. The retry is at-least-once: the
// server sees it twice.
func TestCrashDuringRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("takes up to a minute")
	}
	t.Parallel()
	db := newDatabase(t)
	hold := make(chan struct{})
	watch := &retryWatcher{hold: hold, arrived: make(chan struct{}, 1)}
	servers := "demo=" + demoServer(t, watch.wrap)

	addr := freeAddr(t)
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), "ROUNDS_TEST_INSTANCE=1", "DATABASE_URL="+db, "ADMIN_PASSWORD="+adminPassword,
		"LISTEN_ADDR="+addr, "MCP_SERVERS="+servers)
	var procLog logSink
	proc.Stdout, proc.Stderr = &procLog, &procLog
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	a := "http://" + addr
	waitReady(t, a)

	c := newClient(t, db)
	call := c.startCall(a, "confirm_delete", `{"path":"/srv/old.log"}`)
	c.waitFor(a, call.ID, 10*time.Second, roundIs(1))
	if status, body := c.answer(a, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	select {
	case <-watch.arrived:
	case <-time.After(10 * time.Second):
		t.Fatalf("the retry never reached the server; instance log:\n%s", procLog.String())
	}
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	killed := time.Now()
	close(hold)

	b := startInstance(t, db, map[string]string{"MCP_SERVERS": servers}, nil)
	done := c.waitFor(b.URL, call.ID, time.Minute, isDone)
	t.Logf("finished %s after the kill", time.Since(killed).Round(time.Second))
	if done.Status != "complete" || resultText(t, done.Result) != "Deleted /srv/old.log" {
		t.Fatalf("call = %+v", done)
	}
	if n := watch.count(); n != 2 {
		t.Errorf("the server saw %d retries; want 2 (the one cut short, and the rescue)", n)
	}
}

// TestRequestStateStaysHome walks a whole flow through the pages and the
// API and looks for each round's requestState in every response, header
// and log line.
func TestRequestStateStaysHome(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	var logs logSink
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, &logs)
	c := newClient(t, db)

	// Through the pages, the way a browser without JavaScript does.
	c.login(inst.URL, "admin", adminPassword)
	status, body := c.do("GET", inst.URL+"/", "", "")
	if status != http.StatusOK {
		t.Fatalf("home: %d", status)
	}
	c.do("GET", inst.URL+"/servers/demo/tools/book_flight", "", "")
	status, _ = c.post(inst.URL+"/servers/demo/tools/book_flight", url.Values{})
	if status != http.StatusSeeOther {
		t.Fatalf("start: %d", status)
	}
	calls := c.waitForAny(inst.URL)
	c.waitFor(inst.URL, calls, 10*time.Second, roundIs(1))
	c.do("GET", inst.URL+"/calls/"+calls, "", "")
	c.do("GET", inst.URL+"/calls/"+calls+"/live", "", "")
	c.do("GET", inst.URL+"/inbox", "", "")
	form := url.Values{
		"q0$action": {"accept"}, "q0.passengers": {"3"},
		"q1$action": {"accept"}, "q1.destination": {"Oslo"}, "q1.date": {"2031-02-03"},
	}
	status, body = c.post(inst.URL+"/calls/"+calls+"/rounds/1", form)
	if status != http.StatusSeeOther {
		t.Fatalf("answer round 1: %d %s", status, body)
	}
	c.waitFor(inst.URL, calls, 10*time.Second, roundIs(2))
	c.do("GET", inst.URL+"/calls/"+calls, "", "")
	status, _ = c.post(inst.URL+"/calls/"+calls+"/rounds/2", url.Values{"q0$action": {"accept"}, "q0.class": {"premium"}})
	if status != http.StatusSeeOther {
		t.Fatalf("answer round 2: %d", status)
	}
	c.waitFor(inst.URL, calls, 10*time.Second, isDone)
	c.do("GET", inst.URL+"/calls/"+calls, "", "")
	c.post(inst.URL+"/calls/"+calls+"/rounds/2", url.Values{"q0$action": {"accept"}, "q0.class": {"premium"}})

	// And through the API.
	api := c.startCall(inst.URL, "collect_user_info", `{}`)
	c.waitFor(inst.URL, api.ID, 10*time.Second, roundIs(1))
	c.answer(inst.URL, api.ID, 1, `{"user":{"action":"accept","content":{"name":"Ada","age":36}}}`)
	c.waitFor(inst.URL, api.ID, 10*time.Second, isDone)

	// And the admin pages, which show everything else about the rounds.
	for _, path := range []string{"/admin", "/admin/calls", "/admin/calls/" + calls, "/admin/calls/" + api.ID, "/admin/audit"} {
		if status, _ := c.do("GET", inst.URL+path, "", ""); status != http.StatusOK {
			t.Errorf("GET %s: %d", path, status)
		}
	}

	states := requestStates(t, db)
	if len(states) != 3 {
		t.Fatalf("found %d stored states, want 3", len(states))
	}
	for _, state := range states {
		// The token with and without quotes, and a piece of it, in case
		// something printed part of it.
		needles := []string{state, strings.Trim(state, `"`), strings.Trim(state, `"`)[:24]}
		for _, needle := range needles {
			for _, b := range c.bodies {
				if strings.Contains(b, needle) {
					t.Fatalf("a response carries the request state:\n%s", b[:min(len(b), 500)])
				}
			}
			if strings.Contains(logs.String(), needle) {
				t.Fatal("a log line carries the request state")
			}
			if strings.Contains(base64.StdEncoding.EncodeToString([]byte(logs.String())), base64.StdEncoding.EncodeToString([]byte(needle))) {
				t.Fatal("a log line carries the request state, encoded")
			}
		}
	}
	if !strings.Contains(logs.String(), calls) {
		t.Error("the logs do not mention the call; is the sink wired?")
	}
}

// waitForAny returns the id of the person's most recent call.
func (c *client) waitForAny(base string) string {
	c.t.Helper()
	status, body := c.do("GET", base+"/", "", "")
	if status != http.StatusOK {
		c.t.Fatalf("home: %d", status)
	}
	i := strings.Index(string(body), `href="/calls/`)
	if i < 0 {
		c.t.Fatal("no call listed on the home page")
	}
	id := string(body[i+len(`href="/calls/`):])
	return id[:strings.IndexByte(id, '"')]
}

func requestStates(t *testing.T, db string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `select request_state from rounds where request_state is not null`)
	states, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var b []byte
		err := r.Scan(&b)
		return string(b), err
	})
	if err != nil {
		t.Fatal(err)
	}
	return states
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s is not ready: %d", base, resp.StatusCode)
		}
		return nil
	})
}

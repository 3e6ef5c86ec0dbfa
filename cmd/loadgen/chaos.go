package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/demo"
)

// The chaos run: API and page users book flights against two instances and
// the demo server while an instance is killed with SIGKILL (and started
// again) every killEvery and Postgres — a cluster of the run's own, never
// the machine's — is restarted every pgEvery. Both intervals scale down
// for runs shorter than half an hour.
func chaosIntervals(d time.Duration) (killEvery, pgEvery time.Duration) {
	return min(time.Minute, d/8), min(10*time.Minute, d/3)
}

// chaosReport is what a chaos run counted.
type chaosReport struct {
	Duration                 time.Duration
	Kills, PGRestarts        int
	Calls, Started, Answered int64
	Lost                     []string // "call/seq" of rounds answered but never moved on, or calls never finished
	Repeats                  int64    // answers the server received more than once
	FiveXX, Unexpected5xx    int64
	UnexpectedDetail         []string
	Orphans                  int64 // calls in the database no user saw (their creation's answer was cut)
}

func (r chaosReport) print() {
	fmt.Printf("chaos: %s, %d instance kills (SIGKILL), %d Postgres restarts\n", r.Duration.Round(time.Second), r.Kills, r.PGRestarts)
	fmt.Printf("calls started: %d; rounds started: %d, answered: %d, lost: %d\n", r.Calls, r.Started, r.Answered, len(r.Lost))
	fmt.Printf("repeats the server saw (the same answers twice): %d\n", r.Repeats)
	fmt.Printf("5xx answers: %d, outside the outages: %d\n", r.FiveXX, r.Unexpected5xx)
	fmt.Printf("calls made whose creation's answer was cut (no user saw them): %d\n", r.Orphans)
	for _, l := range r.Lost {
		fmt.Println("  lost:", l)
	}
	for _, u := range r.UnexpectedDetail {
		fmt.Println("  unexpected:", u)
	}
}

// runChaos runs the chaos for d, lets the calls in hand finish, and
// reports. It fails when a round was lost or a 5xx came outside an outage.
func runChaos(ctx context.Context, o options, d time.Duration) (chaosReport, error) {
	rep := chaosReport{Duration: d}
	pg, err := newCluster(ctx)
	if err != nil {
		return rep, err
	}
	defer pg.destroy()
	server := &repeatCounter{seen: map[[32]byte]bool{}}
	demoURL, stopDemo, err := startCountingDemo(server)
	if err != nil {
		return rep, err
	}
	defer stopDemo()
	f, err := startChaosFleet(ctx, o, pg.url("rounds_chaos"), demoURL)
	if err != nil {
		return rep, err
	}
	defer f.stop()

	watch := &outageLog{}
	st := &chaosStats{}
	runCtx, stopUsers := context.WithTimeout(ctx, d)
	defer stopUsers()
	drainCtx, stopDrain := context.WithTimeout(ctx, d+3*time.Minute)
	defer stopDrain()
	var wg sync.WaitGroup
	users := max(o.users, 2)
	for i := range users {
		cl := &chaosClient{urls: f.urls, next: uint64(i), outages: watch, stats: st, token: f.token}
		if i%2 == 0 {
			wg.Go(func() { cl.apiUser(runCtx, drainCtx) })
		} else {
			wg.Go(func() { cl.pageUser(runCtx, drainCtx) })
		}
	}

	killEvery, pgEvery := chaosIntervals(d)
	kill, restart := time.NewTicker(killEvery), time.NewTicker(pgEvery)
	defer kill.Stop()
	defer restart.Stop()
	victim := 0
chaos:
	for {
		select {
		case <-runCtx.Done():
			break chaos
		case <-kill.C:
			if err := f.killAndRestart(drainCtx, victim); err != nil {
				return rep, err
			}
			rep.Kills++
			victim = (victim + 1) % len(f.urls)
		case <-restart.C:
			watch.begin()
			err := pg.restart(drainCtx)
			watch.end()
			if err != nil {
				return rep, err
			}
			rep.PGRestarts++
		}
	}
	wg.Wait()

	rep.Calls, rep.Started, rep.Answered = st.calls.Load(), st.started.Load(), st.answered.Load()
	rep.Lost = st.lost
	rep.Repeats = server.repeats.Load()
	rep.FiveXX = st.fiveXX.Load()
	for _, r := range st.errors {
		if !watch.covers(r.at) {
			rep.Unexpected5xx++
			rep.UnexpectedDetail = append(rep.UnexpectedDetail, r.what)
		}
	}
	if n, err := countCalls(ctx, pg.url("rounds_chaos")); err == nil {
		rep.Orphans = max(n-rep.Calls, 0)
	}
	if len(rep.Lost) > 0 || rep.Unexpected5xx > 0 {
		return rep, fmt.Errorf("%d rounds lost, %d 5xx answers outside the outages (instance logs: %s)", len(rep.Lost), rep.Unexpected5xx, f.tmp)
	}
	// The instance logs are kept only for a run that failed.
	defer os.RemoveAll(f.tmp)
	return rep, nil
}

// cluster is a Postgres of the chaos run's own, made with initdb in a
// temporary directory and listening on a port of its own. Postgres refuses
// to run as root, so as root it runs as the postgres user.
type cluster struct {
	dir, port string
	runAs     string
}

func newCluster(ctx context.Context) (*cluster, error) {
	dir, err := os.MkdirTemp("", "rounds-chaos-pg")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		u, err := osuser.Lookup(c.runAs)
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user to run Postgres as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, c.port, _ = net.SplitHostPort(addr)
	if err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		c.destroy()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.destroy()
		return nil, err
	}
	return c, nil
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable", c.port, db)
}

// run runs a Postgres program, found on PATH or in Debian's directory.
func (c *cluster) run(ctx context.Context, prog string, args ...string) error {
	path, err := exec.LookPath(prog)
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + prog)
		if len(matches) == 0 {
			return fmt.Errorf("%s not found: the chaos run needs Postgres's programs", prog)
		}
		path = matches[len(matches)-1]
	}
	cmd := exec.CommandContext(ctx, path, args...)
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", prog, err, out)
	}
	return nil
}

func (c *cluster) start(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-w", "-t", "60", "-l", filepath.Join(c.dir, "postgres.log"),
		"-o", fmt.Sprintf("-p %s -c listen_addresses=127.0.0.1 -k %s -c max_connections=200", c.port, c.dir), "start")
}

// restart stops Postgres the way an operator's restart does (fast: open
// connections are cut) and starts it again.
func (c *cluster) restart(ctx context.Context) error {
	if err := c.run(ctx, "pg_ctl", "-D", c.data(), "-w", "-m", "fast", "stop"); err != nil {
		return err
	}
	return c.start(ctx)
}

func (c *cluster) destroy() {
	_ = c.run(context.Background(), "pg_ctl", "-D", c.data(), "-w", "-m", "immediate", "stop")
	_ = os.RemoveAll(c.dir)
}

func countCalls(ctx context.Context, db string) (int64, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `select count(*) from calls`).Scan(&n)
	return n, err
}

// outageLog keeps when Postgres was down, so that a 503 then is expected
// and any 5xx at another time is not.
type outageLog struct {
	mu      sync.Mutex
	windows [][2]time.Time
	since   time.Time
}

// outageGrace is how long after Postgres is back a 503 is still expected:
// connections cut by the restart are found broken on their next use.
const outageGrace = 5 * time.Second

func (o *outageLog) begin() { o.mu.Lock(); o.since = time.Now(); o.mu.Unlock() }
func (o *outageLog) end() {
	o.mu.Lock()
	o.windows = append(o.windows, [2]time.Time{o.since, time.Now()})
	o.since = time.Time{}
	o.mu.Unlock()
}

func (o *outageLog) covers(t time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.since.IsZero() && !t.Before(o.since) {
		return true
	}
	for _, w := range o.windows {
		if !t.Before(w[0]) && !t.After(w[1].Add(outageGrace)) {
			return true
		}
	}
	return false
}

type fiveXX struct {
	at   time.Time
	what string
}

type chaosStats struct {
	calls, started, answered, fiveXX atomic.Int64
	mu                               sync.Mutex
	lost                             []string
	errors                           []fiveXX
}

func (s *chaosStats) lose(what string) { s.mu.Lock(); s.lost = append(s.lost, what); s.mu.Unlock() }

// repeatCounter counts the answers the demo server receives more than
// once: the same requestState with the same inputResponses.
type repeatCounter struct {
	mu      sync.Mutex
	seen    map[[32]byte]bool
	repeats atomic.Int64
}

func (rc *repeatCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Params struct {
				InputResponses json.RawMessage `json:"inputResponses"`
				RequestState   json.RawMessage `json:"requestState"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && len(msg.Params.InputResponses) > 0 {
			key := sha256.Sum256(append(append([]byte{}, msg.Params.RequestState...), msg.Params.InputResponses...))
			rc.mu.Lock()
			if rc.seen[key] {
				rc.repeats.Add(1)
			}
			rc.seen[key] = true
			rc.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func startCountingDemo(rc *repeatCounter) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: rc.wrap(demo.Handler(demo.Options{Secret: []byte("loadgen demo secret")}))}
	go srv.Serve(ln) //nolint:errcheck
	return "http://" + ln.Addr().String() + "/mcp", func() { _ = srv.Close() }, nil
}

// chaosFleet is two instances that can be killed and started again on
// the same addresses.
type chaosFleet struct {
	bin, tmp, token string
	env             []string
	urls, addrs     []string
	mu              sync.Mutex
	procs           []*exec.Cmd
}

func startChaosFleet(ctx context.Context, o options, db, demoURL string) (*chaosFleet, error) {
	f := &chaosFleet{bin: o.web}
	var err error
	if f.tmp, err = os.MkdirTemp("", "loadgen-chaos"); err != nil {
		return nil, err
	}
	if f.bin == "" {
		f.bin = filepath.Join(f.tmp, "web")
		build := exec.CommandContext(ctx, "go", "build", "-o", f.bin, "./cmd/web")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building ./cmd/web (run loadgen from the repository's root): %w", err)
		}
	}
	// Short request timeouts, so a job orphaned by a kill is rescued soon.
	f.env = append(os.Environ(), "DATABASE_URL="+db, "MCP_SERVERS=demo="+demoURL, "ADMIN_PASSWORD="+adminPassword,
		"MCP_REQUEST_TIMEOUT=3s", "HEARTBEAT_INTERVAL=1s")
	for i := range max(o.instances, 2) {
		addr, err := freeAddr()
		if err != nil {
			f.stop()
			return nil, err
		}
		f.addrs = append(f.addrs, addr)
		f.urls = append(f.urls, "http://"+addr)
		f.procs = append(f.procs, nil)
		if err := f.start(ctx, i); err != nil {
			f.stop()
			return nil, err
		}
	}
	var out bytes.Buffer
	tok := exec.CommandContext(ctx, f.bin, "token", "create", "admin")
	tok.Env, tok.Stdout, tok.Stderr = f.env, &out, os.Stderr
	if err := tok.Run(); err != nil {
		f.stop()
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	f.token = lines[len(lines)-1]
	return f, nil
}

func (f *chaosFleet) start(ctx context.Context, i int) error {
	logFile, err := os.OpenFile(filepath.Join(f.tmp, fmt.Sprintf("instance-%d.log", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// A restarted instance may find Postgres restarting too: try again.
	for attempt := 0; ; attempt++ {
		cmd := exec.Command(f.bin)
		cmd.Env = append(f.env, "LISTEN_ADDR="+f.addrs[i])
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			return err
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if err := waitReady(ctx, f.urls[i]); err == nil {
			f.mu.Lock()
			f.procs[i] = cmd
			f.mu.Unlock()
			return nil
		}
		_ = cmd.Process.Kill()
		<-exited
		if attempt == 3 || ctx.Err() != nil {
			return fmt.Errorf("instance %d did not start (log: %s)", i, logFile.Name())
		}
	}
}

// killAndRestart kills instance i with SIGKILL and starts it again.
func (f *chaosFleet) killAndRestart(ctx context.Context, i int) error {
	f.mu.Lock()
	p := f.procs[i]
	f.mu.Unlock()
	if p != nil {
		_ = p.Process.Signal(syscall.SIGKILL)
		// start's goroutine reaps it; the port is free once it is gone.
		for syscall.Kill(p.Process.Pid, 0) == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return f.start(ctx, i)
}

func (f *chaosFleet) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		if p != nil {
			_ = p.Process.Signal(os.Interrupt)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range f.procs {
		for p != nil && syscall.Kill(p.Process.Pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if p != nil {
			_ = p.Process.Kill()
		}
	}
}

// chaosClient makes one user's requests. A refused connection (a killed
// instance) or a 503 (Postgres restarting) is tried again on the next
// instance; every 5xx is noted with its time.
type chaosClient struct {
	urls    []string
	next    uint64
	token   string
	outages *outageLog
	stats   *chaosStats
	client  *http.Client
	csrf    string
}

var errGaveUp = errors.New("gave up")

func (c *chaosClient) do(ctx context.Context, method, path string, body io.Reader, contentType string) ([]byte, *http.Response, error) {
	var payload []byte
	if body != nil {
		payload, _ = io.ReadAll(body)
	}
	for {
		if ctx.Err() != nil {
			return nil, nil, errGaveUp
		}
		c.next++
		base := c.urls[c.next%uint64(len(c.urls))]
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(payload))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if c.client == nil {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		client := c.client
		if client == nil {
			client = httpClient
		}
		resp, err := client.Do(req)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if resp.StatusCode >= 500 {
			c.stats.fiveXX.Add(1)
			c.stats.mu.Lock()
			c.stats.errors = append(c.stats.errors, fiveXX{at: time.Now(), what: fmt.Sprintf("%s %s: %d %.200s", method, path, resp.StatusCode, b)})
			c.stats.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return b, resp, nil
	}
}

type chaosCall struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Round  *struct {
		Seq int `json:"seq"`
	} `json:"round"`
}

// apiUser books flights through the API until runCtx ends, and finishes
// the call in hand before drainCtx does.
func (c *chaosClient) apiUser(runCtx, drainCtx context.Context) {
	get := func(id string, after int) (chaosCall, error) {
		b, _, err := c.do(drainCtx, "GET", fmt.Sprintf("/api/v1/calls/%s?wait=5s&after_seq=%d", id, after), nil, "")
		var call chaosCall
		if err == nil {
			err = json.Unmarshal(b, &call)
		}
		return call, err
	}
	for runCtx.Err() == nil {
		b, resp, err := c.do(runCtx, "POST", "/api/v1/calls", strings.NewReader(`{"server":"demo","tool":"book_flight","arguments":{}}`), "application/json")
		if err != nil || resp.StatusCode != http.StatusCreated {
			continue
		}
		var call chaosCall
		_ = json.Unmarshal(b, &call)
		// A destination of its own makes each call's answers, and the
		// state they come back with, unlike any other call's: the server
		// counts a repeat only when the same answers arrive twice.
		n := c.stats.calls.Add(1)
		trip := strings.Replace(tripAnswers, `"Lisbon"`, fmt.Sprintf(`"Lisbon %d"`, n), 1)
		for seq, answers := range []string{trip, seatAnswers} {
			for {
				call, err = get(call.ID, seq)
				if err != nil || call.Status == "complete" || call.Status == "failed" || call.Round != nil && call.Round.Seq > seq {
					break
				}
			}
			if err != nil || call.Round == nil || call.Round.Seq != seq+1 {
				c.stats.lose(fmt.Sprintf("call %s: round %d never came (status %s)", call.ID, seq+1, call.Status))
				break
			}
			c.stats.started.Add(1)
			_, resp, err := c.do(drainCtx, "POST", fmt.Sprintf("/api/v1/calls/%s/rounds/%d", call.ID, seq+1),
				strings.NewReader(`{"inputResponses":`+answers+`}`), "application/json")
			// 409: an earlier try was taken, and its answer cut on the way back.
			if err != nil || resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusConflict {
				c.stats.lose(fmt.Sprintf("call %s: answer to round %d refused", call.ID, seq+1))
				break
			}
			for {
				call, err = get(call.ID, seq+1)
				if err != nil || call.Status == "complete" || call.Status == "failed" || call.Round != nil && call.Round.Seq > seq+1 {
					break
				}
			}
			if err != nil || call.Status == "failed" {
				c.stats.lose(fmt.Sprintf("call %s: round %d answered, then %s", call.ID, seq+1, call.Status))
				break
			}
			c.stats.answered.Add(1)
		}
	}
}

// pageUser books flights through the pages, as a browser without
// JavaScript does: it posts the forms and reloads the call page.
func (c *chaosClient) pageUser(runCtx, drainCtx context.Context) {
	jar, _ := cookiejar.New(nil)
	c.client = &http.Client{Transport: httpClient.Transport, Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for runCtx.Err() == nil {
		var err error
		if c.csrf, err = signIn(runCtx, c.client, c.urls[c.next%uint64(len(c.urls))]); err == nil {
			break
		}
		c.next++
		time.Sleep(200 * time.Millisecond)
	}
	post := func(ctx context.Context, path string, form url.Values) (*http.Response, error) {
		form.Set("csrf_token", c.csrf)
		_, resp, err := c.do(ctx, "POST", path, strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
		return resp, err
	}
	// waitFor reloads the call page until it shows round seq's form, or
	// the result when seq is 0.
	waitFor := func(callPath string, seq int) bool {
		for drainCtx.Err() == nil {
			page, _, err := c.do(drainCtx, "GET", callPath, nil, "")
			if err != nil {
				return false
			}
			if seq > 0 {
				if m := roundSeq.FindSubmatch(page); m != nil && string(m[1]) == strconv.Itoa(seq) {
					return true
				}
			} else if bytes.Contains(page, []byte(`data-status="complete"`)) {
				return true
			}
			if bytes.Contains(page, []byte(`data-status="failed"`)) {
				return false
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	forms := []url.Values{
		{"q0$action": {"accept"}, "q0.passengers": {"2"}, "q1$action": {"accept"}, "q1.destination": {"Lisbon"}, "q1.date": {"2031-05-04"}},
		{"q0$action": {"accept"}, "q0.class": {"business"}},
	}
	for runCtx.Err() == nil {
		resp, err := post(runCtx, "/servers/demo/tools/book_flight", url.Values{})
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			continue
		}
		callPath := resp.Header.Get("Location")
		n := c.stats.calls.Add(1)
		forms[0].Set("q1.destination", fmt.Sprintf("Lisbon %d", n))
		for i, form := range forms {
			if !waitFor(callPath, i+1) {
				c.stats.lose(fmt.Sprintf("%s: round %d never came", callPath, i+1))
				break
			}
			c.stats.started.Add(1)
			resp, err := post(drainCtx, fmt.Sprintf("%s/rounds/%d", callPath, i+1), cloneValues(form))
			if err != nil || resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusConflict {
				status := 0
				if resp != nil {
					status = resp.StatusCode
				}
				c.stats.lose(fmt.Sprintf("%s: answer to round %d refused (%d)", callPath, i+1, status))
				break
			}
			next := i + 2
			if i == len(forms)-1 {
				next = 0
			}
			if !waitFor(callPath, next) {
				c.stats.lose(fmt.Sprintf("%s: round %d answered, then nothing", callPath, i+1))
				break
			}
			c.stats.answered.Add(1)
		}
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
	var pg chaosDatabase
	var err error
	if o.chaosPooled {
		pg, err = newBouncedCluster(ctx)
	} else {
		pg, err = newCluster(ctx)
	}
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
	f, err := startChaosFleet(ctx, o, pg.env("rounds_chaos"), demoURL)
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

func startChaosFleet(ctx context.Context, o options, dbEnv []string, demoURL string) (*chaosFleet, error) {
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
	f.env = append(append(os.Environ(), dbEnv...), "MCP_SERVERS=demo="+demoURL, "ADMIN_PASSWORD="+adminPassword,
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

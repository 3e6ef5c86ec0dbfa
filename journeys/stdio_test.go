package journeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// Local servers over stdio: this test binary, run as a program, is the
// FastMCP 4 fake speaking newline-delimited JSON-RPC (see TestMain), with
// a requestState key made as its process starts.

const (
	stdioTripTool    = "book_trip_batched"
	stdioTripAnswers = `{"destination":{"action":"accept","content":{"value":"Porto"}},"travellers":{"action":"accept","content":{"value":2}},"cabin":{"action":"accept","content":{"value":"first"}}}`
	stdioTripResult  = "Booked 2 to Porto, first"
)

// serversFile writes an mcpServers file naming the fake twice: "trips",
// whose 2026-07-28 rounds share a long-lived process, and "names", pinned
// to 2025-11-25, a process per call.
func serversFile(t *testing.T, maxProcesses int) string {
	t.Helper()
	entry := func(extra string) string {
		args, _ := json.Marshal([]string{"-test.run=^$"})
		bin, _ := json.Marshal(os.Args[0])
		return `{"command": ` + string(bin) + `, "args": ` + string(args) + `, "env": {"ROUNDS_TEST_STDIO": "${FAKE_FLAVOUR}", "ROUNDS_TEST_MARK": "${TEST_MARK}"}` + extra + `}`
	}
	file := "{\"mcpServers\": {\n  \"trips\": " + entry("") + ",\n  \"names\": " +
		entry(`, "protocol": "2025-11-25", "maxProcesses": `+strconv.Itoa(maxProcesses)) + ",\n  \"old\": " +
		strings.Replace(entry(`, "protocol": "2025-11-25"`), "${FAKE_FLAVOUR}", askTwiceStdio, 1) + "\n}}\n"
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stdioEnv is an instance's environment with the servers file, and
// timeouts short enough that every answer comes after them.
func stdioEnv(t *testing.T, maxProcesses int) map[string]string {
	return map[string]string{
		"MCP_SERVERS_FILE":    serversFile(t, maxProcesses),
		"FAKE_FLAVOUR":        string(mcptest.FastMCP4),
		"TEST_MARK":           t.Name(),
		"MCP_REQUEST_TIMEOUT": "5s",
		"HEARTBEAT_INTERVAL":  "1s",
		"EXPIRY_INTERVAL":     "1s",
	}
}

// query runs one query on the test's database.
func query[T any](t *testing.T, db, sql string, args ...any) T {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out T
	if err := conn.QueryRow(ctx, sql, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// pastTimeouts waits, as a person takes their time, until the database's
// clock is d past the moment round seq of the call was asked, and every
// instance still beating has beaten since: an answer given then comes
// after every timeout of d or less, as the instances see them.
func pastTimeouts(t *testing.T, db, callID string, seq int, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	eventually(t, d+time.Minute, func() error {
		var left float64
		var behind int
		err := conn.QueryRow(ctx, `select greatest(extract(epoch from r.created_at + make_interval(secs => $3) - now()), 0),
				(select count(*) from instances i where i.stopped_at is null
					and i.last_seen_at > now() - make_interval(secs => 3 * i.interval_ms / 1000.0)
					and i.last_seen_at <= r.created_at + make_interval(secs => $3))
			from rounds r where r.call_id = $1 and r.seq = $2`, callID, seq, d.Seconds()).Scan(&left, &behind)
		switch {
		case err != nil:
			return fmt.Errorf("round %d: %w", seq, err)
		case left > 0:
			return fmt.Errorf("round %d was asked less than %s ago: %.1fs to go", seq, d, left)
		case behind > 0:
			return fmt.Errorf("%d instances have not beaten since round %d was asked %s ago", behind, seq, d)
		}
		return nil
	})
}

// localProcess is the running shared process of server on an instance:
// its name and pid, once the instance has said it runs.
func localProcess(t *testing.T, db, instance, server string) (string, int) {
	t.Helper()
	var process string
	var pid int
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	eventually(t, 20*time.Second, func() error {
		if err := conn.QueryRow(ctx, `select process, pid from local_processes where instance = $1 and server = $2 and running`,
			instance, server).Scan(&process, &pid); err != nil {
			return fmt.Errorf("server %s never ran on instance %s: %w", server, instance, err)
		}
		return nil
	})
	return process, pid
}

// progress is what the API says of a call's progress.
func (c *client) progress(base, id string) string {
	c.t.Helper()
	_, b := c.do("GET", base+"/api/v1/calls/"+id, "", "")
	var call struct {
		Progress *struct {
			Message string `json:"message"`
		} `json:"progress"`
	}
	_ = json.Unmarshal(b, &call)
	if call.Progress == nil {
		return ""
	}
	return call.Progress.Message
}

func (c *client) startOn(base, server, tool string) apiCall {
	c.t.Helper()
	return c.startWith(base, `{"server":"`+server+`","tool":"`+tool+`","arguments":{}}`)
}

// TestStdioAnsweredElsewhere: a 2026-07-28 round asked by one instance's
// process is answered on the other instance 15 s later, after every
// timeout; the retry is handed over to the instance whose process asked,
// and the process opens its own state: the call completes without the
// server being asked afresh.
func TestStdioAnsweredElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("answers 15 s later")
	}
	t.Parallel()
	db := newDatabase(t)
	env := stdioEnv(t, 4)
	var logsA, logsB logSink
	a := startInstance(t, db, env, &logsA)
	b := startInstance(t, db, env, &logsB)
	c := newClient(t, db)
	localProcess(t, db, a.InstanceID(), "trips")
	localProcess(t, db, b.InstanceID(), "trips")

	call := c.startOn(a.URL, "trips", stdioTripTool)
	c.waitFor(a.URL, call.ID, 20*time.Second, roundIs(1))
	owner := query[string](t, db, `select p.instance from rounds r join local_processes p on p.process = r.process
		where r.call_id = $1 and r.seq = 1`, call.ID)
	other, logs := b, &logsB
	if owner == b.InstanceID() {
		other, logs = a, &logsA
	}
	pastTimeouts(t, db, call.ID, 1, 15*time.Second)
	if status, body := c.answer(other.URL, call.ID, 1, stdioTripAnswers); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(other.URL, call.ID, 20*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != stdioTripResult {
		t.Fatalf("call = %+v", done)
	}
	if n := query[int](t, db, `select count(*) from rounds where call_id = $1`, call.ID); n != 1 {
		t.Errorf("%d rounds; want the one, answered by the process that asked it", n)
	}
	if !strings.Contains(logs.String(), "handing the retry to the instance whose process asked") {
		t.Errorf("the answering instance did not hand the retry over; its log:\n%s", logs.String())
	}
	if n := query[int](t, db, `select count(*) from audit_log where action = 'server.process.start' and target = 'trips'`); n != 2 {
		t.Errorf("%d starts audited, want one per instance", n)
	}
}

// TestStdioProcessRestarts: the process that asked dies; the instance
// says so and starts it again. The answer that comes after finds the
// process gone, so the state is taken for expired: the server is asked
// afresh in the new process and the same questions are answered again.
func TestStdioProcessRestarts(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	var logs logSink
	inst := startInstance(t, db, stdioEnv(t, 4), &logs)
	c := newClient(t, db)
	first, pid := localProcess(t, db, inst.InstanceID(), "trips")

	call := c.startOn(inst.URL, "trips", stdioTripTool)
	c.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(1))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if p, _ := localProcess(t, db, inst.InstanceID(), "trips"); p == first {
			return fmt.Errorf("the process was not started again; log:\n%s", logs.String())
		}
		return nil
	})
	if n := query[int](t, db, `select restarts from local_processes where instance = $1 and server = 'trips'`, inst.InstanceID()); n != 1 {
		t.Errorf("restarts = %d, want 1", n)
	}
	if !strings.Contains(logs.String(), "the local server's process exited; starting it again") ||
		!strings.Contains(logs.String(), `"status":"signal: killed"`) {
		t.Errorf("the log does not say the process exited and why:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"trips: fastmcp-4.0.0b3: serving over stdio"`) {
		t.Error("the process's stderr is not logged line by line, prefixed with the server's name")
	}

	if status, body := c.answer(inst.URL, call.ID, 1, stdioTripAnswers); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 20*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != stdioTripResult {
		t.Fatalf("call = %+v", done)
	}
	if n := query[int](t, db, `select count(*) from rounds where call_id = $1 and state_expired_at is not null`, call.ID); n != 1 {
		t.Errorf("%d rounds refused, want the one the gone process asked", n)
	}
	if by := query[string](t, db, `select answered_by from rounds where call_id = $1 and seq = 2`, call.ID); by != "rounds (the answers given before)" {
		t.Errorf("round 2 answered by %q, want the answers given before", by)
	}
}

// TestStdioHeldAcrossInstances: a handshake-era call holds a process of
// its own; a second call waits its turn while the one process is busy, and
// says so; the first question is answered 15 s later on the other
// instance, and then the second call gets the process.
func TestStdioHeldAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("answers 15 s later")
	}
	t.Parallel()
	db := newDatabase(t)
	env := stdioEnv(t, 1)
	a := startInstance(t, db, env, nil)
	c := newClient(t, db)
	call := c.startOn(a.URL, "names", "collect_user_info")
	c.waitFor(a.URL, call.ID, 20*time.Second, roundIs(1))
	b := startInstance(t, db, env, nil) // the second call is surely a's
	second := c.startOn(a.URL, "names", "collect_user_info")
	waiting := c.waitFor(a.URL, second.ID, 20*time.Second, func(ac apiCall) bool {
		return strings.Contains(c.progress(a.URL, ac.ID), "Waiting for the server's process on this instance: it is busy with another call.")
	})
	if waiting.Status == "input_required" {
		t.Fatalf("the second call got a process while the first held it: %+v", waiting)
	}
	if n := query[int](t, db, `select sessions from local_processes where instance = $1 and server = 'names' and max_sessions = 1`,
		a.InstanceID()); n != 1 {
		t.Errorf("the admin's record says %d of the call's processes run, want 1 of 1", n)
	}

	pastTimeouts(t, db, call.ID, 1, 15*time.Second)
	if status, body := c.answer(b.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada","age":36}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(b.URL, call.ID, 20*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Hello Ada, you are 36 years old" {
		t.Fatalf("call = %+v", done)
	}
	c.waitFor(b.URL, second.ID, 20*time.Second, roundIs(1))
}

// TestStdioHeldProcessCrashes: the process of a handshake-era call dies
// while its question waits for a person; the call fails at once, saying
// the server's process stopped and how, and the question can no longer be
// answered.
func TestStdioHeldProcessCrashes(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	var logs logSink
	inst := startInstance(t, db, stdioEnv(t, 4), &logs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	c := newClient(t, db)
	call := c.startOn(inst.URL, "names", "collect_user_info")
	c.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(1))
	_, shared := localProcess(t, db, inst.InstanceID(), "trips")
	pids := slices.DeleteFunc(markedProcesses(t, t.Name()), func(pid int) bool { return pid == shared })
	if len(pids) != 1 {
		t.Fatalf("processes of the test besides trips' = %v, want the call's one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "failed" || done.Error == nil ||
		!strings.Contains(done.Error.Message, "The server's process stopped (signal: killed) while this call was open on it") {
		t.Fatalf("call = %+v", done)
	}
	if status, _ := c.answer(inst.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada","age":36}}}`); status != http.StatusConflict {
		t.Errorf("an answer after the end: %d, want 409", status)
	}
}

// markedProcesses lists the local servers' processes a test started: those
// whose environment carries its mark.
func markedProcesses(t *testing.T, mark string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), "ROUNDS_TEST_MARK="+mark) {
			out = append(out, pid)
		}
	}
	return out
}

// askTwiceStdio names the go-sdk server of serveAskTwice for TestMain.
const askTwiceStdio = "ask-twice"

// serveAskTwice serves, over stdin and stdout with the go-sdk's own stdio
// transport, a handshake-era server whose tool asks twice mid-call: a
// name, then a colour.
func serveAskTwice() error {
	server := mcp.NewServer(&mcp.Implementation{Name: "ask-twice", Version: "1"}, nil)
	ask := func(ctx context.Context, req *mcp.CallToolRequest, message, field string) (string, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: map[string]any{"type": "object",
			"required": []string{field}, "properties": map[string]any{field: map[string]any{"type": "string", "title": field}}}})
		if err != nil {
			return "", err
		}
		if res.Action != "accept" {
			return "", errors.New("no " + field)
		}
		value, _ := res.Content[field].(string)
		return value, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "ask_twice", Description: "Asks for a name, then a colour, mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			name, err := ask(ctx, req, "What is your name?", "name")
			if err != nil {
				return nil, nil, err
			}
			colour, err := ask(ctx, req, "And your favourite colour, "+name+"?", "colour")
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " likes " + colour}}}, nil, nil
		})
	return server.Run(context.Background(), &mcp.StdioTransport{})
}

// TestStdioHeldStartedAgain: the process of a handshake-era call dies
// after its first question was answered, while its second waits; the call
// fails, offering to start again with the answers filled in. Started
// again, it gets a new process: its first question is filled in with the
// answer given before, and the call completes.
func TestStdioHeldStartedAgain(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, stdioEnv(t, 4), nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	call := c.startOn(inst.URL, "old", "ask_twice")
	c.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(1))
	if status, body := c.answer(inst.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	c.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(2))
	_, shared := localProcess(t, db, inst.InstanceID(), "trips")
	pids := slices.DeleteFunc(markedProcesses(t, t.Name()), func(pid int) bool { return pid == shared })
	if len(pids) != 1 {
		t.Fatalf("processes of the test besides trips' = %v, want the call's one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	failed := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if failed.Status != "failed" || failed.Error == nil || !strings.Contains(failed.Error.Message, "The server's process stopped") {
		t.Fatalf("call = %+v", failed)
	}
	if _, page := c.do("GET", inst.URL+"/calls/"+call.ID, "", ""); !strings.Contains(string(page), "Start again with your answers filled in") {
		t.Error("the call's page does not offer to start again with the answers filled in")
	}

	if status, body := c.do("POST", inst.URL+"/api/v1/calls/"+call.ID+"/retry", "application/json", ""); status != http.StatusAccepted {
		t.Fatalf("retry: %d %s", status, body)
	}
	again := c.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(3))
	if !strings.Contains(string(again.Round.InputRequests["elicitation"]), "What is your name?") {
		t.Fatalf("round 3 = %s", again.Round.InputRequests["elicitation"])
	}
	if _, page := c.do("GET", inst.URL+"/calls/"+call.ID, "", ""); !strings.Contains(string(page), `value="Ada"`) {
		t.Errorf("the question asked again is not filled in with the answer given before:\n%s", page)
	}
	if status, body := c.answer(inst.URL, call.ID, 3, `{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	c.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(4))
	if status, body := c.answer(inst.URL, call.ID, 4, `{"elicitation":{"action":"accept","content":{"colour":"teal"}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 20*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Ada likes teal" {
		t.Fatalf("call = %+v", done)
	}
}

// TestStdioInstanceKilled: the instance whose process holds a
// handshake-era question is killed, and its process with it. Within a
// minute the call fails, saying the server's process stopped.
func TestStdioInstanceKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("takes up to a minute")
	}
	t.Parallel()
	db := newDatabase(t)
	env := stdioEnv(t, 4)
	addr := freeAddr(t)
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), "ROUNDS_TEST_INSTANCE=1", "DATABASE_URL="+db, "ADMIN_PASSWORD="+adminPassword, "LISTEN_ADDR="+addr)
	for k, v := range env {
		proc.Env = append(proc.Env, k+"="+v)
	}
	var procLog logSink
	proc.Stdout, proc.Stderr = &procLog, &procLog
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	a := "http://" + addr
	waitReady(t, a)
	c := newClient(t, db)
	call := c.startOn(a, "names", "collect_user_info")
	c.waitFor(a, call.ID, 20*time.Second, roundIs(1))

	b := startInstance(t, db, env, nil)
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	killed := time.Now()
	done := c.waitFor(b.URL, call.ID, time.Minute, isDone)
	t.Logf("failed %s after the kill", time.Since(killed).Round(time.Second))
	if done.Status != "failed" || done.Error == nil || !strings.Contains(done.Error.Message, "The server's process stopped") {
		t.Fatalf("call = %+v", done)
	}
	if status, _ := c.answer(b.URL, call.ID, 1, `{"elicitation":{"action":"accept","content":{"name":"Ada","age":36}}}`); status != http.StatusConflict {
		t.Errorf("an answer after the end: %d, want 409", status)
	}
}

// TestStdioMalformedFile: an instance does not start with a servers file
// it cannot read, and says where and why.
func TestStdioMalformedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, []byte("{\"mcpServers\": {\n  \"notes\": {\"command\": \"python3\", \"args\": [\"notes.py\"],}\n}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), "ROUNDS_TEST_INSTANCE=1", "DATABASE_URL=postgres://postgres@127.0.0.1:1/none",
		"LISTEN_ADDR="+freeAddr(t), "MCP_SERVERS_FILE="+path)
	out, err := proc.CombinedOutput()
	if err == nil {
		t.Fatal("the instance started")
	}
	if want := "MCP_SERVERS_FILE " + path + ", line 2: invalid character '}'"; !strings.Contains(string(out), want) {
		t.Errorf("output = %s, want %q", out, want)
	}
}

// TestServersFileHTTPEntry: an HTTP server of the servers file works as
// one of MCP_SERVERS does, its header taken from the environment and sent
// to it, while the file holds only the variable's name.
func TestServersFileHTTPEntry(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	var mu sync.Mutex
	var keys []string
	demoURL := demoServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			keys = append(keys, r.Header.Get("X-Api-Key"))
			mu.Unlock()
			if r.Header.Get("X-Api-Key") != "k-123" {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	path := filepath.Join(t.TempDir(), "servers.json")
	file := `{"mcpServers": {"issues": {"url": "` + demoURL + `", "headers": {"X-Api-Key": "${ISSUES_KEY}"}, "sampling": true}}}`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS_FILE": path, "ISSUES_KEY": "k-123"}, nil)
	c := newClient(t, db)
	call := c.startWith(inst.URL, `{"server":"issues","tool":"confirm_delete","arguments":{"path":"/srv/old.log"}}`)
	c.waitFor(inst.URL, call.ID, 20*time.Second, roundIs(1))
	mu.Lock()
	defer mu.Unlock()
	if len(keys) == 0 || slices.ContainsFunc(keys, func(k string) bool { return k != "k-123" }) {
		t.Errorf("the server got the keys %q, want k-123 on every request", keys)
	}
}

package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mcp-rounds/rounds/app"
	"github.com/mcp-rounds/rounds/store/pgcluster"
)

// cluster is the test binary's own primary, standby and PgBouncer.
func cluster(t *testing.T) *pgcluster.Cluster {
	t.Helper()
	if m := pgcluster.Missing(); m != "" {
		t.Skip("needs " + m)
	}
	c, err := pgcluster.Get()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clusterDatabase makes a fresh database on the cluster's primary.
func clusterDatabase(t *testing.T, c *pgcluster.Cluster) string {
	t.Helper()
	db, err := c.NewDatabase(context.Background(), "journeys")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// startInstances starts n instances at the same moment with one
// environment, as a deployment rolling out does: their migrations race.
func startInstances(t *testing.T, n int, env map[string]string, logs *logSink) []*instance {
	t.Helper()
	getenv := func(k string) string {
		switch k {
		case "ADMIN_PASSWORD":
			return adminPassword
		case "LISTEN_ADDR":
			return "127.0.0.1:0"
		}
		return env[k]
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*instance, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a, err := app.Start(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = &instance{App: a, URL: "http://" + a.Addr()}
		})
	}
	wg.Wait()
	for _, inst := range out {
		if inst == nil {
			continue
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = inst.Shutdown(ctx)
		})
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d did not start: %v\nlogs:\n%s", i, err, logs)
		}
	}
	return out
}

// clusterToken makes an API token through the command line, as an
// operator would with the same two URLs the instances have.
func clusterToken(t *testing.T, env map[string]string, name string) string {
	t.Helper()
	var out bytes.Buffer
	if err := app.Command(context.Background(), []string{"token", "create", name}, strings.NewReader(""), &out,
		func(k string) string { return env[k] }); err != nil {
		t.Fatalf("web token create %s: %v", name, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1]
}

// errorLines are the log lines at level ERROR.
func errorLines(logs string) []string {
	var out []string
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}

// TestFourInstancesThroughPgBouncer starts four instances at once behind
// PgBouncer in transaction mode (a pool of 8 server connections), Postgres
// itself named for listening and migrations. Each call is started on one
// instance and its rounds answered on two others, each answer given after
// the request timeout and the heartbeat have passed, and its result read
// on a fourth. Nothing fails, nothing is migrated twice, and the queries
// went through the pooler.
func TestFourInstancesThroughPgBouncer(t *testing.T) {
	t.Parallel()
	cl := cluster(t)
	db := clusterDatabase(t, cl)
	env := map[string]string{
		"DATABASE_URL":        cl.PooledURL(db),
		"DATABASE_DIRECT_URL": cl.PrimaryURL(db),
		"MCP_SERVERS":         "demo=" + demoServer(t, nil),
		"MCP_REQUEST_TIMEOUT": "2s",
		"HEARTBEAT_INTERVAL":  "500ms",
	}
	var logs logSink
	insts := startInstances(t, 4, env, &logs)

	ctx := context.Background()
	primary, err := pgx.Connect(ctx, cl.PrimaryURL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close(ctx)
	var twice int
	if err := primary.QueryRow(ctx, `select count(*) from (select version_id from goose_db_version
		group by 1 having count(*) > 1) d`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice != 0 {
		t.Fatalf("%d migrations were applied more than once", twice)
	}

	c := &client{t: t, token: clusterToken(t, env, "admin")}
	c.jar, _ = cookiejar.New(nil)
	const calls = 8
	// The human pause, as the database sees it: past the request timeout
	// since the round was asked, and every instance has beaten since.
	const pause = 2 * time.Second
	t.Run("calls", func(t *testing.T) {
		for i := range calls {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				c := &client{t: t, token: c.token, jar: c.jar}
				on := func(k int) string { return insts[(i+k)%len(insts)].URL }
				call := c.startCall(on(0), "book_flight", `{}`)
				c.waitFor(on(1), call.ID, 20*time.Second, roundIs(1))
				pastTimeouts(t, cl.PrimaryURL(db), call.ID, 1, pause)
				if status, body := c.answer(on(1), call.ID, 1, tripAnswers); status != http.StatusAccepted {
					t.Fatalf("answer round 1: %d %s", status, body)
				}
				c.waitFor(on(2), call.ID, 20*time.Second, roundIs(2))
				pastTimeouts(t, cl.PrimaryURL(db), call.ID, 2, pause)
				if status, body := c.answer(on(2), call.ID, 2, seatAnswers); status != http.StatusAccepted {
					t.Fatalf("answer round 2: %d %s", status, body)
				}
				done := c.waitFor(on(3), call.ID, 20*time.Second, isDone)
				if got := resultText(t, done.Result); done.Status != "complete" ||
					!strings.Contains(got, "Booked 2 passengers to Lisbon on 2031-05-04, Business class") {
					t.Fatalf("call = %s, result %q", done.Status, got)
				}
			})
		}
	})
	if t.Failed() {
		t.Logf("logs:\n%s", logs.String())
		return
	}

	// Every instance listens on Postgres itself, not through the pooler.
	var listeners int
	if err := primary.QueryRow(ctx, `select count(*) from pg_stat_activity
		where datname = $1 and application_name = 'rounds notifier'`, db).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != len(insts) {
		t.Errorf("%d notifier connections on the primary, want %d", listeners, len(insts))
	}
	// The work went through PgBouncer, over at most its 8 connections.
	// (PgBouncer adds up its counts every second.)
	var xacts, servers int64
	if err := poll(5*time.Second, func() error {
		if xacts, servers = bouncerStats(t, cl, db); xacts < 100 {
			return fmt.Errorf("PgBouncer carried %d transactions for the database; want the instances' queries", xacts)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if servers > pgcluster.PoolSize {
		t.Errorf("PgBouncer holds %d server connections, more than its pool of %d", servers, pgcluster.PoolSize)
	}
	if errs := errorLines(logs.String()); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
}

// bouncerStats reads PgBouncer's count of transactions for db and its
// server connections to it now, from its admin console.
func bouncerStats(t *testing.T, cl *pgcluster.Cluster, db string) (xacts, servers int64) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, cl.PooledURL("pgbouncer")+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	column := func(show, name string, each func(row map[string]any)) {
		rows, err := admin.Query(ctx, show)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			row := map[string]any{}
			for i, f := range rows.FieldDescriptions() {
				row[f.Name] = vals[i]
			}
			if fmt.Sprint(row["database"]) == name {
				each(row)
			}
		}
	}
	num := func(v any) int64 {
		switch v := v.(type) {
		case pgtype.Numeric:
			n, _ := v.Int64Value()
			return n.Int64
		case int64:
			return v
		}
		var n int64
		fmt.Sscan(fmt.Sprint(v), &n)
		return n
	}
	column("show stats", db, func(row map[string]any) { xacts += num(row["total_xact_count"]) })
	column("show pools", db, func(row map[string]any) {
		servers += num(row["sv_active"]) + num(row["sv_idle"]) + num(row["sv_used"]) + num(row["sv_tested"]) + num(row["sv_login"])
	})
	return xacts, servers
}

// getCall reads a call through the API.
func (c *client) getCall(base, id string) apiCall {
	c.t.Helper()
	status, b := c.do("GET", base+"/api/v1/calls/"+id, "", "")
	if status != http.StatusOK {
		c.t.Fatalf("get call: %d %s", status, b)
	}
	var call apiCall
	if err := json.Unmarshal(b, &call); err != nil {
		c.t.Fatal(err)
	}
	return call
}

// apiCalls lists the person's calls through the API.
func (c *client) apiCalls(base string) map[string]string {
	c.t.Helper()
	status, b := c.do("GET", base+"/api/v1/calls?limit=200", "", "")
	if status != http.StatusOK {
		c.t.Fatalf("list calls: %d %s", status, b)
	}
	var page struct {
		Calls []apiCall `json:"calls"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		c.t.Fatal(err)
	}
	out := map[string]string{}
	for _, call := range page.Calls {
		out[call.ID] = call.Status
	}
	return out
}

// TestReadReplica runs two instances whose lists read a standby. With the
// standby replaying 3 s behind, a person's answer given on one instance
// shows in their list on the other at once; a list read without their
// position shows the standby's older view, which is how we know the lists
// read it. Then the standby is stopped: the lists keep answering, from
// the primary, and read the standby again once it is back.
func TestReadReplica(t *testing.T) {
	t.Parallel()
	cl := cluster(t)
	db := clusterDatabase(t, cl)
	ctx := context.Background()
	env := map[string]string{
		"DATABASE_URL":        cl.PooledURL(db),
		"DATABASE_DIRECT_URL": cl.PrimaryURL(db),
		"DATABASE_READ_URL":   cl.ReplicaURL(db),
		"MCP_SERVERS":         "demo=" + demoServer(t, nil),
	}
	var logs logSink
	insts := startInstances(t, 2, env, &logs)
	a, b := insts[0].URL, insts[1].URL
	token := clusterToken(t, env, "admin")
	person := &client{t: t, token: token}
	person.jar, _ = cookiejar.New(nil)

	t.Run("lagging", func(t *testing.T) {
		if err := cl.SetApplyDelay(ctx, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		defer cl.SetApplyDelay(ctx, 0) //nolint:errcheck
		person.t = t
		call := person.startCall(a, "confirm_delete", `{"path":"/tmp/lag.txt"}`)
		person.waitFor(a, call.ID, 20*time.Second, roundIs(1))
		// Wait, as a person reading the question would, until the standby
		// has the round too.
		stranger := &client{t: t, token: token}
		eventually(t, 20*time.Second, func() error {
			if got := stranger.apiCalls(b)[call.ID]; got != "input_required" {
				return fmt.Errorf("the standby never showed the round: the call is %q", got)
			}
			return nil
		})

		answered := time.Now()
		if status, body := person.answer(a, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
			t.Fatalf("answer: %d %s", status, body)
		}
		if got := person.apiCalls(b)[call.ID]; got == "" || got == "input_required" {
			t.Fatalf("on the other instance, right after answering, the person's list says %q", got)
		}
		// The same person, on the other instance, without the position of
		// their write (a program keeping no cookies): the standby's view.
		stale := stranger.apiCalls(b)[call.ID]
		t.Logf("the standby's view read %s after the answer", time.Since(answered).Round(time.Millisecond))
		if time.Since(answered) < 2500*time.Millisecond && stale != "input_required" {
			t.Errorf("a list without the write's position says %q; want the standby's %q: the lists do not read the standby",
				stale, "input_required")
		}
		// Every call page and the call in the API read the primary.
		if got := stranger.getCall(b, call.ID).Status; got == "input_required" {
			t.Errorf("GET /api/v1/calls/{id} on the other instance says %q", got)
		}
	})

	t.Run("lagging, pages", func(t *testing.T) {
		if err := cl.SetApplyDelay(ctx, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		defer cl.SetApplyDelay(ctx, 0) //nolint:errcheck
		// One person in two browsers: the one that answers, and one that
		// has only signed in (no write, so nothing to wait for).
		browser := &client{t: t, token: token}
		browser.jar, _ = cookiejar.New(nil)
		browser.login(a, "admin", adminPassword)
		other := &client{t: t}
		other.jar, _ = cookiejar.New(nil)
		other.login(b, "admin", adminPassword)
		// The rounds waiting, without those settled lately below them.
		inbox := func(c *client) string {
			status, page := c.do("GET", b+"/inbox", "", "")
			if status != http.StatusOK {
				t.Fatalf("inbox: %d", status)
			}
			waiting, _, _ := strings.Cut(string(page), `data-testid="inbox-settled"`)
			return waiting
		}
		call := browser.startCall(a, "confirm_delete", `{"path":"/tmp/page.txt"}`)
		eventually(t, 20*time.Second, func() error {
			if !strings.Contains(inbox(other), call.ID) {
				return errors.New("the round never reached the inbox read from the standby")
			}
			return nil
		})
		answered := time.Now()
		status, body := browser.post(a+"/calls/"+call.ID+"/rounds/1", url.Values{"q0$action": {"accept"}, "q0.confirm": {"true"}})
		if status != http.StatusSeeOther {
			t.Fatalf("answer through the page: %d %s", status, body)
		}
		if strings.Contains(inbox(browser), call.ID) {
			t.Fatalf("on the other instance, right after answering, the person's inbox still lists the round")
		}
		staleView := inbox(other)
		t.Logf("the standby's view read %s after the answer", time.Since(answered).Round(time.Millisecond))
		if time.Since(answered) < 2500*time.Millisecond && !strings.Contains(staleView, call.ID) {
			t.Errorf("the inbox of a browser that wrote nothing no longer lists the round: the inbox does not read the standby")
		}
	})

	t.Run("down", func(t *testing.T) {
		person.t = t
		call := person.startCall(a, "confirm_delete", `{"path":"/tmp/down.txt"}`)
		person.waitFor(a, call.ID, 20*time.Second, roundIs(1))
		if err := cl.StopReplica(ctx); err != nil {
			t.Fatal(err)
		}
		restarted := false
		defer func() {
			if !restarted {
				_ = cl.StartReplica(ctx)
			}
		}()
		lists := func() {
			for _, base := range []string{a, b} {
				if got := person.apiCalls(base)[call.ID]; got != "input_required" {
					t.Errorf("with the standby down, %s lists the call as %q", base, got)
				}
				if status, body := person.do("GET", base+"/api/v1/calls?limit=5", "", ""); status != http.StatusOK {
					t.Errorf("with the standby down: %d %s", status, body)
				}
			}
		}
		lists()
		// The lists read just now may all have gone to the primary (the
		// person's write was newer than the standby's last look); the
		// instances' looks, every half second, notice it is down.
		eventually(t, 10*time.Second, func() error {
			if !strings.Contains(logs.String(), "read replica unusable") {
				return errors.New("no instance noticed the standby was down")
			}
			return nil
		})
		lists()
		if err := cl.StartReplica(ctx); err != nil {
			t.Fatal(err)
		}
		restarted = true
		if got := person.apiCalls(b)[call.ID]; got != "input_required" {
			t.Errorf("with the standby back, the list says %q", got)
		}
	})
	if errs := errorLines(logs.String()); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
	if !strings.Contains(logs.String(), "read replica unusable") {
		t.Errorf("no instance noticed the standby was down")
	}
}

package journeys

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/handlers"
)

// adminPool opens the test's database for checks the pages do not show.
func adminPool(t *testing.T, db string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// adminRoutes lists every admin route the app registers, so a new one is
// covered by TestAdminHiddenFromOthers without being added there.
func adminRoutes(t *testing.T) [][2]string {
	t.Helper()
	var out [][2]string
	for _, r := range handlers.New(handlers.Options{}).Routes().Routes() {
		if (r.Method == http.MethodGet || r.Method == http.MethodPost) &&
			(r.Path == "/admin" || strings.HasPrefix(r.Path, "/admin/")) && !strings.HasSuffix(r.Path, "*") {
			out = append(out, [2]string{r.Method, r.Path})
		}
	}
	return out
}

// TestAdminHiddenFromOthers: a person who is not an admin gets, on every
// admin route and with every method, the very 404 page of a page that
// does not exist, and nothing changes.
func TestAdminHiddenFromOthers(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	owner := newClient(t, db)
	call := owner.startCall(inst.URL, "confirm_delete", `{"path":"/a"}`)
	owner.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))

	addUser(t, db, "bob", "bob's long password")
	bob := newClient(t, db)
	bob.login(inst.URL, "bob", "bob's long password")
	_, missingGET := bob.do("GET", inst.URL+"/no-such-page", "", "")
	_, missingPOST := bob.post(inst.URL+"/no-such-page", url.Values{})

	routes := adminRoutes(t)
	if len(routes) < 20 {
		t.Fatalf("found only %d admin routes: %v", len(routes), routes)
	}
	params := strings.NewReplacer(":server", "demo", ":name", "admin", ":id", call.ID, ":seq", "1")
	for _, r := range append(routes, [2]string{"GET", "/admin/"}, [2]string{"GET", "/admin/nothing-here"}) {
		path := params.Replace(r[1])
		t.Run(r[0]+path, func(t *testing.T) {
			var status int
			var body, want []byte
			if r[0] == http.MethodGet {
				status, body = bob.do("GET", inst.URL+path, "", "")
				want = missingGET
			} else {
				status, body = bob.post(inst.URL+path, url.Values{
					"enabled": {"false"}, "disabled": {"true"}, "admin": {"false"}, "password": {"taken over!"},
					"url": {"http://evil.example/mcp"}, "name": {"evil"},
				})
				want = missingPOST
			}
			if status != http.StatusNotFound || !bytes.Equal(body, want) {
				t.Errorf("status %d; want the 404 of a missing page; body:\n%s", status, body)
			}
		})
	}
	t.Run("NothingChanged", func(t *testing.T) {
		var n int
		pool := adminPool(t, db)
		err := pool.QueryRow(context.Background(), `select count(*) from audit_log where actor = 'bob' and action <> 'sign_in'`).Scan(&n)
		if err != nil || n != 0 {
			t.Errorf("bob has %d audit rows besides signing in (err %v)", n, err)
		}
		if got := owner.waitFor(inst.URL, call.ID, time.Second, roundIs(1)); got.Status != "input_required" {
			t.Errorf("the call is %s", got.Status)
		}
		admin := newClient(t, db)
		admin.login(inst.URL, "admin", adminPassword) // still an admin, same password
	})
}

// TestExpiryTwoInstances runs two instances with a one-second round
// lifetime: each due round is expired exactly once, and the person's page
// and the API say so.
func TestExpiryTwoInstances(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{
		"MCP_SERVERS": "demo=" + demoServer(t, nil), "ROUND_TTL": "1s",
		"EXPIRY_INTERVAL": "200ms", "HEARTBEAT_INTERVAL": "200ms",
	}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)
	c.login(b.URL, "admin", adminPassword)

	const calls = 6
	var ids []string
	for i := range calls {
		base := []string{a.URL, b.URL}[i%2]
		ids = append(ids, c.startCall(base, "confirm_delete", `{"path":"/tmp/`+strconv.Itoa(i)+`"}`).ID)
	}
	for i, id := range ids {
		base := []string{b.URL, a.URL}[i%2]
		done := c.waitFor(base, id, 15*time.Second, isDone)
		if done.Status != "expired" || done.Round != nil {
			t.Errorf("call %d: status %s, round %+v; want expired with no round", i, done.Status, done.Round)
		}
		status, page := c.do("GET", base+"/calls/"+id, "", "")
		if status != http.StatusOK || !bytes.Contains(page, []byte(`data-status="expired"`)) ||
			!bytes.Contains(page, []byte("expired before it was answered")) || bytes.Contains(page, []byte(`data-testid="round-form"`)) {
			t.Errorf("call %d: the person's page (%d) does not say the round expired:\n%s", i, status, page)
		}
		if status, _ := c.answer(base, id, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusConflict {
			t.Errorf("call %d: answering an expired round: %d, want 409", i, status)
		}
	}

	pool := adminPool(t, db)
	ctx := context.Background()
	rows, err := pool.Query(ctx, `select target, count(*), min(instance) from audit_log where action = 'round.expired' group by target`)
	if err != nil {
		t.Fatal(err)
	}
	expired := map[string]int{}
	ranOn := map[string]bool{}
	for rows.Next() {
		var target, instance string
		var n int
		if err := rows.Scan(&target, &n, &instance); err != nil {
			t.Fatal(err)
		}
		expired[target] = n
		ranOn[instance] = true
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, id := range ids {
		if expired[id] != 1 {
			t.Errorf("call %s was expired %d times, want exactly once", id, expired[id])
		}
	}
	if len(expired) != calls {
		t.Errorf("expired %d calls, want %d: %v", len(expired), calls, expired)
	}
	for inst := range ranOn {
		if inst != a.InstanceID() && inst != b.InstanceID() {
			t.Errorf("expired by %q, which is neither instance", inst)
		}
	}

	// Both instances beat; the instances page lists them, one as leader.
	_, page := c.do("GET", b.URL+"/admin/instances", "", "")
	for _, inst := range []*instance{a, b} {
		if !bytes.Contains(page, []byte(inst.InstanceID())) {
			t.Errorf("the instances page does not list %s:\n%s", inst.InstanceID(), page)
		}
	}
	if n := bytes.Count(page, []byte(`data-state="live"`)); n != 2 {
		t.Errorf("%d live instances on the page, want 2", n)
	}
	if !bytes.Contains(page, []byte("Leader")) {
		t.Error("no instance is marked leader")
	}
}

// TestServerAddedAcrossInstances adds a server with credentials on A; B
// calls it at once, without a restart, and shows its credentials masked.
func TestServerAddedAcrossInstances(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)
	c.login(a.URL, "admin", adminPassword)

	const secret = "Bearer top-secret-key-9876"
	locked := demoServer(t, func(next http.Handler) http.Handler {
		return requireBearer("top-secret-key-9876", next)
	})
	// B lists the servers before A adds one, so anything cached would show.
	if status, _ := c.do("GET", b.URL+"/", "", ""); status != http.StatusOK {
		t.Fatalf("home on B: %d", status)
	}
	status, body := c.post(a.URL+"/admin/servers", url.Values{
		"name": {"locked"}, "url": {locked}, "header_name": {"Authorization"}, "header_value": {secret},
	})
	if status != http.StatusSeeOther {
		t.Fatalf("add on A: %d %s", status, body)
	}

	if status, home := c.do("GET", b.URL+"/", "", ""); status != http.StatusOK || !bytes.Contains(home, []byte(`data-testid="tool-approve"`)) ||
		!bytes.Contains(home, []byte("locked")) {
		t.Errorf("B's home page does not offer the new server's tools (%d)", status)
	}
	status, raw := c.do("POST", b.URL+"/api/v1/calls", "application/json", `{"server":"locked","tool":"approve","arguments":{}}`)
	if status != http.StatusCreated {
		t.Fatalf("call the new server on B: %d %s", status, raw)
	}
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(string(raw))[1]
	c.waitFor(b.URL, id, 10*time.Second, roundIs(1))
	if status, body := c.answer(b.URL, id, 1, `{"approval":{"action":"accept","content":{}}}`); status != http.StatusAccepted {
		t.Fatalf("answer on B: %d %s", status, body)
	}
	if done := c.waitFor(a.URL, id, 10*time.Second, isDone); done.Status != "complete" {
		t.Errorf("status %s, error %+v", done.Status, done.Error)
	}

	_, page := c.do("GET", b.URL+"/admin/servers/locked", "", "")
	if bytes.Contains(page, []byte("top-secret")) || !bytes.Contains(page, []byte("Authorization: …9876")) {
		t.Errorf("B's server page does not mask the credentials:\n%s", page)
	}
	status, page = c.post(b.URL+"/admin/servers/locked/check", url.Values{})
	if status != http.StatusOK || !bytes.Contains(page, []byte(`data-testid="discovery-protocol">2026-07-28<`)) {
		t.Errorf("check on B: %d\n%s", status, page)
	}
}

// requireBearer lets through only requests that carry the bearer key, as
// the app guards its own demo server.
func requireBearer(key string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rounds-demo"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

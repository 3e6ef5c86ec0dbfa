package journeys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStatusNeverStale: a person comes back after the round's deadline,
// long before the expiry job would run. The API, the call page and the
// inbox already say it expired, and the late answer is refused as expired.
func TestStatusNeverStale(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{
		"MCP_SERVERS": "demo=" + demoServer(t, nil), "ROUND_TTL": "1s", "EXPIRY_INTERVAL": "1h",
	}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	call := c.startCall(inst.URL, "confirm_delete", `{"path":"/a"}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	// The person comes back after the deadline, as Postgres's clock has it.
	eventually(t, 10*time.Second, func() error {
		var past bool
		queryRow(t, db, `select now() > expires_at from rounds where call_id = $1 and seq = 1`, []any{call.ID}, &past)
		if !past {
			return errors.New("the round's deadline has not passed")
		}
		return nil
	})

	got := c.waitFor(inst.URL, call.ID, time.Second, func(apiCall) bool { return true })
	if got.Status != "expired" || got.Round != nil || got.Error == nil || !strings.Contains(got.Error.Message, "expired") {
		t.Errorf("API after the deadline: %+v", got)
	}
	if _, page := c.do("GET", inst.URL+"/calls/"+call.ID, "", ""); !strings.Contains(string(page), `data-status="expired"`) ||
		strings.Contains(string(page), `data-testid="round-form"`) {
		t.Error("the call page still offers the round after its deadline")
	}
	// The expiry job runs once as an instance starts; on a busy machine
	// that can fall after the deadline, and the round is then among those
	// lately settled, as expired. Either way it is not offered.
	_, inbox := c.do("GET", inst.URL+"/inbox", "", "")
	waiting, settled, _ := strings.Cut(string(inbox), `data-testid="inbox-settled"`)
	if strings.Contains(waiting, call.ID) {
		t.Error("the inbox still offers the round after its deadline")
	}
	if strings.Contains(settled, call.ID) && !strings.Contains(settled, "status-expired") {
		t.Errorf("the inbox lists the round as settled, but not as expired: %s", settled)
	}
	status, body := c.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`)
	if status != http.StatusConflict || !strings.Contains(string(body), "expired") {
		t.Errorf("late answer: %d %s, want 409 saying it expired", status, body)
	}
}

// TestDeletingCalls: privacy requests. A person deletes one call through
// the API (on the other instance) and all of theirs from the account page;
// an administrator deletes another person's calls. Nobody else can delete
// a call, and every deletion is audited.
func TestDeletingCalls(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a, b := startInstance(t, db, env, nil), startInstance(t, db, env, nil)
	admin := newClient(t, db)
	admin.login(a.URL, "admin", adminPassword)
	addUser(t, db, "bob", "bob's password")
	bob := newClient(t, db)
	bob.token = newToken(t, db, "bob")
	bob.login(a.URL, "bob", "bob's password")

	one := bob.startCall(a.URL, "confirm_delete", `{"path":"/a"}`)
	two := bob.startCall(a.URL, "confirm_delete", `{"path":"/b"}`)
	bob.waitFor(a.URL, one.ID, 10*time.Second, roundIs(1))
	bob.waitFor(a.URL, two.ID, 10*time.Second, roundIs(1))
	adminCall := admin.startCall(a.URL, "confirm_delete", `{"path":"/c"}`)

	// Bob cannot delete the admin's call: the same 404 as for none.
	if s, _ := bob.do("DELETE", b.URL+"/api/v1/calls/"+adminCall.ID, "", ""); s != http.StatusNotFound {
		t.Errorf("bob deleting the admin's call: %d, want 404", s)
	}
	if s, body := bob.do("DELETE", b.URL+"/api/v1/calls/"+one.ID, "", ""); s != http.StatusNoContent {
		t.Fatalf("bob deleting his call: %d %s", s, body)
	}
	if s, _ := bob.do("GET", a.URL+"/api/v1/calls/"+one.ID, "", ""); s != http.StatusNotFound {
		t.Errorf("a deleted call reads %d, want 404", s)
	}
	// All of them, from the account page: the box must be ticked.
	if s, _ := bob.post(a.URL+"/account/calls/delete", url.Values{}); s != http.StatusUnprocessableEntity {
		t.Errorf("deleting without ticking the box: %d, want 422", s)
	}
	if s, _ := bob.do("GET", a.URL+"/api/v1/calls/"+two.ID, "", ""); s != http.StatusOK {
		t.Errorf("an unconfirmed deletion deleted: %d", s)
	}
	s, _ := bob.post(a.URL+"/account/calls/delete", url.Values{"confirm": {"yes"}})
	if s != http.StatusSeeOther {
		t.Fatalf("deleting all: %d", s)
	}
	if _, page := bob.do("GET", a.URL+"/account?done=calls_deleted", "", ""); !strings.Contains(string(page), "was deleted") {
		t.Error("the account page does not say the calls were deleted")
	}
	if s, _ := bob.do("GET", b.URL+"/api/v1/calls/"+two.ID, "", ""); s != http.StatusNotFound {
		t.Errorf("after deleting all, bob's call reads %d, want 404", s)
	}

	// The administrator deletes bob's new call from the users page.
	three := bob.startCall(b.URL, "confirm_delete", `{"path":"/d"}`)
	if s, _ := admin.post(b.URL+"/admin/users/bob/calls/delete", url.Values{"confirm": {"yes"}}); s != http.StatusSeeOther {
		t.Fatalf("admin deleting bob's calls: %d", s)
	}
	if s, _ := bob.do("GET", a.URL+"/api/v1/calls/"+three.ID, "", ""); s != http.StatusNotFound {
		t.Errorf("after the admin deleted them, bob's call reads %d", s)
	}
	if s, _ := admin.do("GET", a.URL+"/api/v1/calls/"+adminCall.ID, "", ""); s != http.StatusOK {
		t.Errorf("the admin's own call was deleted too: %d", s)
	}

	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var audited string
	if err := conn.QueryRow(context.Background(), `select string_agg(actor || ' ' || action || ' ' || target, ', ' order by id)
		from audit_log where action in ('call.deleted', 'calls.deleted')`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	want := "bob call.deleted " + one.ID + ", bob calls.deleted bob, admin calls.deleted bob"
	if audited != want {
		t.Errorf("audit:\n got %s\nwant %s", audited, want)
	}
}

// TestRetentionJob: the retention job, run by River on schedule, deletes a
// call that finished longer ago than RETENTION and keeps a newer one.
func TestRetentionJob(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{
		"MCP_SERVERS": "demo=" + demoServer(t, nil), "RETENTION": "1d", "RETENTION_INTERVAL": "1s",
	}, nil)
	c := newClient(t, db)
	old := c.startCall(inst.URL, "confirm_delete", `{"path":"/a"}`)
	recent := c.startCall(inst.URL, "confirm_delete", `{"path":"/b"}`)
	for _, call := range []apiCall{old, recent} {
		c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
		if s, body := c.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"decline"}}`); s != http.StatusAccepted {
			t.Fatalf("answer: %d %s", s, body)
		}
		c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `update calls set finished_at = now() - interval '2 days' where id = $1`, old.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, func() error {
		if s, _ := c.do("GET", inst.URL+"/api/v1/calls/"+old.ID, "", ""); s != http.StatusNotFound {
			return fmt.Errorf("the old call is still there: %d", s)
		}
		return nil
	})
	if s, _ := c.do("GET", inst.URL+"/api/v1/calls/"+recent.ID, "", ""); s != http.StatusOK {
		t.Errorf("the recent call reads %d, want it kept", s)
	}
}

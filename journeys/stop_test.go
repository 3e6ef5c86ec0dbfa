package journeys

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestStopARunningCall: a tool that works for a while before it answers.
// Its page offers Stop, behind a question; stopping it on the other
// instance closes the request's stream, so the server learns at once, and
// the call ends cancelled with the audit log saying who. Another person
// cannot stop it.
func TestStopARunningCall(t *testing.T) {
	t.Parallel()
	var closedAfter atomic.Int64
	slow := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"current_time"`)) {
				began := time.Now()
				select {
				case <-r.Context().Done():
					closedAfter.Store(int64(time.Since(began)))
					return
				case <-time.After(8 * time.Second):
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, slow), "MCP_REQUEST_TIMEOUT": "20s"}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	owner := newClient(t, db)
	owner.login(b.URL, "admin", adminPassword)
	call := owner.startCall(a.URL, "current_time", `{}`)
	time.Sleep(1500 * time.Millisecond) // the server is at work

	_, page := owner.do("GET", b.URL+"/calls/"+call.ID, "", "")
	if !strings.Contains(string(page), `data-testid="stop"`) || !strings.Contains(string(page), "<summary>Stop the call</summary>") {
		t.Fatalf("the running call's page offers no Stop behind a question:\n%s", page)
	}
	addUser(t, db, "bob", "bob's long password")
	bob := newClient(t, db)
	bob.login(b.URL, "bob", "bob's long password")
	if status, _ := bob.post(b.URL+"/calls/"+call.ID+"/stop", url.Values{}); status != http.StatusNotFound {
		t.Errorf("another person stopping the call: %d, want 404", status)
	}
	if status, body := owner.post(b.URL+"/calls/"+call.ID+"/stop", url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("stop: %d %s", status, body)
	}
	for deadline := time.Now().Add(5 * time.Second); closedAfter.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Duration(closedAfter.Load()); d == 0 || d > 5*time.Second {
		t.Fatalf("the server's request ran %s before its stream was closed", d)
	}
	got := owner.waitFor(a.URL, call.ID, 5*time.Second, func(c apiCall) bool { return c.Status == "cancelled" })
	if got.Error == nil || !strings.Contains(got.Error.Message, "cancelled") {
		t.Errorf("the stopped call says %+v", got.Error)
	}
	status, audit := owner.do("GET", b.URL+"/admin/audit?target="+call.ID, "", "")
	if status != http.StatusOK || !strings.Contains(string(audit), "call.cancelled") {
		t.Errorf("the audit log of the call: %d, no call.cancelled", status)
	}
}

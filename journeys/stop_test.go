package journeys

import (
	"bytes"
	"errors"
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
	var closedAt atomic.Int64 // when the server saw the request's stream closed (unix nanoseconds)
	atWork := make(chan struct{}, 1)
	slow := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"current_time"`)) {
				select {
				case atWork <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
					closedAt.Store(time.Now().UnixNano())
					return
				case <-time.After(time.Minute):
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, slow), "MCP_REQUEST_TIMEOUT": "2m"}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	owner := newClient(t, db)
	owner.login(b.URL, "admin", adminPassword)
	call := owner.startCall(a.URL, "current_time", `{}`)
	select { // the server is at work
	case <-atWork:
	case <-time.After(20 * time.Second):
		t.Fatal("the request never reached the server")
	}

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
	if closedAt.Load() != 0 {
		t.Fatal("the server's request was closed before anyone stopped the call")
	}
	stopped := time.Now()
	if status, body := owner.post(b.URL+"/calls/"+call.ID+"/stop", url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("stop: %d %s", status, body)
	}
	eventually(t, 10*time.Second, func() error {
		if closedAt.Load() == 0 {
			return errors.New("the server's request was never closed after the stop")
		}
		return nil
	})
	t.Logf("the server's request was closed %s after the stop", time.Unix(0, closedAt.Load()).Sub(stopped).Round(time.Millisecond))
	got := owner.waitFor(a.URL, call.ID, 5*time.Second, func(c apiCall) bool { return c.Status == "cancelled" })
	if got.Error == nil || !strings.Contains(got.Error.Message, "cancelled") {
		t.Errorf("the stopped call says %+v", got.Error)
	}
	status, audit := owner.do("GET", b.URL+"/admin/audit?target="+call.ID, "", "")
	if status != http.StatusOK || !strings.Contains(string(audit), "call.cancelled") {
		t.Errorf("the audit log of the call: %d, no call.cancelled", status)
	}
}

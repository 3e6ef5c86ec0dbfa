package journeys

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRoundCap: a call whose server asks more rounds than MAX_ROUNDS stops
// with a clear error.
func TestRoundCap(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil), "MAX_ROUNDS": "1"}, nil)
	c := newClient(t, db)
	call := c.startCall(inst.URL, "book_flight", `{}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	if status, body := c.answer(inst.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "failed" || done.Error == nil || !strings.Contains(done.Error.Message, "more than 1 rounds") {
		t.Fatalf("call = %+v", done)
	}
}

// TestServerDownKeepsAnswers: the server is down when the answers go out,
// and stays down past RETRY_WINDOW. The call says so, keeps the answers,
// and a manual retry sends them once the server is back, without anyone
// typing them again.
func TestServerDownKeepsAnswers(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	var down atomic.Bool
	mcpURL := demoServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() {
				http.Error(w, "maintenance", http.StatusBadGateway)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + mcpURL, "RETRY_WINDOW": "3s"}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	call := c.startCall(inst.URL, "confirm_delete", `{"path":"/srv/cache"}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	down.Store(true)
	if status, body := c.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	retrying := c.waitFor(inst.URL, call.ID, 10*time.Second, func(c apiCall) bool { return c.Retrying != nil || isDone(c) })
	if retrying.Retrying == nil || retrying.Retrying.Reason != "HTTP 502 Bad Gateway" {
		t.Fatalf("a 502 is not retried by itself: %+v", retrying)
	}
	failed := c.waitFor(inst.URL, call.ID, 20*time.Second, isDone)
	if failed.Status != "failed" || failed.Error == nil || !strings.Contains(failed.Error.Message, "answers are kept") ||
		failed.Retrying != nil {
		t.Fatalf("call = %+v", failed)
	}
	_, page := c.do("GET", inst.URL+"/calls/"+call.ID, "", "")
	if !strings.Contains(string(page), `data-testid="retry"`) {
		t.Fatal("the call page offers no retry")
	}

	down.Store(false)
	if status, body := c.post(inst.URL+"/calls/"+call.ID+"/retry", url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("retry: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Deleted /srv/cache" {
		t.Fatalf("after the retry: %+v", done)
	}
	// A finished call cannot be retried.
	if status, _ := c.do("POST", inst.URL+"/api/v1/calls/"+call.ID+"/retry", "", ""); status != http.StatusConflict {
		t.Errorf("retrying a complete call: %d, want 409", status)
	}
}

// TestTrustedProxy: behind single sign-on, the user comes from the
// configured header, but only from the configured addresses.
func TestTrustedProxy(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	servers := "demo=" + demoServer(t, nil)
	get := func(base, user string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/inbox", nil)
		req.Header.Set("X-Forwarded-User", user)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 64<<10)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	trusted := startInstance(t, db, map[string]string{"MCP_SERVERS": servers,
		"TRUSTED_PROXY_HEADER": "X-Forwarded-User", "TRUSTED_PROXIES": "127.0.0.1/32"}, nil)
	status, page := get(trusted.URL, "grace")
	if status != http.StatusOK || !strings.Contains(page, "Signed in as <strong>grace</strong>") {
		t.Errorf("from the trusted proxy: %d, want grace signed in", status)
	}
	elsewhere := startInstance(t, db, map[string]string{"MCP_SERVERS": servers,
		"TRUSTED_PROXY_HEADER": "X-Forwarded-User", "TRUSTED_PROXIES": "10.9.8.7/32"}, nil)
	if status, _ := get(elsewhere.URL, "grace"); status != http.StatusSeeOther {
		t.Errorf("from an address not trusted: %d, want a redirect to sign in", status)
	}
}

// TestAdminPinsProtocol: an admin pins a server to the handshake; its
// questions are then asked mid-call, and the page says which it speaks.
func TestAdminPinsProtocol(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	old := newOldServer(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + old.URL}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	status, body := c.post(inst.URL+"/admin/servers/demo", url.Values{"url": {old.URL}, "protocol": {"2025-11-25"}})
	if status != http.StatusSeeOther {
		t.Fatalf("pin: %d %s", status, body)
	}
	call := c.startCall(inst.URL, "ask_twice", `{}`)
	c.waitFor(inst.URL, call.ID, 10*time.Second, roundIs(1))
	if got := roundHeld(t, db, call.ID); !got {
		t.Error("the question was not held on a session")
	}
	_, page := c.do("GET", inst.URL+"/admin/servers/demo", "", "")
	if !strings.Contains(string(page), "<strong>2025-11-25</strong>") || !strings.Contains(string(page), "(pinned)") {
		t.Errorf("the admin page does not show the pinned revision in use")
	}
}

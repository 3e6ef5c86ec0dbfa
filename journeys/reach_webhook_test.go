package journeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// receiver is a webhook endpoint that checks every event's signature the
// Standard Webhooks way and keeps each event once, by its webhook-id, as a
// receiver should. fail, when set, decides to refuse an attempt.
type receiver struct {
	URL    string
	secret string
	mu     sync.Mutex
	seen   map[string]int // attempts per webhook-id
	taken  map[string]bool
	events []webhookEvent
	bad    []string
	fail   func(id string, attempt int) bool
	hold   func(id string, attempt int) bool // holds the request until the client goes away
	held   chan string
}

type webhookEvent struct {
	ID   string
	Type string `json:"type"`
	Call struct {
		ID       string           `json:"id"`
		Status   string           `json:"status"`
		Assignee string           `json:"assignee"`
		Round    *json.RawMessage `json:"round"`
	} `json:"call"`
	Raw []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{seen: map[string]int{}, taken: map[string]bool{}, held: make(chan string, 10)}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL + "/hooks/rounds"
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	wh, err := standardwebhooks.NewWebhook(rc.secret)
	if err == nil {
		err = wh.Verify(body, r.Header)
	}
	if err != nil {
		rc.bad = append(rc.bad, r.Header.Get("webhook-id")+": "+err.Error())
		rc.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id := r.Header.Get("webhook-id")
	rc.seen[id]++
	attempt := rc.seen[id]
	hold := rc.hold != nil && rc.hold(id, attempt)
	fail := rc.fail != nil && rc.fail(id, attempt)
	if !hold && !fail && !rc.taken[id] {
		rc.taken[id] = true
		ev := webhookEvent{ID: id, Raw: body}
		if err := json.Unmarshal(body, &ev); err != nil {
			rc.bad = append(rc.bad, id+": "+err.Error())
		}
		rc.events = append(rc.events, ev)
	}
	rc.mu.Unlock()
	switch {
	case hold:
		rc.held <- id
		<-r.Context().Done()
	case fail:
		http.Error(w, "not now", http.StatusServiceUnavailable)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// waitEvents waits until n distinct events arrived, and returns them.
func (rc *receiver) waitEvents(t *testing.T, n int, limit time.Duration) []webhookEvent {
	t.Helper()
	var evs []webhookEvent
	eventually(t, limit, func() error {
		rc.mu.Lock()
		var bad []string
		evs, bad = append([]webhookEvent(nil), rc.events...), append([]string(nil), rc.bad...)
		rc.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("events that did not check out: %v", bad)
		}
		if len(evs) < n {
			return fmt.Errorf("%d webhook events arrived, want %d: %+v", len(evs), n, evs)
		}
		return nil
	})
	return evs
}

func (rc *receiver) attempts(id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.seen[id]
}

// TestWebhookSurvivesKilledInstance posts an event from an instance that is
// killed while the receiver holds the request: the event arrives in the
// end, from the other instance, with the same webhook-id.
func TestWebhookSurvivesKilledInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the rescue")
	}
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	rc := newReceiver(t)
	servers := "demo=" + demoServer(t, nil)
	addr := freeAddr(t)
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), "ROUNDS_TEST_INSTANCE=1", "DATABASE_URL="+db, "ADMIN_PASSWORD="+adminPassword,
		"LISTEN_ADDR="+addr, "MCP_SERVERS="+servers, "WEBHOOK_ALLOW_PRIVATE=1", "MCP_REQUEST_TIMEOUT=2s",
		"SMTP_URL="+mb.URL, "MAIL_FROM=rounds@example.com")
	logs := &logSink{}
	proc.Stderr = logs
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Process.Kill()
		_ = proc.Wait()
		if t.Failed() {
			t.Log("the killed instance's log:\n" + logs.String())
		}
	})
	first := "http://" + addr
	waitReady(t, first)
	admin := newClient(t, db)
	rc.secret = admin.webhookSecret(first)
	rc.hold = func(_ string, attempt int) bool { return attempt == 1 }

	status, body := admin.do("POST", first+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"book_flight","arguments":{},"webhook_url":"`+rc.URL+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var id string
	select {
	case id = <-rc.held:
	case <-time.After(15 * time.Second):
		t.Fatal("the event never reached the receiver")
	}
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()

	other := startInstance(t, db, map[string]string{"MCP_SERVERS": servers, "WEBHOOK_ALLOW_PRIVATE": "1",
		"MCP_REQUEST_TIMEOUT": "2s"}, nil)
	evs := rc.waitEvents(t, 1, 90*time.Second)
	if evs[0].ID != id || evs[0].Type != "round.waiting" || evs[0].Call.Status != "input_required" || evs[0].Call.Round == nil {
		t.Errorf("event = %+v, want round.waiting with id %s", evs[0], id)
	}
	if n := rc.attempts(id); n != 2 {
		t.Errorf("the event was posted %d times, want 2 (held by the receiver when its sender died, then taken)", n)
	}
	admin.login(other.URL, "admin", adminPassword)
	page := admin.page(other.URL + "/calls/" + evs[0].Call.ID)
	if got := page.Find(`[data-testid="delivery"] td`).Eq(1).Text(); got != id {
		t.Errorf("the delivery log shows id %q, want %q", got, id)
	}
}

// TestDeliveryLogForAdmins: a person's call with a webhook shows its
// delivery log to an admin who did not start it, on the other instance (the
// owner's view is TestBrowserReachingPeople's); to anyone else the call
// does not exist.
func TestDeliveryLogForAdmins(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	mb := newMailbox(t)
	rc := newReceiver(t)
	env := reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)})
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	addPeople(t, db)
	ada, bob := person(t, db, "ada"), person(t, db, "bob")
	rc.secret = ada.webhookSecret(a.URL)

	status, body := ada.do("POST", a.URL+"/api/v1/calls", "application/json",
		`{"server":"demo","tool":"book_flight","arguments":{},"webhook_url":"`+rc.URL+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	evs := rc.waitEvents(t, 1, 30*time.Second)
	if evs[0].Type != "round.waiting" || evs[0].Call.ID != call.ID {
		t.Fatalf("event = %+v", evs[0])
	}

	admin := newClient(t, db)
	admin.login(b.URL, "admin", adminPassword)
	var rows *goquery.Selection
	_ = poll(30*time.Second, func() error {
		// The receiver has the event before the sender records the delivery.
		rows = admin.page(b.URL + "/calls/" + call.ID).Find(`[data-testid="delivery"]`)
		if rows.Length() != 1 {
			return errors.New("no delivery yet")
		}
		return nil
	})
	if rows.Length() != 1 || rows.Find("td").Eq(1).Text() != evs[0].ID {
		t.Errorf("the admin's view of ada's call lists %d deliveries (%q), want the one with id %s",
			rows.Length(), rows.Text(), evs[0].ID)
	}
	if status, _ := bob.do("GET", b.URL+"/api/v1/calls/"+call.ID, "", ""); status != http.StatusNotFound {
		t.Errorf("bob reads ada's call: %d, want 404", status)
	}
}

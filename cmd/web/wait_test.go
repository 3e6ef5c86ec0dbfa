package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestLongPoll: a held GET is woken by the change, from another instance,
// rather than by its deadline.
func TestLongPoll(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	hold := make(chan struct{})
	watch := &retryWatcher{hold: hold, arrived: make(chan struct{}, 1)}
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, watch.wrap)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	call := c.startCall(a.URL, "book_flight", `{}`)
	// Waiting for round 1 from the start returns once it is there.
	status, body := c.do("GET", b.URL+"/api/v1/calls/"+call.ID+"?wait=20s&after_seq=0", "", "")
	var got apiCall
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Round == nil || got.Round.Seq != 1 {
		t.Fatalf("wait for round 1: %d %s", status, body)
	}
	if status, body := c.answer(a.URL, call.ID, 1, tripAnswers); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	<-watch.arrived // the retry is at the server, held

	type result struct {
		call    apiCall
		elapsed time.Duration
	}
	done := make(chan result)
	go func() {
		start := time.Now()
		_, body := c.do("GET", b.URL+"/api/v1/calls/"+call.ID+"?wait=20s&after_seq=1", "", "")
		var got apiCall
		_ = json.Unmarshal(body, &got)
		done <- result{got, time.Since(start)}
	}()
	close(hold) // let the retry through: instance A stores round 2
	r := <-done
	if r.call.Round == nil || r.call.Round.Seq != 2 {
		t.Fatalf("after the change: %+v", r.call)
	}
	if r.elapsed > 10*time.Second {
		t.Errorf("the held request returned after %s: woken by its deadline, not by the change", r.elapsed)
	}

	// Nothing to wait for: a finished call answers at once.
	c.answer(a.URL, call.ID, 2, seatAnswers)
	c.waitFor(a.URL, call.ID, 10*time.Second, isDone)
	status, body = c.do("GET", b.URL+"/api/v1/calls/"+call.ID+"?wait=20s&after_seq=5", "", "")
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Status != "complete" {
		t.Fatalf("finished call: %d %s", status, body)
	}
	if status, _ := c.do("GET", b.URL+"/api/v1/calls/"+call.ID+"?wait=forever", "", ""); status != http.StatusBadRequest {
		t.Errorf("bad wait: %d, want 400", status)
	}
}

package journeys

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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

// TestAnswerAndWait: with ?wait, starting a call answers with its first
// round and answering a round answers with the next one, or the result,
// across instances: one request a round. A bad wait is refused before
// anything is stored.
func TestAnswerAndWait(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	c := newClient(t, db)

	if status, body := c.do("POST", a.URL+"/api/v1/calls?wait=soon", "application/json", `{"server":"demo","tool":"book_flight","arguments":{}}`); status != http.StatusBadRequest {
		t.Fatalf("bad wait on start: %d %s", status, body)
	}
	status, body := c.do("POST", a.URL+"/api/v1/calls?wait=20s", "application/json", `{"server":"demo","tool":"book_flight","arguments":{}}`)
	var call apiCall
	if status != http.StatusCreated || json.Unmarshal(body, &call) != nil || call.Status != "input_required" ||
		call.Round == nil || call.Round.Seq != 1 || call.Round.InputRequests["trip"] == nil {
		t.Fatalf("start and wait: %d %s", status, body)
	}
	answer := func(base string, seq int, responses string) apiCall {
		t.Helper()
		status, body := c.do("POST", fmt.Sprintf("%s/api/v1/calls/%s/rounds/%d?wait=20s", base, call.ID, seq), "application/json",
			`{"inputResponses":`+responses+`}`)
		var got apiCall
		if status != http.StatusAccepted || json.Unmarshal(body, &got) != nil {
			t.Fatalf("answer round %d and wait: %d %s", seq, status, body)
		}
		return got
	}
	if got := answer(b.URL, 1, tripAnswers); got.Status != "input_required" || got.Round == nil || got.Round.Seq != 2 ||
		got.Round.InputRequests["seat"] == nil {
		t.Fatalf("after round 1: %+v", got)
	}
	got := answer(a.URL, 2, seatAnswers)
	if got.Status != "complete" || !strings.Contains(resultText(t, got.Result), "Lisbon") {
		t.Fatalf("after round 2: %+v", got)
	}
	// A second answer to the same round is refused, wait or not.
	if status, body := c.do("POST", fmt.Sprintf("%s/api/v1/calls/%s/rounds/2?wait=20s", b.URL, call.ID), "application/json",
		`{"inputResponses":`+seatAnswers+`}`); status != http.StatusConflict {
		t.Fatalf("answered twice: %d %s", status, body)
	}
}

package journeys

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDemoLongWork runs the built-in demo's two tools of long work through
// Rounds: generate_report says how far along it is while it works, and
// deploy_release runs as a task that builds, asks whether to deploy
// midway (a round like any other), and deploys once answered.
func TestDemoLongWork(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	// The built-in demo. An answer given while the task's poll is being
	// put off may wait for the next poll: TASK_WAIT_POLL keeps it short.
	inst := startInstance(t, db, map[string]string{"TASK_WAIT_POLL": "1s"}, nil)
	c := newClient(t, db)

	report := c.startCall(inst.URL, "generate_report", `{"seconds":2}`)
	var said []string
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); ; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("generate_report never finished")
		}
		_, b := c.do("GET", inst.URL+"/api/v1/calls/"+report.ID, "", "")
		var got struct {
			Status   string `json:"status"`
			Progress *struct {
				Message string  `json:"message"`
				Total   float64 `json:"total"`
			} `json:"progress"`
			Result json.RawMessage `json:"result"`
		}
		_ = json.Unmarshal(b, &got)
		if got.Progress != nil && got.Progress.Total == 10 {
			said = append(said, got.Progress.Message)
		}
		if got.Status == "complete" {
			if !strings.Contains(resultText(t, got.Result), "The report is ready") {
				t.Errorf("generate_report's result: %s", got.Result)
			}
			break
		}
	}
	if len(said) == 0 || !strings.Contains(said[0], "of 10 written") {
		t.Errorf("generate_report said no progress while it worked: %v", said)
	}

	deploy := c.startCall(inst.URL, "deploy_release", `{"release":"3.1","seconds":1}`)
	round := c.waitFor(inst.URL, deploy.ID, 30*time.Second, roundIs(1))
	if q := string(round.Round.InputRequests["go_ahead"]); !strings.Contains(q, "Release 3.1 is built. Deploy it to production?") {
		t.Fatalf("the task's question: %+v", round.Round.InputRequests)
	}
	_, b := c.do("GET", inst.URL+"/api/v1/calls/"+deploy.ID, "", "")
	if !strings.Contains(string(b), `"task":{`) {
		t.Errorf("the call does not say it runs as a task: %s", b)
	}
	if status, body := c.answer(inst.URL, deploy.ID, 1, `{"go_ahead":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(inst.URL, deploy.ID, 30*time.Second, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Deployed release 3.1 to production." {
		t.Fatalf("deploy_release ended %s: %s", done.Status, done.Result)
	}
}

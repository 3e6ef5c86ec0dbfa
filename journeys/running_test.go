package journeys

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRunningWhileTheServerWorks: the demo's generate_report works for
// three seconds, saying how far along it is. While the server works,
// GET /api/v1/calls/{id} says running (sent, not yet answered), progress
// included, never queued; then the call is complete.
func TestRunningWhileTheServerWorks(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	call := c.startCall(inst.URL, "generate_report", `{"seconds":3}`)
	var statuses []string
	var progressWhileRunning bool
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); ; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("the call never finished; it said %v", statuses)
		}
		status, b := c.do("GET", inst.URL+"/api/v1/calls/"+call.ID, "", "")
		if status != http.StatusOK {
			t.Fatalf("GET: %d %s", status, b)
		}
		var got struct {
			Status   string          `json:"status"`
			Progress json.RawMessage `json:"progress"`
			Result   json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if len(statuses) == 0 || statuses[len(statuses)-1] != got.Status {
			statuses = append(statuses, got.Status)
		}
		if got.Status == "running" && got.Progress != nil {
			progressWhileRunning = true
		}
		if got.Status == "queued" && got.Progress != nil {
			t.Errorf("the call says queued while the server reports progress: %s", got.Progress)
		}
		if got.Status != "queued" && got.Status != "running" {
			if got.Status != "complete" || !strings.Contains(string(got.Result), "The report is ready") {
				t.Fatalf("the call ended %s: %s", got.Status, b)
			}
			break
		}
	}
	if !progressWhileRunning {
		t.Errorf("while the server worked the call said %v; want running, with its progress", statuses)
	}
	if strings.Join(statuses, ",") != "running,complete" && strings.Join(statuses, ",") != "queued,running,complete" {
		t.Errorf("the call said %v; want running (after queued at most), then complete", statuses)
	}
}

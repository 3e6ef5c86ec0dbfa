package demo_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/demo"
)

// TestGenerateReport: the slow tool works for the seconds it is given,
// reporting each of its ten steps as progress with a total, then reports.
func TestGenerateReport(t *testing.T) {
	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1.0.0"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			notes = append(notes, req.Params)
			mu.Unlock()
		},
	})
	endpoint := MustServe(t, demo.Options{Secret: []byte("test secret")})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	began := time.Now()
	params := &mcp.CallToolParams{Name: "generate_report", Arguments: map[string]any{"seconds": 1}}
	params.SetProgressToken("report-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 900*time.Millisecond {
		t.Errorf("the work took %s, want about a second", took)
	}
	if got, want := MustFinish(t, res), "The report is ready: 10 sections, written in 1 seconds."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	// The client hands notifications on by themselves: the last may come
	// after the result.
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(notes)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(5 * time.Second); count() < 10 && time.Now().Before(deadline); <-tick.C {
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 10 {
		t.Fatalf("%d progress notifications, want 10", len(notes))
	}
	slices.SortFunc(notes, func(a, b *mcp.ProgressNotificationParams) int { return int(a.Progress - b.Progress) })
	for i, n := range notes {
		if n.ProgressToken != "report-1" || n.Progress != float64(i+1) || n.Total != 10 || n.Message == "" {
			t.Errorf("notification %d = %+v", i, n)
		}
	}

	t.Run("ErrTooLong", func(t *testing.T) {
		res := MustCall(t, cs, "generate_report", map[string]any{"seconds": 3600}, "", nil)
		if !res.IsError {
			t.Errorf("an hour's work was taken")
		}
	})
}

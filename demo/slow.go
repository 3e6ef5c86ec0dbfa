package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Long work, for watching a call run: a tool that works for a few
// seconds, saying how far along it is, and one that runs as a task and
// asks a question midway (tasks.go).

// reportSteps is how many steps generate_report's work has.
const reportSteps = 10

func generateReport() *tool {
	t := &tool{
		def: &mcp.Tool{
			Name:        "generate_report",
			Title:       "Generate a report",
			Description: "Works for a few seconds (5 unless told), saying how far along it is, then reports. Asks nothing.",
		},
		input: mustForm(`{"type":"object","properties":{
			"seconds":{"type":"integer","title":"Seconds","description":"How long the work takes","minimum":1,"maximum":60,"default":5}}}`),
	}
	t.run = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var raw map[string]any
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &raw); err != nil {
				return nil, invalidParams("arguments must be a JSON object")
			}
		}
		args, problem := t.input.check(raw)
		if problem != "" {
			return failed("Invalid arguments: " + problem), nil
		}
		seconds, _ := number(args["seconds"])
		step := time.Duration(seconds * float64(time.Second) / reportSteps)
		token := req.Params.GetProgressToken()
		tick := time.NewTicker(step)
		defer tick.Stop()
		for i := 1; i <= reportSteps; i++ {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-tick.C:
			}
			if token == nil {
				continue // the client asked for no progress
			}
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(i), Total: reportSteps, Message: fmt.Sprintf("Section %d of %d written", i, reportSteps)}); err != nil {
				return nil, err
			}
		}
		return text(fmt.Sprintf("The report is ready: %d sections, written in %g seconds.", reportSteps, seconds)), nil
	}
	return t
}

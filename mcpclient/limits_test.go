package mcpclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// TestRoundLimits: a round past the limits fails the request with a clear
// error before anything is kept; one just inside them is taken.
func TestRoundLimits(t *testing.T) {
	question := func(message, schema string) string {
		return `{"method":"elicitation/create","params":{"mode":"form","message":` + message + `,"requestedSchema":` + schema + `}}`
	}
	small := `{"type":"object","properties":{"name":{"type":"string"}}}`
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	many := func(n int, schema string) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`"q%d":%s`, i, question(`"Name?"`, schema)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	described := func(n int) string {
		return `{"type":"object","properties":{"name":{"type":"string","description":` + quote(strings.Repeat("d", n)) + `}}}`
	}
	for _, tc := range []struct {
		name     string
		requests string
		want     string // in the error; empty when the round is taken
	}{
		{"MessageAtLimit", `{"q":` + question(quote(strings.Repeat("m", mcpclient.MaxMessage)), small) + `}`, ""},
		{"MessageTooLarge", `{"q":` + question(quote(strings.Repeat("m", 5<<20)), small) + `}`, "a message of 5.0 MiB"},
		{"SchemaTooLarge", `{"q":` + question(`"Name?"`, described(mcpclient.MaxSchema)) + `}`, "a schema of 256 KiB"},
		{"QuestionsAtLimit", many(mcpclient.MaxQuestions, small), ""},
		{"TooManyQuestions", many(mcpclient.MaxQuestions+1, small), "33 questions in one round"},
		{"RoundTooLarge", many(8, described(200<<10)), "a round of 1.6 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := newRawPeer(t, func(int, json.RawMessage) string {
				return `{"resultType":"input_required","inputRequests":` + tc.requests + `}`
			})
			out, err := newClient().Send(ctx(t), forms(url), mcpclient.Request{Name: "t"}, nil)
			if tc.want == "" {
				if err != nil || out.Round == nil {
					t.Fatalf("a round inside the limits: %v", err)
				}
				return
			}
			var limit *mcpclient.LimitError
			if !errors.As(err, &limit) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a LimitError saying %q", err, tc.want)
			}
		})
	}
}

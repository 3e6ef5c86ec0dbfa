package agents

import (
	"encoding/json"
	"testing"
)

// A session speaks the revision the agent asked for when Rounds knows it
// (older than 2026-07-28), else 2025-11-25.
func TestNegotiate(t *testing.T) {
	for asked, want := range map[string]string{"2025-11-25": "2025-11-25", "2025-06-18": "2025-06-18", "2024-11-05": "2024-11-05",
		"2026-07-28": "2025-11-25", "2030-01-01": "2025-11-25", "": "2025-11-25"} {
		if got := negotiate(asked); got != want {
			t.Errorf("negotiate(%q) = %q, want %q", asked, got, want)
		}
	}
}

// An agent's result is its answer as it is; its error refuses the
// question as fits the kind: roots none, sampling declined, a person's
// refusal (-1) declined, anything else cancelled, each with what it said.
func TestResponseEntry(t *testing.T) {
	for _, tt := range []struct {
		kind   string
		result string
		err    *wireError
		want   string
		ok     bool
	}{
		{"form", `{"action":"accept","content":{"name":"Ada"}}`, nil, `{"action":"accept","content":{"name":"Ada"}}`, true},
		{"form", `"accept"`, nil, "", false},
		{"form", `null`, nil, "", false},
		{"form", "", &wireError{Code: -32603, Message: "no one to ask"}, `{"action":"cancel"}`, true},
		{"url", "", &wireError{Code: userRejected, Message: "no"}, `{"action":"decline"}`, true},
		{"sampling", "", &wireError{Code: -32601, Message: "no model"}, `{"action":"decline"}`, true},
		{"roots", "", &wireError{Code: -32601, Message: "no roots"}, `{"roots":[]}`, true},
	} {
		got, said, ok := responseEntry(tt.kind, json.RawMessage(tt.result), tt.err)
		if ok != tt.ok || string(got) != tt.want || (tt.err != nil) != (said != "") {
			t.Errorf("%s %s %+v: %s %q %v, want %s %v", tt.kind, tt.result, tt.err, got, said, ok, tt.want, tt.ok)
		}
	}
}

package slack_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/slack"
)

// FuzzModal: whatever schema a server sends, Rounds either sends the round
// to Rounds (NotFit) or builds a modal and a message Slack accepts.
// Seeded with the forms fuzz corpus and the golden schemas.
func FuzzModal(f *testing.F) {
	corpus, _ := filepath.Glob("../forms/testdata/fuzz/FuzzDecode/*")
	for _, path := range corpus {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			continue
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err == nil {
			f.Add([]byte(s))
		}
	}
	schemas, _ := filepath.Glob("../forms/testdata/slack/schemas/*.json")
	for _, path := range schemas {
		var p struct {
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		}
		b, _ := os.ReadFile(path)
		if json.Unmarshal(b, &p) == nil && p.RequestedSchema != nil {
			f.Add([]byte(p.RequestedSchema))
		}
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		params, err := json.Marshal(map[string]any{"message": "m", "requestedSchema": json.RawMessage(schema)})
		if err != nil {
			return // not JSON: the server's request never gets this far
		}
		a := askFor(t, "Fuzz", `{"q":{"method":"elicitation/create","params":`+string(params)+`}}`)
		checkMessage(t, slack.NewMessage(a))
		if v, err := slack.Modal(a); err == nil {
			checkView(t, v)
		}
	})
}

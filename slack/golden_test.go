package slack_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/slack"
)

var update = flag.Bool("update", false, "rewrite forms/testdata/slack golden files")

// golden is what a golden file shows of one schema: whether it fits a
// modal (and why not), the modal, and the message it is posted as.
type golden struct {
	Fits    bool          `json:"fits"`
	Reason  string        `json:"reason,omitempty"`
	Modal   any           `json:"modal,omitempty"`
	Message slack.Message `json:"message"`
}

// TestGolden: each schema in forms/testdata (spec, seeds, and slack/schemas)
// becomes the modal and message in forms/testdata/slack/NAME.json, and
// every one of them keeps Block Kit's structure and limits.
// Rewrite with: go test ./slack -run TestGolden -update
func TestGolden(t *testing.T) {
	var paths []string
	for _, dir := range []string{"spec", "seeds", "slack/schemas"} {
		got, err := filepath.Glob(filepath.Join("..", "forms", "testdata", dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, got...)
	}
	if len(paths) < 30 {
		t.Fatalf("found %d schemas, want the spec's, the seeds' and slack's", len(paths))
	}
	for _, path := range paths {
		dir := filepath.Base(filepath.Dir(path))
		name := dir + "-" + strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			a := askFile(t, path)
			g := golden{Message: slack.NewMessage(a)}
			checkMessage(t, g.Message)
			v, err := slack.Modal(a)
			g.Fits = err == nil
			if err != nil {
				g.Reason = err.(*slack.NotFit).Reason
			} else {
				checkView(t, v)
				g.Modal = v
			}
			compareGolden(t, filepath.Join("..", "forms", "testdata", "slack", name+".json"), g)
		})
	}
}

func compareGolden(t *testing.T, file string, g golden) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Errorf("%s differs from what the schema becomes now (run with -update and review the diff):\n%s", file, buf.String())
	}
}

package round

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestPreview(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"Short", "Pick a seat", 20, "Pick a seat"},
		{"Exact", "abcde", 5, "abcde"},
		{"Cut", "abcdefgh", 5, "abcde…"},
		{"RunesNotBytes", "ééééé", 4, "éééé…"},
		{"MultiByteShort", "ééé", 4, "ééé"},
		{"TrailingSpace", "abc  defg", 5, "abc…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Preview(tc.in, tc.n); got != tc.want {
				t.Errorf("Preview(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
	huge := strings.Repeat("x", 5<<20)
	if got := Preview(huge, PreviewText); len(got) > PreviewText+len("…") {
		t.Errorf("a 5 MB message previews as %d bytes", len(got))
	}
}

// TestInboxSummaries: an inbox entry stays short however long the
// server's messages and however many its questions.
func TestInboxSummaries(t *testing.T) {
	var parts []string
	for i := range 7 {
		msg := fmt.Sprintf("Question %d: %s", i, strings.Repeat("long ", 3000))
		parts = append(parts, fmt.Sprintf(`"q%d":{"method":"elicitation/create","params":{"mode":"form","message":%q,"requestedSchema":{"type":"object","properties":{}}}}`, i, msg))
	}
	got := Summaries(json.RawMessage("{" + strings.Join(parts, ",") + "}"))
	if len(got) != listQuestions+1 || got[listQuestions] != "and 2 more questions" {
		t.Fatalf("summaries = %d, last %q", len(got), got[len(got)-1])
	}
	for _, s := range got[:listQuestions] {
		if !strings.HasPrefix(s, "Question ") || !strings.HasSuffix(s, "…") || len([]rune(s)) > PreviewText+1 {
			t.Errorf("summary %.40q… is %d characters", s, len([]rune(s)))
		}
	}
}

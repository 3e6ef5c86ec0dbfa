package round

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// Lists (home, inbox, admin) show what servers send in short: a server's
// 5 MB message or tool description must not make a person's page 5 MB.
const (
	// PreviewText is how many characters of a message or description a list shows.
	PreviewText = 200
	// PreviewName is how many characters of a title, tool name or target a list shows.
	PreviewName   = 120
	listQuestions = 5 // questions summarised per inbox entry
)

// Preview shortens s to at most n characters, on a character boundary,
// marking the cut with an ellipsis.
func Preview(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	if count < n {
		return s
	}
	return strings.TrimRight(s[:i], " \n\t") + "…"
}

// Summaries is a short text per question of a round's inputRequests, for
// the inbox.
// It reads only the messages: building the forms would compile every schema.
func Summaries(raw json.RawMessage) []string {
	qs, err := mcpclient.ParseQuestions(raw)
	if err != nil {
		return []string{"(questions that cannot be read)"}
	}
	var out []string
	for _, q := range qs {
		var p struct {
			Message string `json:"message"`
		}
		if q.Params != nil {
			_ = json.Unmarshal(q.Params, &p)
		}
		if p.Message == "" {
			p.Message = KindSummary(q)
		}
		if len(out) == listQuestions {
			out = append(out, fmt.Sprintf("and %d more questions", len(qs)-listQuestions))
			break
		}
		if p.Message != "" {
			out = append(out, Preview(p.Message, PreviewText))
		} else {
			out = append(out, Preview(q.Key, PreviewName))
		}
	}
	return out
}

package round

import "strings"

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

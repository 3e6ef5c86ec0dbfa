package handlers

import "strings"

// Lists (home, inbox, admin) show what servers send in short: a server's
// 5 MB message or tool description must not make a person's page 5 MB.
const (
	previewText     = 200 // characters of a message or description in a list
	previewName     = 120 // characters of a title, tool name or target in a list
	listQuestions   = 5   // questions summarised per inbox entry
	listServerTools = 50  // tools listed per server on the home page
	listToolName    = 256 // bytes of the longest tool name the home page lists
)

// preview shortens s to at most n characters, on a character boundary,
// marking the cut with an ellipsis.
func preview(s string, n int) string {
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

// Package views holds the templ components that render every page, and
// builds their view models from what the round package reads.
package views

import (
	"strconv"
	"strings"
)

func refreshContent(seconds int) string { return strconv.Itoa(seconds) }

// statusLabel words a call or round status for people.
func statusLabel(s string) string {
	switch s {
	case "queued":
		return "Waiting for the server"
	case "running":
		return "Waiting for the server"
	case "input_required":
		return "Needs your answers"
	case "authorization_required":
		return "Needs you to connect"
	case "approval_required":
		return "Waiting for approval"
	case "complete":
		return "Complete"
	case "failed":
		return "Failed"
	case "cancelled":
		return "Cancelled"
	case "expired":
		return "Expired"
	case "pending":
		return "Waiting for answers"
	case "answered":
		return "Answered"
	case "declined":
		return "Declined"
	}
	return s
}

// badgeStatus is the status a call's badge shows: a call the server
// finished after the person declined or cancelled its last round says so,
// rather than "Complete".
func badgeStatus(status, lastOutcome string) string {
	if status == "complete" && (lastOutcome == "declined" || lastOutcome == "cancelled") {
		return lastOutcome
	}
	return status
}

// roundStatus is what an ended round's badge says: how it ended.
func roundStatus(r RoundVM) string {
	if r.Outcome != "" {
		return r.Outcome
	}
	return r.Status
}

func refreshFor(live bool) int {
	if live {
		return 2
	}
	return 0
}

func methodLabel(m string) string {
	switch m {
	case "prompts/get":
		return "Prompt"
	case "resources/read":
		return "Resource"
	}
	return "Tool call"
}

func linkText(b ContentVM) string {
	if b.Title != "" {
		return b.Title
	}
	if b.Name != "" {
		return b.Name
	}
	return b.URI
}

// sendLabel says what the send button of a round of several questions will
// do with the choices made: "Send 2 answers, decline 1". app.js keeps it
// true as the choices change.
func sendLabel(qs []QuestionVM) string {
	var accept, decline, cancel int
	for _, q := range qs {
		if q.Kind == "roots" {
			continue
		}
		switch q.Action {
		case "accept":
			accept++
		case "decline":
			decline++
		case "cancel":
			cancel++
		}
	}
	var parts []string
	if accept > 0 {
		parts = append(parts, "send "+strconv.Itoa(accept)+" "+plural(accept, "answer", "answers"))
	}
	if decline > 0 {
		parts = append(parts, "decline "+strconv.Itoa(decline))
	}
	if cancel > 0 {
		parts = append(parts, "cancel "+strconv.Itoa(cancel))
	}
	if len(parts) == 0 {
		return "Send"
	}
	s := strings.Join(parts, ", ")
	return strings.ToUpper(s[:1]) + s[1:]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

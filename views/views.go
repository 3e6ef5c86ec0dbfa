// Package views holds the templ components that render every page.
package views

import (
	"strconv"
	"time"
)

func refreshContent(seconds int) string { return strconv.Itoa(seconds) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// statusLabel words a call or round status for people.
func statusLabel(s string) string {
	switch s {
	case "queued":
		return "Waiting for the server"
	case "running":
		return "Waiting for the server"
	case "input_required":
		return "Needs your answers"
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

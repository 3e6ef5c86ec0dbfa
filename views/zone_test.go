package views

import (
	"context"
	"testing"
	"time"
)

// TestRelative says how far a time is the way people say it.
func TestRelative(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"Now", 20 * time.Second, "now"},
		{"Minutes", 5*time.Minute + 10*time.Second, "in 5 min"},
		{"Hours", 23*time.Hour + 10*time.Minute, "in 23 h"},
		{"Days", 72 * time.Hour, "in 3 days"},
		{"Past", -2 * time.Hour, "2 h ago"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := relative(tt.d); got != tt.want {
				t.Errorf("relative(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

// TestFmtTimeInZone shows a time in the person's zone, and UTC when none
// is known.
func TestFmtTimeInZone(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 5, 4, 16, 30, 0, 0, time.UTC)
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmtTime(WithZone(context.Background(), Zone{Loc: la, Name: "America/Los_Angeles"}), at); got != "2031-05-04 09:30 PDT" {
		t.Errorf("in Los Angeles = %q, want 2031-05-04 09:30 PDT", got)
	}
	if got := fmtTime(context.Background(), at); got != "2031-05-04 16:30 UTC" {
		t.Errorf("with no zone = %q, want 2031-05-04 16:30 UTC", got)
	}
}

// TestSendLabel says what the send button of a round of several does.
func TestSendLabel(t *testing.T) {
	t.Parallel()
	qs := []QuestionVM{{Action: "accept"}, {Action: "accept"}, {Action: "decline"}, {Kind: "roots", Action: "accept"}}
	if got := sendLabel(qs); got != "Send 2 answers, decline 1" {
		t.Errorf("label = %q, want Send 2 answers, decline 1", got)
	}
	if got := sendLabel([]QuestionVM{{Action: "cancel"}, {Action: "cancel"}}); got != "Cancel 2" {
		t.Errorf("label = %q, want Cancel 2", got)
	}
}

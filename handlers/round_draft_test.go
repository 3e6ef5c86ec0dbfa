package handlers

import (
	"net/url"
	"slices"
	"testing"
)

// TestDraftFields keeps only the round's questions' fields: never the CSRF
// token, never a question the round does not have.
func TestDraftFields(t *testing.T) {
	t.Parallel()
	got, size := draftFields(url.Values{
		"csrf_token": {"secret"}, "q0.title": {"Docs"}, "q0$action": {"accept"}, "q1.title": {"x"},
		"q0.tags$present": {"1"}, "q0.tags": {"a", "b"}, "qq": {"y"}, "q0": {"z"},
	}, 1)
	want := url.Values{"q0.title": {"Docs"}, "q0$action": {"accept"}, "q0.tags$present": {"1"}, "q0.tags": {"a", "b"}}
	if !equalValues(got, want) {
		t.Errorf("draft = %v, want %v", got, want)
	}
	if size == 0 {
		t.Error("size = 0")
	}
}

func equalValues(a, b url.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

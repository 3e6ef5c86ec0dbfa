package store

import "testing"

// TestNoteID reads the call a notification is about from its first
// member, and from the whole note when the id comes later.
func TestNoteID(t *testing.T) {
	for payload, want := range map[string]string{
		`{"id" : "0b6c", "status" : "complete", "result" : {"content" : []}}`: "0b6c",
		`{"status": "complete", "id": "0b6c"}`:                                "0b6c",
		`0b6c`:                                                                "0b6c",
		`{"id" : 7}`:                                                          "",
		`{"id" : "0b6c"`:                                                      "0b6c",
		`{`:                                                                   "",
	} {
		if got := noteID(payload); got != want {
			t.Errorf("noteID(%s) = %q, want %q", payload, got, want)
		}
	}
}

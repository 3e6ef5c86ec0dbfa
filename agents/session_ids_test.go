package agents

import (
	"strings"
	"testing"
)

// A question id opens, for its session only, to the call, round and
// question it was made for; an id changed by a byte, or made up, is
// refused; session ids are fresh each time and stored only as a hash.
func TestAskIDs(t *testing.T) {
	key := askIDKey([]byte("a state key of thirty-two bytes!"))
	want := askID{Call: "0190f6a4-7b1c-7cde-8f00-123456789abc", Seq: 3, Key: "github_login"}
	id, err := want.seal(key, "session-a")
	if err != nil {
		t.Fatal(err)
	}
	got, err := openAskID(key, "session-a", id)
	if err != nil || got != want {
		t.Fatalf("opened %+v, %v; want %+v", got, err, want)
	}
	if _, err := openAskID(key, "session-b", id); err != errBadAskID {
		t.Fatalf("another session's question: want errBadAskID, got %v", err)
	}
	if _, err := openAskID(askIDKey([]byte("another key")), "session-a", id); err != errBadAskID {
		t.Fatalf("sealed with another key: want errBadAskID, got %v", err)
	}
	for i := len(askIDPrefix); i < len(id); i++ {
		c := byte('A')
		if id[i] == 'A' {
			c = 'B'
		}
		forged := id[:i] + string(c) + id[i+1:]
		if got, err := openAskID(key, "session-a", forged); err == nil && got != want {
			t.Fatalf("forged id %q opened to %+v", forged, got)
		}
	}
	for _, bad := range []string{"", "7", askIDPrefix, askIDPrefix + "AAAA", strings.TrimPrefix(id, askIDPrefix)} {
		if _, err := openAskID(key, "session-a", bad); err != errBadAskID {
			t.Fatalf("%q: want errBadAskID, got %v", bad, err)
		}
	}

	a, ha, err := newSessionID()
	if err != nil {
		t.Fatal(err)
	}
	b, hb, _ := newSessionID()
	if a == b || ha == hb || len(ha) != 64 || strings.Contains(ha, a) || sessionHash(a) != ha {
		t.Fatalf("session ids %q (%s) and %q (%s)", a, ha, b, hb)
	}
}

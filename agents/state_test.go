package agents

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

// TestStateIsTheCallers: a state opens only for whom it was given, on the
// method it was given for, untampered, unlapsed, and under the same key.
func TestStateIsTheCallers(t *testing.T) {
	d := New(Options{StateKey: []byte("0123456789abcdef0123456789abcdef")})
	req := func(name string, token int64, client, method string) *Request {
		return &Request{d: d, Method: method, Who: &Principal{User: &store.User{Name: name}, TokenID: token, OAuthClient: client}}
	}
	ada := req("ada", 7, "", "tools/call")
	state, err := d.seal(ada, "call-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(state) > 300 {
		t.Errorf("the state is %d bytes; want it small", len(state))
	}
	s, err := d.unseal(ada, state)
	if err != nil || s.Call != "call-1" || s.Seq != 2 {
		t.Fatalf("ada's own state: %+v, %v", s, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(state)
	raw[len(raw)-1] ^= 1
	other := New(Options{StateKey: []byte("another key, another installation")})
	for name, c := range map[string]struct {
		q     *Request
		state string
		d     *Door
	}{
		"bob":              {req("bob", 7, "", "tools/call"), state, d},
		"another token":    {req("ada", 8, "", "tools/call"), state, d},
		"an OAuth client":  {req("ada", 7, "client-1", "tools/call"), state, d},
		"another method":   {req("ada", 7, "", "prompts/get"), state, d},
		"tampered":         {ada, base64.RawURLEncoding.EncodeToString(raw), d},
		"not base64":       {ada, "%%%", d},
		"too short":        {ada, "AAAA", d},
		"another key":      {ada, state, other},
		"the server's own": {ada, "eyJjYWxsIjoiY2FsbC0xIn0", d},
	} {
		if _, err := c.d.unseal(c.q, c.state); !errors.Is(err, errBadState) {
			t.Errorf("%s: err = %v, want it refused", name, err)
		}
	}
	lapsed := sealed{Call: "call-1", Seq: 2, Owner: "ada", Token: 7, Method: "tools/call", Expires: time.Now().Add(-time.Minute).Unix()}
	if _, err := d.unseal(ada, sealWith(t, d, lapsed)); !errors.Is(err, errBadState) {
		t.Errorf("a lapsed state: err = %v, want it refused", err)
	}
}

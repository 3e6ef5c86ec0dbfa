package round

import (
	"encoding/json"
	"net/url"
	"testing"
)

// TestCheckAPIAnswersURL takes a URL question's accept only without
// content, as the spec's URL mode has none.
func TestCheckAPIAnswersURL(t *testing.T) {
	t.Parallel()
	_, r := pendingRound(`{"connect":` + urlAsk(t, "https://example.com/") + `}`)
	qs, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		answers string
		ok      bool
	}{
		{"Accept", `{"connect":{"action":"accept"}}`, true},
		{"AcceptNullContent", `{"connect":{"action":"accept","content":null}}`, true},
		{"Decline", `{"connect":{"action":"decline"}}`, true},
		{"Cancel", `{"connect":{"action":"cancel"}}`, true},
		{"ErrContent", `{"connect":{"action":"accept","content":{"token":"secret"}}}`, false},
		{"ErrEmptyContent", `{"connect":{"action":"accept","content":{}}}`, false},
		{"ErrMissing", `{}`, false},
		{"ErrAction", `{"connect":{"action":"finished"}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := checkAPIAnswers(qs, json.RawMessage(tt.answers))
			if (len(errs) == 0) != tt.ok {
				t.Errorf("errors = %v, want ok = %v", errs, tt.ok)
			}
		})
	}
}

// fastmcpBatched is FastMCP 4.0.0b3's round of three questions, as it sent
// them (keys in the tool's order, each a {"value": …} scalar).
const fastmcpBatched = `{"destination":{"method":"elicitation/create","params":{"message":"Where to?","mode":"form","requestedSchema":{"properties":{"value":{"type":"string","title":"Destination"}},"required":["value"],"type":"object"}}},"travellers":{"method":"elicitation/create","params":{"message":"How many travellers?","mode":"form","requestedSchema":{"properties":{"value":{"type":"integer","minimum":1,"maximum":9}},"required":["value"],"type":"object"}}},"cabin":{"method":"elicitation/create","params":{"message":"Which cabin?","mode":"form","requestedSchema":{"properties":{"value":{"type":"string","enum":["economy","business","first"],"default":"economy"}},"required":["value"],"type":"object"}}}}`

// TestServerOrder: a round's fields and the answers sent back keep the
// order the server wrote them in; a lone untitled "value" is labelled by
// its question (views' TestServerOrder shows the questions in that order).
func TestServerOrder(t *testing.T) {
	t.Parallel()
	_, r := pendingRound(fastmcpBatched)
	qs, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	got, _, ok := decodeAnswers(qs, url.Values{"q0$action": {"accept"}, "q0.value": {"Lisbon"},
		"q1$action": {"accept"}, "q1.value": {"2"}, "q2$action": {"accept"}, "q2.value": {"first"}})
	want := `{"destination":{"action":"accept","content":{"value":"Lisbon"}},"travellers":{"action":"accept","content":{"value":2}},"cabin":{"action":"accept","content":{"value":"first"}}}`
	if !ok || string(got) != want {
		t.Errorf("inputResponses = %s (ok %v), want %s", got, ok, want)
	}

	// A dataclass's fields, name then age, and FastMCP's titled "Value".
	_, r = pendingRound(`{"elicitation":{"method":"elicitation/create","params":{"mode":"form","message":"Your details","requestedSchema":{"properties":{"name":{"title":"Name","type":"string"},"age":{"title":"Age","type":"integer"}},"required":["name","age"],"title":"UserInfo","type":"object"}}}}`)
	if qs, err = Parse(r); err != nil {
		t.Fatal(err)
	}
	if f := qs[0].Form.Fields; len(f) != 2 || f[0].Label != "Name" || f[1].Label != "Age" {
		t.Errorf("fields = %+v", f)
	}
	got, _, ok = decodeAnswers(qs, url.Values{"q0$action": {"accept"}, "q0.name": {"Ada"}, "q0.age": {"36"}})
	if want := `{"elicitation":{"action":"accept","content":{"name":"Ada","age":36}}}`; !ok || string(got) != want {
		t.Errorf("inputResponses = %s, want %s", got, want)
	}
	_, r = pendingRound(`{"elicitation":{"method":"elicitation/create","params":{"mode":"form","message":"What's your name?","requestedSchema":{"properties":{"value":{"title":"Value","type":"string"}},"required":["value"],"type":"object"}}}}`)
	if qs, err = Parse(r); err != nil {
		t.Fatal(err)
	}
	if l := qs[0].Form.Fields[0].Label; l != "What's your name?" {
		t.Errorf("label = %q, want the question", l)
	}
}

package round

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

// TestPrefillReasked fills a re-asked question with what was sent to it
// before, and puts the server's reason beside the one field it names.
func TestPrefillReasked(t *testing.T) {
	t.Parallel()
	prev := &store.Round{Seq: 1, Status: store.RoundAnswered,
		InputRequests: json.RawMessage(`{"trip":` + trip("Where and when?") + `}`),
		Responses:     json.RawMessage(`{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2020-01-02","class":"business"}}}`)}
	for _, tt := range []struct {
		name, message, blamed string
	}{
		{"OK", "Please try again: Departure date must be today or later. Where and when?", "Departure date"},
		{"ErrNamesTwoFields", "Please try again: Destination and Departure date do not fit. Where and when?", ""},
		{"ErrNewWording", "Something else entirely", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, r := pendingRound(`{"trip":` + trip(tt.message) + `}`)
			r.Seq = 2
			qs, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			Prefill(qs, prev, true)
			values := map[string]string{}
			var blamed []string
			for _, fd := range qs[0].Form.Fields {
				values[fd.Name] = fd.Value
				if fd.Error != "" {
					blamed = append(blamed, fd.Label)
					if !strings.Contains(fd.Error, "must be today or later") {
						t.Errorf("%s says %q, want the server's reason", fd.Label, fd.Error)
					}
				}
			}
			if values["destination"] != "Lisbon" || values["date"] != "2020-01-02" || values["class"] != "business" {
				t.Errorf("filled in %v, want what was sent before", values)
			}
			if strings.Join(blamed, ",") != tt.blamed {
				t.Errorf("reason beside %q, want %q", blamed, tt.blamed)
			}
		})
	}
}

// TestPrefillOnlyAfterAcceptance leaves a question alone when the earlier
// round declined it, or asked something else.
func TestPrefillOnlyAfterAcceptance(t *testing.T) {
	t.Parallel()
	prev := &store.Round{Seq: 1, Status: store.RoundAnswered,
		InputRequests: json.RawMessage(`{"trip":` + trip("Where?") + `}`),
		Responses:     json.RawMessage(`{"trip":{"action":"decline"}}`)}
	_, r := pendingRound(`{"trip":` + trip("Where?") + `,"other":` + taskAsk + `}`)
	qs, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	Prefill(qs, prev, true)
	for _, q := range qs {
		for _, fd := range q.Form.Fields {
			if fd.Name == "destination" && fd.Value != "" || fd.Error != "" {
				t.Errorf("%s = %q (error %q) after a declined round, want it as the server asks", fd.Name, fd.Value, fd.Error)
			}
		}
	}
}

// TestPrefillAfterDraft leaves the fields as a draft filled them and only
// puts the server's reason beside the field it names.
func TestPrefillAfterDraft(t *testing.T) {
	t.Parallel()
	prev := &store.Round{Seq: 1, Status: store.RoundAnswered,
		InputRequests: json.RawMessage(`{"trip":` + trip("Where and when?") + `}`),
		Responses:     json.RawMessage(`{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2020-01-02"}}}`)}
	_, r := pendingRound(`{"trip":` + trip("Please try again: Departure date must be today or later. Where and when?") + `}`)
	r.Seq = 2
	qs, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	FromDraft(qs, url.Values{"q0$action": {"accept"}, "q0.destination": {"Porto"}})
	Prefill(qs, prev, false)
	for _, fd := range qs[0].Form.Fields {
		switch fd.Name {
		case "destination":
			if fd.Value != "Porto" {
				t.Errorf("destination = %q, want the draft's Porto", fd.Value)
			}
		case "date":
			if fd.Value != "" || !strings.Contains(fd.Error, "must be today or later") {
				t.Errorf("date = %q (error %q), want it empty with the server's reason", fd.Value, fd.Error)
			}
		}
	}
}

package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

const tripAsk = `{"method":"elicitation/create","params":{"mode":"form","message":"MESSAGE","requestedSchema":{
	"type":"object","properties":{
		"destination":{"type":"string","title":"Destination"},
		"date":{"type":"string","format":"date","title":"Departure date"},
		"class":{"type":"string","title":"Class","oneOf":[{"const":"economy","title":"Economy"},{"const":"business","title":"Business"}]},
		"meals":{"type":"array","title":"Meals","items":{"anyOf":[{"const":"veg","title":"Vegetarian"},{"const":"kosher","title":"Kosher"}]}},
		"window":{"type":"boolean","title":"Window seat"},
		"remind":{"type":"string","format":"date-time","title":"Remind me at"},
		"note":{"type":"string","title":"Note"}},
	"required":["destination","date"]}}}`

func trip(message string) string { return strings.Replace(tripAsk, "MESSAGE", message, 1) }

// TestAnswerLines words an answer for people: labels, the choices' titles,
// yes or no, date-times in the person's zone, lines kept, and what the form
// does not know as JSON.
func TestAnswerLines(t *testing.T) {
	t.Parallel()
	_, r := pendingRound(`{"trip":` + trip("Where to?") + `}`)
	r.Status = store.RoundAnswered
	r.Responses = json.RawMessage(`{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04",
		"class":"business","meals":["veg","kosher"],"window":false,"remind":"2031-05-04T16:30:00Z","note":"two\nlines","extra":{"a":1}}}}`)
	qs := answeredVMs(r, "demo", "America/Los_Angeles")
	var got []string
	for _, l := range qs[0].AnswerLines {
		got = append(got, l.Label+": "+l.Value)
	}
	want := []string{"Destination: Lisbon", "Departure date: 2031-05-04", "Class: Business", "Meals: Vegetarian, Kosher",
		"Window seat: No", "Remind me at: 2031-05-04 09:30 (America/Los_Angeles)", "Note: two\nlines", `extra: {"a":1}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answer lines =\n%q\nwant\n%q", got, want)
	}
	if qs[0].AnswerJSON != "" {
		t.Errorf("the answer is shown as JSON too: %s", qs[0].AnswerJSON)
	}
}

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
			qs, err := questionsOf(r)
			if err != nil {
				t.Fatal(err)
			}
			prefill(qs, prev, true)
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
	qs, err := questionsOf(r)
	if err != nil {
		t.Fatal(err)
	}
	prefill(qs, prev, true)
	for _, q := range qs {
		for _, fd := range q.Form.Fields {
			if fd.Name == "destination" && fd.Value != "" || fd.Error != "" {
				t.Errorf("%s = %q (error %q) after a declined round, want it as the server asks", fd.Name, fd.Value, fd.Error)
			}
		}
	}
}

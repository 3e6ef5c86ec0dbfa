package views

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

// TestAnswerLines words an answer for people: labels, the choices' titles,
// yes or no, date-times in the person's zone, lines kept, and what the form
// does not know as JSON.
func TestAnswerLines(t *testing.T) {
	t.Parallel()
	_, r := pendingRound(`{"trip":` + trip("Where to?") + `}`)
	r.Status = store.RoundAnswered
	r.Responses = json.RawMessage(`{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04",
		"class":"business","meals":["veg","kosher"],"window":false,"remind":"2031-05-04T16:30:00Z","note":"two\nlines","extra":{"a":1}}}}`)
	qs := Answered(r, "demo", "America/Los_Angeles")
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

// TestAdminQuestions lists a round's questions for admins by key, with
// each answer's action and content, and the roots a roots question was
// answered with.
func TestAdminQuestions(t *testing.T) {
	t.Parallel()
	_, r := multipleRound(t)
	r.Status = store.RoundAnswered
	r.Responses = json.RawMessage(`{"trip":{"action":"accept","content":{"title":"Trip"}},"capital":{"action":"decline"},
		"roots":{"roots":[{"uri":"file:///srv/data"}]}}`)
	var got []string
	for _, q := range AdminQuestions(r) {
		got = append(got, q.Key+" "+q.Kind+" "+q.Action+" "+strings.Join(strings.Fields(q.Content), ""))
	}
	want := []string{"capital sampling decline ", `roots roots  {"roots":[{"uri":"file:///srv/data"}]}`, `trip form accept {"title":"Trip"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("admin questions =\n%q\nwant\n%q", got, want)
	}
}

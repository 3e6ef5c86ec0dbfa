package round

import (
	"strings"
	"testing"
)

// TestMailChoices offers links for a round of one yes/no or one single
// choice, each answering as the round's page would, and none for any
// other round.
func TestMailChoices(t *testing.T) {
	t.Parallel()
	ask := func(schema string) string {
		return `{"q":{"method":"elicitation/create","params":{"mode":"form","message":"Delete it?","requestedSchema":` + schema + `}}}`
	}
	for _, tt := range []struct {
		name   string
		round  string
		labels string
		want   []string // inputResponses each choice stores
	}{
		{"YesNo", ask(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Delete it?","default":false}},"required":["confirm"]}`),
			"Yes|No", []string{`{"q":{"action":"accept","content":{"confirm":true}}}`, `{"q":{"action":"accept","content":{"confirm":false}}}`}},
		{"OneOf", ask(`{"type":"object","properties":{"class":{"type":"string","oneOf":[{"const":"economy","title":"Economy"},{"const":"business","title":"Business"}]}},"required":["class"]}`),
			"Economy|Business", []string{`{"q":{"action":"accept","content":{"class":"economy"}}}`, `{"q":{"action":"accept","content":{"class":"business"}}}`}},
		{"Enum", ask(`{"type":"object","properties":{"p":{"type":"string","enum":["low","high"]}}}`),
			"low|high", []string{`{"q":{"action":"accept","content":{"p":"low"}}}`, `{"q":{"action":"accept","content":{"p":"high"}}}`}},
		{"NoTwoFields", ask(`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"}}}`), "", nil},
		{"NoText", ask(`{"type":"object","properties":{"a":{"type":"string"}}}`), "", nil},
		{"NoManyOptions", ask(`{"type":"object","properties":{"a":{"type":"string","enum":["1","2","3","4","5","6","7","8","9"]}}}`), "", nil},
		{"NoTwoQuestions", `{"task":` + taskAsk + `,"q":` + strings.TrimPrefix(strings.TrimSuffix(ask(`{"type":"object","properties":{"a":{"type":"boolean"}}}`), "}"), `{"q":`) + `}`, "", nil},
		{"NoURL", `{"u":` + urlAsk(t, "https://example.com/connect") + `}`, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := pendingRound(tt.round)
			qs, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			choices := MailChoices(qs)
			var labels []string
			for _, c := range choices {
				labels = append(labels, c.Label)
			}
			if strings.Join(labels, "|") != tt.labels {
				t.Fatalf("choices %q, want %q", labels, tt.labels)
			}
			for i, c := range choices {
				a, err := FormAnswer(call, r, c.Values)
				if err != nil || !a.Fits() || string(a.Responses) != tt.want[i] {
					t.Errorf("%s answers %s (%v), want %s", c.Label, a.Responses, err, tt.want[i])
				}
			}
		})
	}
}

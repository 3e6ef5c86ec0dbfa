package round

import (
	"encoding/json"
	"testing"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestOutcome runs one table of answers through Outcome and through
// round_outcome, the SQL function that fills rounds.outcome when a round
// is answered, over a migrated database: both read an answer the same way.
// Any cancel cancels the round, all declines decline it. Outcome counts
// the actions too (an answer given twice to one question counts once).
// Left out, as the two differ: an "action" key in another case, which
// Go's decoder takes and SQL does not, and a question answered twice
// where counting both answers (SQL) and the last (Go) disagree, such as
// accept then decline.
func TestOutcome(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	for _, tt := range []struct {
		name, responses, want string // responses "" is none (SQL null)
		counts                Counts
	}{
		{"None", ``, store.OutcomeAnswered, Counts{}},
		{"Null", `null`, store.OutcomeAnswered, Counts{}},
		{"Empty", `{}`, store.OutcomeAnswered, Counts{}},
		{"Array", `[]`, store.OutcomeAnswered, Counts{}},
		{"NotAnObject", `"declined"`, store.OutcomeAnswered, Counts{}},
		{"AnswerNotAnObject", `{"a":"decline"}`, store.OutcomeAnswered, Counts{}},
		{"Accepted", `{"a":{"action":"accept","content":{}}}`, store.OutcomeAnswered, Counts{Accept: 1}},
		{"Declined", `{"a":{"action":"decline"}}`, store.OutcomeDeclined, Counts{Decline: 1}},
		{"AllDeclined", `{"a":{"action":"decline"},"b":{"action":"decline"}}`, store.OutcomeDeclined, Counts{Decline: 2}},
		{"PartlyDeclined", `{"a":{"action":"decline"},"b":{"action":"accept","content":{}}}`, store.OutcomeAnswered,
			Counts{Accept: 1, Decline: 1}},
		{"DeclinedAndSampled", `{"a":{"action":"decline"},"s":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`,
			store.OutcomeAnswered, Counts{Decline: 1}},
		{"NullAction", `{"a":{"action":"decline"},"b":{"action":null}}`, store.OutcomeAnswered, Counts{Decline: 1}},
		{"NumberAction", `{"a":{"action":"decline"},"b":{"action":7}}`, store.OutcomeAnswered, Counts{Decline: 1}},
		{"EscapedAction", `{"a":{"action":"\u0063ancel"}}`, store.OutcomeCancelled, Counts{Cancel: 1}},
		{"Cancelled", `{"a":{"action":"accept","content":{}},"b":{"action":"cancel"}}`, store.OutcomeCancelled,
			Counts{Accept: 1, Cancel: 1}},
		{"CancelledAmongAll", `{"a":{"action":"accept"},"b":{"action":"cancel"},"c":{"action":"decline"}}`, store.OutcomeCancelled,
			Counts{Accept: 1, Decline: 1, Cancel: 1}},
		{"AnsweredTwiceCancelLast", `{"a":{"action":"decline"},"a":{"action":"cancel"}}`, store.OutcomeCancelled, Counts{Cancel: 1}},
		{"AnsweredTwiceAcceptLast", `{"a":{"action":"decline"},"a":{"action":"accept"}}`, store.OutcomeAnswered, Counts{Accept: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var arg *string
			if tt.responses != "" {
				arg = &tt.responses
			}
			var inSQL string
			if err := pool.QueryRow(t.Context(), `select round_outcome($1::json)`, arg).Scan(&inSQL); err != nil {
				t.Fatal(err)
			}
			inGo, counts := Outcome(json.RawMessage(tt.responses))
			if inGo != tt.want || inSQL != tt.want || counts != tt.counts {
				t.Errorf("Outcome = %q, %+v; round_outcome = %q; want %q, %+v", inGo, counts, inSQL, tt.want, tt.counts)
			}
		})
	}
}

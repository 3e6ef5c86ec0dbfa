package round

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

func TestDecodeSamplingAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		form    url.Values
		ok      bool
		refused bool
		want    string // in the responses
	}{
		{"OK", url.Values{"q0$action": {"accept"}, "q0.reply": {"Paris"}, "q2$action": {"accept"}, "q2.title": {"Trip"}}, true, false,
			`"capital":{"content":{"text":"Paris","type":"text"},"model":"human","role":"assistant","stopReason":"endTurn"}`},
		{"RootsAdded", url.Values{"q0$action": {"accept"}, "q0.reply": {"Paris"}, "q2$action": {"decline"}}, true, false,
			`"roots":{"roots":[{"uri":"file:///srv/data","name":"Data"}]}`},
		{"ErrRequired", url.Values{"q0$action": {"accept"}, "q0.reply": {"  "}, "q2$action": {"decline"}}, false, false, ""},
		{"ErrNoChoice", url.Values{"q0.reply": {"Paris"}, "q2$action": {"decline"}}, false, false, ""},
		{"Declined", url.Values{"q0$action": {"decline"}, "q2$action": {"accept"}, "q2.title": {"Trip"}}, true, true, `"capital":{"action":"decline"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := multipleRound(t)
			qs, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			WithRoots(qs, call)
			responses, _, ok := decodeAnswers(qs, tt.form)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (reply error %q, choice error %q)", ok, tt.ok, qs[0].ReplyError, qs[0].Error)
			}
			if !ok {
				if qs[0].ReplyError == "" && qs[0].Error == "" {
					t.Error("no error on the sampling question")
				}
				if qs[0].Reply != tt.form.Get("q0.reply") {
					t.Errorf("the typed reply was not kept: %q", qs[0].Reply)
				}
				return
			}
			if !strings.Contains(string(responses), tt.want) {
				t.Errorf("responses = %s; want %s", responses, tt.want)
			}
			if got := refused(qs, responses); got != tt.refused {
				t.Errorf("refused = %v", got)
			}
		})
	}
}

func TestCheckAPISamplingAnswers(t *testing.T) {
	t.Parallel()
	reply := `{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"human","stopReason":"endTurn"}`
	trip := `"trip":{"action":"decline"}`
	for _, tt := range []struct {
		name string
		body string
		errs []string // question.field keys with errors
	}{
		{"OK", `{"capital":` + reply + `,` + trip + `}`, nil},
		{"OKList", `{"capital":{"role":"assistant","content":[{"type":"text","text":"Paris"}],"model":"m"},` + trip + `}`, nil},
		{"OKDecline", `{"capital":{"action":"decline"},` + trip + `}`, nil},
		{"ErrRootsGiven", `{"capital":` + reply + `,"roots":{"roots":[]},` + trip + `}`, []string{"roots."}},
		{"ErrEmpty", `{"capital":{"role":"assistant","content":{"type":"text","text":""},"model":"human"},` + trip + `}`, []string{"capital.content"}},
		{"ErrRole", `{"capital":{"role":"user","content":{"type":"text","text":"x"},"model":"human"},` + trip + `}`, []string{"capital.role"}},
		{"ErrNoModel", `{"capital":{"role":"assistant","content":{"type":"text","text":"x"}},` + trip + `}`, []string{"capital.model"}},
		{"ErrAccept", `{"capital":{"action":"accept"},` + trip + `}`, []string{"capital."}},
		{"ErrMissing", `{` + trip + `}`, []string{"capital."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, r := multipleRound(t)
			qs, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			errs := checkAPIAnswers(qs, json.RawMessage(tt.body))
			var got []string
			for key, fields := range errs {
				for field := range fields {
					got = append(got, key+"."+field)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.errs, ",") {
				t.Errorf("errors %v (%v), want %v", got, errs, tt.errs)
			}
		})
	}
}

package round

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

// TestFormAnswer decides what a person's posted answers do: store them,
// send the form back, or end the call on a declined sampling request,
// unless a session holds the round and the server waits for the refusal.
func TestFormAnswer(t *testing.T) {
	t.Parallel()
	held := "instance-1"
	for _, tt := range []struct {
		name    string
		round   func(t *testing.T) (*store.Call, *store.Round)
		form    url.Values
		want    string // inputResponses, "" when the form is sent back
		refusal string
	}{
		{"OK", taskRound, url.Values{"q0$action": {"accept"}, "q0.title": {"Write docs"}},
			`{"task":{"action":"accept","content":{"title":"Write docs"}}}`, ""},
		{"Cancelled", taskRound, url.Values{"q0$action": {"cancel"}}, `{"task":{"action":"cancel"}}`, ""},
		{"ErrField", taskRound, url.Values{"q0$action": {"accept"}, "q0.title": {"ab"}}, "", ""},
		{"ErrNoChoice", taskRound, url.Values{"q0.title": {"Write docs"}}, "", ""},
		{"SamplingDeclined", multipleRound, url.Values{"q0$action": {"decline"}, "q2$action": {"accept"}, "q2.title": {"Trip"}},
			`{"capital":{"action":"decline"},"roots":{"roots":[{"uri":"file:///srv/data","name":"Data"}]},"trip":{"action":"accept","content":{"title":"Trip"}}}`,
			refusedSampling},
		{"SamplingDeclinedHeld", func(t *testing.T) (*store.Call, *store.Round) {
			call, r := multipleRound(t)
			r.HeldBy = &held
			return call, r
		}, url.Values{"q0$action": {"decline"}, "q2$action": {"decline"}},
			`{"capital":{"action":"decline"},"roots":{"roots":[{"uri":"file:///srv/data","name":"Data"}]},"trip":{"action":"decline"}}`, ""},
		{"SamplingReplied", multipleRound, url.Values{"q0$action": {"accept"}, "q0.reply": {"Paris"}, "q2$action": {"decline"}},
			`{"capital":{"content":{"text":"Paris","type":"text"},"model":"human","role":"assistant","stopReason":"endTurn"},"roots":{"roots":[{"uri":"file:///srv/data","name":"Data"}]},"trip":{"action":"decline"}}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := tt.round(t)
			a, err := FormAnswer(call, r, tt.form)
			if err != nil {
				t.Fatal(err)
			}
			if a.Fits() != (tt.want != "") {
				t.Fatalf("fits = %v, want %v", a.Fits(), tt.want != "")
			}
			if string(a.Responses) != tt.want {
				t.Errorf("inputResponses = %s, want %s", a.Responses, tt.want)
			}
			if a.Refusal != tt.refusal {
				t.Errorf("refusal = %q, want %q", a.Refusal, tt.refusal)
			}
			if len(a.Actions) != len(a.Questions) {
				t.Errorf("%d choices for %d questions", len(a.Actions), len(a.Questions))
			}
			if !a.Fits() && !hasError(a.Questions) {
				t.Error("an answer sent back says nothing is wrong with it")
			}
		})
	}
}

// TestAPIAnswer decides what an answer sent through the API does: the
// roots are added from the server's settings, what does not fit is said
// field by field, and a declined sampling request ends the call.
func TestAPIAnswer(t *testing.T) {
	t.Parallel()
	reply := `{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"human","stopReason":"endTurn"}`
	for _, tt := range []struct {
		name    string
		body    string
		fits    bool
		refusal string
		misfit  string // what String says, in part
	}{
		{"OK", `{"capital":` + reply + `,"trip":{"action":"decline"}}`, true, "", ""},
		{"SamplingDeclined", `{"capital":{"action":"decline"},"trip":{"action":"accept","content":{"title":"Trip"}}}`, true, refusedSampling, ""},
		{"ErrMissing", `{"trip":{"action":"decline"}}`, false, "", "capital: Answer this question"},
		{"ErrField", `{"capital":` + reply + `,"trip":{"action":"accept","content":{"title":"ab"}}}`, false, "", "trip.title: "},
		{"ErrUnknown", `{"capital":` + reply + `,"trip":{"action":"decline"},"other":{"action":"decline"}}`, false, "", "other: This round has no such question."},
		{"ErrNotObject", `[]`, false, "", "inputResponses must be an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := multipleRound(t)
			a, err := APIAnswer(call, r, json.RawMessage(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if a.Fits() != tt.fits {
				t.Fatalf("fits = %v (misfit %v), want %v", a.Fits(), a.Misfit, tt.fits)
			}
			if a.Refusal != tt.refusal {
				t.Errorf("refusal = %q, want %q", a.Refusal, tt.refusal)
			}
			if !tt.fits {
				if !strings.Contains(a.Misfit.String(), tt.misfit) {
					t.Errorf("misfit = %q, want it to say %q", a.Misfit.String(), tt.misfit)
				}
				return
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(a.Responses, &got); err != nil {
				t.Fatal(err)
			}
			if string(got["roots"]) != `{"roots":[{"uri":"file:///srv/data","name":"Data"}]}` {
				t.Errorf("roots answered with %s, want the server's settings", got["roots"])
			}
			var sent map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.body), &sent); err != nil {
				t.Fatal(err)
			}
			for key, answer := range sent {
				if string(got[key]) != string(answer) {
					t.Errorf("%s is stored as %s, want it exactly as given, %s", key, got[key], answer)
				}
			}
			if len(got) != len(sent)+1 {
				t.Errorf("inputResponses = %s, want what was sent and the roots", a.Responses)
			}
		})
	}
}

// TestAnswerNotWaiting takes no answer to a round that was answered or
// has ended, or that is not the call's current round.
func TestAnswerNotWaiting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		status string
		seq    int
	}{
		{"Answered", store.RoundAnswered, 1},
		{"Expired", store.RoundExpired, 1},
		{"NotCurrent", store.RoundPending, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := taskRound(t)
			r.Status, call.CurrentSeq = tt.status, tt.seq
			if a, err := FormAnswer(call, r, url.Values{"q0$action": {"decline"}}); !errors.Is(err, ErrNotWaiting) || a != nil {
				t.Errorf("FormAnswer = %v, %v; want ErrNotWaiting", a, err)
			}
			if a, err := APIAnswer(call, r, json.RawMessage(`{"task":{"action":"decline"}}`)); !errors.Is(err, ErrNotWaiting) || a != nil {
				t.Errorf("APIAnswer = %v, %v; want ErrNotWaiting", a, err)
			}
		})
	}
}

// TestFieldErrorsString says every misfit in one sentence, in an order
// that does not change.
func TestFieldErrorsString(t *testing.T) {
	t.Parallel()
	errs := FieldErrors{"": {"": "whole"}, "q": {"": "x", "f": "y"}}
	if got, want := errs.String(), "q.f: y; q: x; whole"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// TestBlob finds a resource's binary contents by index, and nothing where
// there are none.
func TestBlob(t *testing.T) {
	t.Parallel()
	result := json.RawMessage(`{"contents":[{"uri":"a://t","mimeType":"text/plain","text":"hello"},
		{"uri":"a://b.png","mimeType":"image/png","blob":"aGk="},{"uri":"a://bad","blob":"%%%"}]}`)
	if data, uri, mimeType, ok := Blob(result, 1); !ok || string(data) != "hi" || uri != "a://b.png" || mimeType != "image/png" {
		t.Errorf("Blob(1) = %q, %q, %q, %v", data, uri, mimeType, ok)
	}
	for _, i := range []int{-1, 0, 2, 3} {
		if _, _, _, ok := Blob(result, i); ok {
			t.Errorf("Blob(%d) found contents", i)
		}
	}
}

func taskRound(t *testing.T) (*store.Call, *store.Round) {
	t.Helper()
	return pendingRound(`{"task":` + taskAsk + `}`)
}

// hasError reports whether any question says what is wrong with what was
// posted to it, as the form sent back shows (views' TestDecodeAnswersMixed).
func hasError(qs []Question) bool {
	for _, q := range qs {
		if q.Error != "" || q.ReplyError != "" {
			return true
		}
		if q.Form == nil {
			continue
		}
		if len(q.Form.Errors) > 0 {
			return true
		}
		for _, f := range q.Form.Fields {
			if f.Error != "" {
				return true
			}
		}
	}
	return false
}

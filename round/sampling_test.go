package round

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestSamplingQuestionShown: the whole request is on the page, as text;
// images only as checked data URLs; the roots as answered automatically.
func TestSamplingQuestionShown(t *testing.T) {
	t.Parallel()
	call, r := multipleRound(t)
	doc, html := renderRound(t, call, r, nil, nil)
	card := doc.Find(`section[data-kind="sampling"]`)
	if card.Length() != 1 {
		t.Fatalf("no sampling question in:\n%s", html)
	}
	if got := card.Find(`[data-testid="system-prompt"]`).Text(); got != "You are <b>terse</b>." {
		t.Errorf("system prompt = %q, want it as text", got)
	}
	if n := card.Find(`[data-testid="message"]`).Length(); n != 3 {
		t.Errorf("%d messages shown, want 3", n)
	}
	imgs := card.Find("img")
	if imgs.Length() != 1 || imgs.AttrOr("src", "") != "data:image/png;base64,iVBORw0KGgo=" {
		t.Errorf("images = %d, first src %q; want only the PNG", imgs.Length(), imgs.AttrOr("src", ""))
	}
	if card.Find("audio").Length() != 0 {
		t.Error("audio that is not base64 is played")
	}
	for _, want := range []string{"100 tokens", "claude-3-sonnet", "Intelligence priority", "0.8", "get_weather", "the model may use the tools", "END"} {
		if !strings.Contains(card.Text(), want) {
			t.Errorf("sampling question lacks %q", want)
		}
	}
	if card.Find(`textarea[name="q0.reply"]`).Length() != 1 {
		t.Error("no reply box")
	}
	roots := doc.Find(`section[data-kind="roots"]`)
	if !strings.Contains(roots.Text(), "Answered automatically") || roots.Find(`[data-testid="root"]`).Length() != 1 {
		t.Errorf("roots question reads %q", roots.Text())
	}
	if roots.Find("input, textarea").Length() != 0 {
		t.Error("the roots question asks for input")
	}
}

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
			withRoots(qs, call)
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

// TestPromptAndResourceResults renders what prompts and resources return.
func TestPromptAndResourceResults(t *testing.T) {
	t.Parallel()
	vm := Result("prompts/get", json.RawMessage(`{"description":"D","messages":[
		{"role":"user","content":{"type":"text","text":"<script>x</script>"}},
		{"role":"assistant","content":{"type":"resource","resource":{"uri":"r://a","mimeType":"text/plain","text":"embedded"}}}]}`), "/c/")
	if vm.Kind != "prompt" || vm.Description != "D" || len(vm.Messages) != 2 || vm.Messages[0].Blocks[0].Text != "<script>x</script>" ||
		vm.Messages[1].Blocks[0].Text != "embedded" {
		t.Errorf("prompt = %+v", vm)
	}
	vm = Result("resources/read", json.RawMessage(`{"contents":[
		{"uri":"a://t","mimeType":"text/plain","text":"hello"},
		{"uri":"a://b.png","mimeType":"image/png","blob":"iVBORw0KGgo="},
		{"uri":"a://bad","blob":"%%%"}]}`), "/calls/x/contents/")
	if len(vm.Contents) != 3 || vm.Contents[0].Text != "hello" || vm.Contents[1].Href != "/calls/x/contents/1" ||
		vm.Contents[1].Size != "8 bytes" || !vm.Contents[2].Blob || vm.Contents[2].Href != "" {
		t.Errorf("contents = %+v", vm.Contents)
	}
}

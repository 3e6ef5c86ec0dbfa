package slack_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/slack"
)

// TestFits: a round Slack cannot show faithfully is sent to Rounds, with a
// reason, and its message offers Open in Rounds instead of Answer; a long
// title is shortened, not refused.
func TestFits(t *testing.T) {
	for _, tc := range []struct{ file, reason string }{
		{"url-mode", "open a page"},
		{"sampling", "model's reply"},
		{"json-field", "answered as JSON"},
		{"over-limit-blocks", "101 blocks"},
		{"over-limit-options", "101 options"},
		{"over-limit-option-text", "over Slack's 75 characters"},
		{"over-limit-label", "over Slack's 2000 characters"},
		{"over-limit-text", "over Slack's 3000 characters"},
		{"long-title", ""},
		{"all-kinds", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			a := askFile(t, "../forms/testdata/slack/schemas/"+tc.file+".json")
			ok, reason := slack.Fits(a)
			if ok != (tc.reason == "") || !strings.Contains(reason, tc.reason) {
				t.Fatalf("Fits = %v %q, want a reason saying %q", ok, reason, tc.reason)
			}
			texts := strings.Join(buttonTexts(t, slack.NewMessage(a)), "|")
			if ok != strings.HasPrefix(texts, "Answer|") || !strings.Contains(texts, "Open in Rounds") {
				t.Errorf("buttons = %s", texts)
			}
		})
	}
	a := askFile(t, "../forms/testdata/slack/schemas/long-title.json")
	v, _ := slack.Modal(a)
	if got := v.Title.Text; got != "Rotate every credential…" {
		t.Errorf("title = %q, want it shortened to 24 characters", got)
	}
	rootsAsk := askFor(t, "Roots", `{"r":{"method":"roots/list"}}`)
	if ok, _ := slack.Fits(rootsAsk); ok {
		t.Error("a roots question fits a modal")
	}
}

// TestRequiredAndOptional: Slack requires what the page marks required; a
// boolean is never required (unchecked is an answer, false), nor a
// multiple choice without minItems.
func TestRequiredAndOptional(t *testing.T) {
	a := askFor(t, "R", `{"q":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object",
		"properties":{"t":{"type":"string"},"b":{"type":"boolean"},"m":{"type":"array","items":{"enum":["x","y"]}},
		"n":{"type":"array","minItems":1,"items":{"enum":["x","y"]}},"o":{"type":"string"}},"required":["t","b","m","n"]}}}}`)
	v, err := slack.Modal(a)
	if err != nil {
		t.Fatal(err)
	}
	optional := map[string]bool{}
	for _, b := range v.Blocks.BlockSet {
		if ib, ok := b.(*goslack.InputBlock); ok {
			optional[ib.Label.Text] = ib.Optional
		}
	}
	want := map[string]bool{"t": false, "b": true, "m": true, "n": false, "o": true}
	for k, w := range want {
		if optional[k] != w {
			t.Errorf("%s optional = %v, want %v", k, optional[k], w)
		}
	}
}

// TestUntrustedTextStaysText: what a server sends never reaches mrkdwn
// unescaped, so it cannot mention @channel, link or format; Rounds' own
// mrkdwn (dates, names) escapes &, < and >.
func TestUntrustedTextStaysText(t *testing.T) {
	a := askFile(t, "../forms/testdata/slack/schemas/hostile.json")
	a.From = "<!channel> bot"
	a.For = "ops & <@U0ADMIN>"
	m := slack.NewMessage(a)
	v, _ := slack.Modal(a)
	ended := slack.Ended(a, slack.End{Outcome: slack.OutcomeAnswered, By: "<!here>", At: until})
	control := regexp.MustCompile(`<[!@#]|<https?:`)
	for name, blocks := range map[string]any{"message": m.Blocks, "modal": v.Blocks.BlockSet, "ended": ended.Blocks} {
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case map[string]any:
				if x["type"] == "mrkdwn" {
					s, _ := x["text"].(string)
					if control.MatchString(regexp.MustCompile(`<!date\^[^>]*>`).ReplaceAllString(s, "")) {
						t.Errorf("%s: mrkdwn carries a control sequence: %q", name, s)
					}
				}
				for _, y := range x {
					walk(y)
				}
			case []any:
				for _, y := range x {
					walk(y)
				}
			}
		}
		walk(asJSON(t, blocks))
	}
	for _, text := range []string{m.Text, ended.Text} {
		if control.MatchString(text) {
			t.Errorf("message text (read as mrkdwn) carries a control sequence: %q", text)
		}
	}
	if b := blocksJSON(t, m.Blocks); !strings.Contains(b, `"text":"<!channel> *urgent*`) {
		t.Errorf("the server's message is not shown as it was sent: %s", b)
	}
}

// TestEnded: the ended message says who answered and when, and has no buttons.
func TestEnded(t *testing.T) {
	a := askFile(t, "../forms/testdata/slack/schemas/yes-no.json")
	at := time.Date(2026, 12, 3, 14, 2, 0, 0, time.UTC)
	m := slack.Ended(a, slack.End{Outcome: slack.OutcomeAnswered, By: "ada", At: at})
	checkMessage(t, m)
	if got := buttonTexts(t, m); len(got) != 0 {
		t.Errorf("buttons left: %v", got)
	}
	b := blocksJSON(t, m.Blocks)
	if !strings.Contains(b, "Answered by ada at <!date^1796306520^{time}|14:02 UTC>") {
		t.Errorf("ended blocks = %s", b)
	}
	if !strings.HasSuffix(m.Text, ": Answered by ada") {
		t.Errorf("text = %q", m.Text)
	}
	for _, tc := range []struct {
		e    slack.End
		want string
	}{
		{slack.End{Outcome: slack.OutcomeDeclined, By: "bob", At: at}, "Declined by bob at "},
		{slack.End{Outcome: slack.OutcomeExpired, At: at}, "Expired at "},
		{slack.End{Outcome: slack.OutcomeEscalated, By: "ops", At: at}, "Escalated to ops at "},
	} {
		if got := tc.e.Sentence(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("Sentence = %q, want it to start %q", got, tc.want)
		}
	}
}

// blocksJSON is blocks as JSON, with < and > as they are.
func blocksJSON(t *testing.T, blocks any) string {
	t.Helper()
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(blocks); err != nil {
		t.Fatal(err)
	}
	// slack-go escapes < and > inside context elements; Slack reads both alike.
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(buf.String())
}

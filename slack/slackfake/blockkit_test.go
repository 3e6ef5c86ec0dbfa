package slackfake_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/slack/slackfake"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func modal(blocks string) string {
	return `{"type":"modal","title":{"type":"plain_text","text":"Round"},"submit":{"type":"plain_text","text":"Send"},"blocks":` + blocks + `}`
}

func input(element string) string {
	return `[{"type":"input","block_id":"b","label":{"type":"plain_text","text":"L"},"element":` + element + `}]`
}

func opts(n, textLen int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"text":{"type":"plain_text","text":"` + strings.Repeat("o", textLen) + `"},"value":"v` + strings.Repeat("x", i) + `"}`)
	}
	return "[" + b.String() + "]"
}

// TestCheckView: each Block Kit rule the fake knows refuses a view that
// breaks it, and names the rule; a view within the limits passes.
func TestCheckView(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct{ name, view, want string }{
		{"OK", modal(input(`{"type":"static_select","action_id":"v","options":` + opts(100, 75) + `}`)), ""},
		{"TitleOver24", `{"type":"modal","title":{"type":"plain_text","text":"` + long(25) + `"},"blocks":[]}`, "25 characters, more than 24"},
		{"NoSubmitWithInput", `{"type":"modal","title":{"type":"plain_text","text":"x"},"blocks":` + input(`{"type":"plain_text_input","action_id":"v"}`) + `}`, "submit"},
		{"UnknownBlock", modal(`[{"type":"video"}]`), `unknown block type "video"`},
		{"UnknownElement", modal(input(`{"type":"rich_text_input","action_id":"v"}`)), `"rich_text_input" is not allowed`},
		{"TextInputInActions", modal(`[{"type":"actions","elements":[{"type":"plain_text_input","action_id":"v"}]}]`), "not allowed"},
		{"DuplicateBlockID", modal(`[{"type":"divider","block_id":"x"},{"type":"divider","block_id":"x"}]`), "not unique"},
		{"DuplicateActionID", modal(`[{"type":"actions","elements":[{"type":"button","action_id":"a","text":{"type":"plain_text","text":"A"}},{"type":"button","action_id":"a","text":{"type":"plain_text","text":"B"}}]}]`), "not unique in its block"},
		{"BlockIDOver255", modal(`[{"type":"divider","block_id":"` + long(256) + `"}]`), "256 characters, more than 255"},
		{"SectionTextOver3000", modal(`[{"type":"section","text":{"type":"mrkdwn","text":"` + long(3001) + `"}}]`), "more than 3000"},
		{"LabelOver2000", modal(`[{"type":"input","label":{"type":"plain_text","text":"` + long(2001) + `"},"element":{"type":"plain_text_input"}}]`), "more than 2000"},
		{"LabelMrkdwn", modal(`[{"type":"input","label":{"type":"mrkdwn","text":"x"},"element":{"type":"plain_text_input"}}]`), "must be plain_text"},
		{"Options101", modal(input(`{"type":"static_select","options":` + opts(101, 1) + `}`)), "101 options"},
		{"RadioOver10", modal(input(`{"type":"radio_buttons","options":` + opts(11, 1) + `}`)), "11 options, need 1 to 10"},
		{"OptionTextOver75", modal(input(`{"type":"static_select","options":` + opts(1, 76) + `}`)), "76 characters, more than 75"},
		{"InitialNotAnOption", modal(input(`{"type":"static_select","options":` + opts(1, 1) + `,"initial_option":{"text":{"type":"plain_text","text":"z"},"value":"zz"}}`)), "not one of the options"},
		{"ButtonTextOver75", modal(`[{"type":"actions","elements":[{"type":"button","text":{"type":"plain_text","text":"` + long(76) + `"}}]}]`), "more than 75"},
		{"Actions26", modal(`[{"type":"actions","elements":[` + strings.TrimSuffix(strings.Repeat(`{"type":"button","text":{"type":"plain_text","text":"b"}},`, 26), ",") + `]}]`), "26 elements"},
		{"NumberNotDecimal", modal(input(`{"type":"number_input","is_decimal_allowed":false,"min_value":"1.5"}`)), "whole number"},
		{"NumberNoDecimalFlag", modal(input(`{"type":"number_input"}`)), "is_decimal_allowed"},
		{"NumberInitialOutOfBounds", modal(input(`{"type":"number_input","is_decimal_allowed":true,"min_value":"1","max_value":"2","initial_value":"3"}`)), "outside min_value"},
		{"BadDate", modal(input(`{"type":"datepicker","initial_date":"3 Dec"}`)), "YYYY-MM-DD"},
		{"BadDateTime", modal(input(`{"type":"datetimepicker","initial_date_time":"soon"}`)), "UNIX timestamp"},
		{"MaxLengthOver3000", modal(input(`{"type":"plain_text_input","max_length":3001}`)), "outside 1 to 3000"},
		{"EmptyText", modal(`[{"type":"header","text":{"type":"plain_text","text":""}}]`), "empty text"},
		{"Blocks101", modal("[" + strings.TrimSuffix(strings.Repeat(`{"type":"divider"},`, 101), ",") + "]"), "101 blocks, more than 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := slackfake.CheckView(decode(t, tc.view).(map[string]any))
			if tc.want == "" {
				if len(problems) > 0 {
					t.Errorf("problems = %v, want none", problems)
				}
				return
			}
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Errorf("problems = %v, want one saying %q", problems, tc.want)
			}
		})
	}
}

// TestCheckMessage: messages hold up to 50 blocks.
func TestCheckMessage(t *testing.T) {
	fifty := "[" + strings.TrimSuffix(strings.Repeat(`{"type":"divider"},`, 50), ",") + "]"
	if p := slackfake.CheckMessage(decode(t, fifty).([]any)); len(p) != 0 {
		t.Errorf("50 blocks: %v", p)
	}
	if p := slackfake.CheckMessage(decode(t, strings.Replace(fifty, "[", `[{"type":"divider"},`, 1)).([]any)); len(p) == 0 {
		t.Error("51 blocks in a message passed")
	}
}

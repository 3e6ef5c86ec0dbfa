package slack

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/forms"
)

const (
	// multilineFrom is the maxLength above which text gets several lines.
	multilineFrom = 150
	// maxInputLength is the most a plain_text_input takes (max_length).
	maxInputLength = 3000
	// emptyOption stands for an option whose text is empty (Slack refuses "").
	emptyOption = "(empty)"
	// checkedValue is the value of a boolean's single checkbox.
	checkedValue = "true"
)

var isDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// input is a field's input block, or why Slack cannot show it ("" when it can).
func input(fd *forms.Field, blockID string, loc *time.Location) (goslack.Block, string) {
	label := nonEmpty(fd.Label, "Answer")
	if utf8.RuneCountInString(label) > maxLabel {
		return nil, fmt.Sprintf("a question's title is over Slack's %d characters.", maxLabel)
	}
	el, reason := element(fd, loc)
	if reason != "" {
		return nil, reason
	}
	b := goslack.NewInputBlock(blockID, plain(label), nil, el)
	if h := hint(fd); h != "" {
		if utf8.RuneCountInString(h) > maxLabel {
			return nil, fmt.Sprintf("the description of %q is over Slack's %d characters.", shorten(label, 40), maxLabel)
		}
		b.Hint = plain(h)
	}
	b.Optional = !fd.ShowRequired()
	return b, ""
}

// hint is what the page says under a field: its description and its bounds.
func hint(fd *forms.Field) string {
	var parts []string
	for _, s := range []string{fd.Help, fd.Hint()} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// element is the Block Kit element a field's kind becomes.
func element(fd *forms.Field, loc *time.Location) (goslack.BlockElement, string) {
	switch fd.Kind {
	case forms.KindText, forms.KindTextarea:
		return textInput(fd)
	case forms.KindEmail:
		return &goslack.EmailTextInputBlockElement{Type: goslack.METEmailTextInput, ActionID: valueActionID, InitialValue: fd.Value}, ""
	case forms.KindURL:
		return &goslack.URLTextInputBlockElement{Type: goslack.METURLTextInput, ActionID: valueActionID, InitialValue: fd.Value}, ""
	case forms.KindNumber, forms.KindInteger:
		return numberInput(fd), ""
	case forms.KindCheckbox:
		el := goslack.NewCheckboxGroupsBlockElement(valueActionID, goslack.NewOptionBlockObject(checkedValue, plain("Yes"), nil))
		if fd.Checked {
			el.InitialOptions = el.Options
		}
		return el, ""
	case forms.KindRadio, forms.KindSelect:
		return oneOf(fd)
	case forms.KindCheckboxes:
		return someOf(fd)
	case forms.KindDate:
		el := goslack.NewDatePickerBlockElement(valueActionID)
		if isDate.MatchString(fd.Value) {
			el.InitialDate = fd.Value
		}
		return el, ""
	case forms.KindDateTime:
		el := goslack.NewDateTimePickerBlockElement(valueActionID)
		if t, err := parseLocal(fd.Value, loc); err == nil {
			el.InitialDateTime = t.Unix()
		}
		return el, ""
	}
	return nil, fmt.Sprintf("%q is answered as JSON, which Slack cannot show.", shorten(nonEmpty(fd.Label, "a question"), 40))
}

func textInput(fd *forms.Field) (goslack.BlockElement, string) {
	if utf8.RuneCountInString(fd.Value) > maxInputLength {
		return nil, fmt.Sprintf("the default answer is over Slack's %d characters.", maxInputLength)
	}
	if fd.MinLength != nil && *fd.MinLength > maxInputLength {
		return nil, fmt.Sprintf("an answer must be longer than Slack's %d characters.", maxInputLength)
	}
	el := goslack.NewPlainTextInputBlockElement(nil, valueActionID)
	el.InitialValue = fd.Value
	el.Multiline = fd.Kind == forms.KindTextarea || strings.Contains(fd.Value, "\n") ||
		fd.MaxLength != nil && *fd.MaxLength > multilineFrom
	if fd.MinLength != nil {
		el.MinLength = *fd.MinLength
	}
	if fd.MaxLength != nil && *fd.MaxLength >= 1 && *fd.MaxLength <= maxInputLength {
		el.MaxLength = *fd.MaxLength
	}
	if el.MaxLength > 0 && el.MinLength > el.MaxLength {
		el.MinLength = 0 // no answer fits: Slack refuses such bounds, Rounds' check says so
	}
	return el, ""
}

// numberInput keeps the bounds and default Slack can hold: number_input
// takes numbers as strings, whole ones when decimals are not allowed; a
// bound it cannot hold is left to Rounds' own check on submit.
func numberInput(fd *forms.Field) goslack.BlockElement {
	decimal := fd.Kind == forms.KindNumber
	el := goslack.NewNumberInputBlockElement(nil, valueActionID, decimal)
	el.MinValue = slackNumber(fd.Min, decimal)
	el.MaxValue = slackNumber(fd.Max, decimal)
	if el.MinValue != "" && el.MaxValue != "" && !within(el.MinValue, "", el.MaxValue) {
		el.MinValue, el.MaxValue = "", "" // no answer fits: Slack refuses such bounds, Rounds' check says so
	}
	if v := slackNumber(fd.Value, decimal); v != "" && within(v, el.MinValue, el.MaxValue) {
		el.InitialValue = v
	}
	return el
}

// slackNumber writes a JSON number as number_input takes it, or "".
func slackNumber(s string, decimal bool) string {
	if s == "" {
		return ""
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return ""
	}
	if !decimal {
		if !r.IsInt() || !r.Num().IsInt64() {
			return ""
		}
		return r.Num().String()
	}
	f, _ := r.Float64()
	if math.IsInf(f, 0) || new(big.Rat).SetFloat64(f).Cmp(r) != 0 {
		return "" // not held exactly by a float: Rounds checks it
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func within(v, lo, hi string) bool {
	x, _ := new(big.Rat).SetString(v)
	if l, ok := new(big.Rat).SetString(lo); ok && lo != "" && x.Cmp(l) < 0 {
		return false
	}
	if h, ok := new(big.Rat).SetString(hi); ok && hi != "" && x.Cmp(h) > 0 {
		return false
	}
	return true
}

// options are a field's choices as Block Kit options, valued by their
// position so that any value the server chose round-trips.
func options(fd *forms.Field) ([]*goslack.OptionBlockObject, string) {
	if len(fd.Options) > maxOptions {
		return nil, fmt.Sprintf("%q has %d options and Slack shows %d.", shorten(fd.Label, 40), len(fd.Options), maxOptions)
	}
	out := make([]*goslack.OptionBlockObject, len(fd.Options))
	for i, o := range fd.Options {
		text := nonEmpty(o.Label, emptyOption)
		if utf8.RuneCountInString(text) > maxOptionText {
			return nil, fmt.Sprintf("an option of %q is over Slack's %d characters.", shorten(fd.Label, 40), maxOptionText)
		}
		out[i] = goslack.NewOptionBlockObject(strconv.Itoa(i), plain(text), nil)
	}
	return out, ""
}

// oneOf is a single choice: radio buttons for up to five options, else a select.
func oneOf(fd *forms.Field) (goslack.BlockElement, string) {
	opts, reason := options(fd)
	if reason != "" {
		return nil, reason
	}
	var initial *goslack.OptionBlockObject
	for i, o := range fd.Options {
		if fd.Value != "" && o.Value == fd.Value {
			initial = opts[i]
		}
	}
	if len(opts) <= maxChoices {
		el := goslack.NewRadioButtonsBlockElement(valueActionID, opts...)
		el.InitialOption = initial
		return el, ""
	}
	el := goslack.NewOptionsSelectBlockElement(goslack.OptTypeStatic, plain("Choose"), valueActionID, opts...)
	el.InitialOption = initial
	return el, ""
}

// someOf is a multiple choice: checkboxes for up to five options, else a multi-select.
func someOf(fd *forms.Field) (goslack.BlockElement, string) {
	opts, reason := options(fd)
	if reason != "" {
		return nil, reason
	}
	var initial []*goslack.OptionBlockObject
	for i, o := range fd.Options {
		if fd.Selected(o.Value) {
			initial = append(initial, opts[i])
		}
	}
	if len(opts) <= maxChoices {
		el := goslack.NewCheckboxGroupsBlockElement(valueActionID, opts...)
		el.InitialOptions = initial
		return el, ""
	}
	el := goslack.NewOptionsMultiSelectBlockElement(goslack.MultiOptTypeStatic, plain("Choose"), valueActionID, opts...)
	el.InitialOptions = initial
	if fd.MaxItems != nil && *fd.MaxItems >= 1 {
		n := *fd.MaxItems
		el.MaxSelectedItems = &n
	}
	return el, ""
}

// localLayouts are the layouts forms writes a date-time in: the wall clock
// of the form's time zone.
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999"}

func parseLocal(s string, loc *time.Location) (time.Time, error) {
	var err error
	for _, l := range localLayouts {
		var t time.Time
		if t, err = time.ParseInLocation(l, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

package slack

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/round"
)

// Values turns a modal's view_submission state.values into what the
// round's page would have posted (round.ActionName, the forms' field names
// and markers), so that round.FormAnswer runs Rounds' own checks on it.
// Every question is accepted: Decline and Cancel are buttons, not a
// submission. A choice is read back from its position among the field's
// options; a position that is not one is left out, and Rounds' check then
// says what is missing.
func Values(qs []round.Question, state *goslack.ViewState) url.Values {
	values := url.Values{}
	for i, q := range qs {
		values.Set(round.ActionName(i), round.ActionAccept)
		if q.Form == nil || q.Form.Fallback {
			continue
		}
		if q.Form.HasDateTime() {
			values.Set(q.Form.TimeZoneName(), q.Form.TimeZone)
		}
		loc := formZone(q)
		for j := range q.Form.Fields {
			var got goslack.BlockAction
			if state != nil {
				got = state.Values[BlockID(i, j)][valueActionID]
			}
			fieldValues(values, &q.Form.Fields[j], got, loc)
		}
	}
	return values
}

// fieldValues adds one field's posted values.
func fieldValues(values url.Values, fd *forms.Field, got goslack.BlockAction, loc *time.Location) {
	switch fd.Kind {
	case forms.KindCheckbox:
		values.Set(fd.PresentName(), "1")
		for _, o := range got.SelectedOptions {
			if o.Value == checkedValue {
				values.Set(fd.InputName, "on")
			}
		}
	case forms.KindCheckboxes:
		values.Set(fd.PresentName(), "1")
		for _, o := range got.SelectedOptions {
			if v, ok := optionValue(fd, o.Value); ok {
				values.Add(fd.InputName, v)
			}
		}
	case forms.KindRadio, forms.KindSelect:
		if v, ok := optionValue(fd, got.SelectedOption.Value); ok {
			values.Set(fd.InputName, v)
		}
	case forms.KindDate:
		values.Set(fd.InputName, got.SelectedDate)
	case forms.KindDateTime:
		if got.SelectedDateTime != 0 {
			t := time.Unix(got.SelectedDateTime, 0).In(loc)
			values.Set(fd.InputName, t.Format("2006-01-02T15:04:05"))
		}
	default:
		values.Set(fd.InputName, got.Value)
	}
}

// optionValue is the value of the option at position s.
func optionValue(fd *forms.Field, s string) (string, bool) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= len(fd.Options) || strconv.Itoa(i) != s {
		return "", false
	}
	return fd.Options[i].Value, true
}

// FieldErrors are the errors round.FormAnswer left on the questions, keyed
// by block_id for a view_submission's response_action "errors". An error
// of a whole question or form goes on its first input; one that has no
// input to go on is returned in rest (say it some other way, e.g. an
// ephemeral message).
func FieldErrors(qs []round.Question) (byBlock map[string]string, rest []string) {
	byBlock = map[string]string{}
	for i, q := range qs {
		var general []string
		if q.Error != "" {
			general = append(general, q.Error)
		}
		if q.Form != nil {
			general = append(general, q.Form.Errors...)
			for j, fd := range q.Form.Fields {
				if fd.Error != "" {
					byBlock[BlockID(i, j)] = shorten(fd.Error, maxLabel)
				}
			}
		}
		if len(general) == 0 {
			continue
		}
		if q.Form == nil || len(q.Form.Fields) == 0 {
			rest = append(rest, general...)
			continue
		}
		first := BlockID(i, 0)
		msg := strings.Join(general, " ")
		if e := byBlock[first]; e != "" {
			msg += " " + e
		}
		byBlock[first] = shorten(msg, maxLabel)
	}
	return byBlock, rest
}

// ErrorsResponse is the reply to a view_submission that shows errors
// beside the fields and keeps the modal open.
func ErrorsResponse(byBlock map[string]string) *goslack.ViewSubmissionResponse {
	return goslack.NewErrorsViewSubmissionResponse(byBlock)
}

// Button is what a pressed Rounds button asks for.
type Button struct {
	Action string // the action_id, with a one-choice button's index cut off
	Choice int    // the option's position, for ActionChoosePrefix; -1 else
}

// ParseButton reads a pressed button's action_id; ok is false for one
// that is not Rounds'.
func ParseButton(actionID string) (b Button, ok bool) {
	if rest, has := strings.CutPrefix(actionID, ActionChoosePrefix); has {
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || strconv.Itoa(i) != rest {
			return Button{}, false
		}
		return Button{Action: ActionChoosePrefix, Choice: i}, true
	}
	switch actionID {
	case ActionAnswer, ActionOpen, ActionApprove, ActionYes, ActionNo, ActionDecline, ActionCancel:
		return Button{Action: actionID, Choice: -1}, true
	}
	return Button{}, false
}

// QuickValues is what a button that answers in place (Approve, Yes, No, an
// option, Decline, Cancel) posts for the round's questions, for
// round.FormAnswer. ok is false for a button that does not answer (Answer,
// Open in Rounds) or does not fit the round (a stale message).
func QuickValues(qs []round.Question, b Button) (values url.Values, ok bool) {
	values = url.Values{}
	switch b.Action {
	case ActionDecline, ActionCancel:
		action := round.ActionDecline
		if b.Action == ActionCancel {
			action = round.ActionCancel
		}
		for i := range qs {
			values.Set(round.ActionName(i), action)
		}
		return values, len(qs) > 0
	}
	fd, kind := quick(Ask{Questions: qs})
	values.Set(round.ActionName(0), round.ActionAccept)
	switch {
	case b.Action == ActionApprove && kind == quickApprove:
		return values, true
	case (b.Action == ActionYes || b.Action == ActionNo) && kind == quickYesNo:
		values.Set(fd.PresentName(), "1")
		if b.Action == ActionYes {
			values.Set(fd.InputName, "on")
		}
		return values, true
	case b.Action == ActionChoosePrefix && kind == quickChoice && b.Choice < len(fd.Options):
		values.Set(fd.InputName, fd.Options[b.Choice].Value)
		return values, true
	}
	return nil, false
}

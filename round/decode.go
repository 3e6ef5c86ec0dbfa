package round

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
)

// decodeAnswers turns a posted round form into inputResponses. It reports
// field errors on the questions' forms and returns ok=false when any.
func decodeAnswers(qs []Question, values url.Values) (json.RawMessage, []string, bool) {
	responses := map[string]any{}
	actions := make([]string, len(qs))
	ok := true
	for i := range qs {
		q := &qs[i]
		action := values.Get(ActionName(i))
		actions[i] = action
		switch q.Kind {
		case mcpclient.KindRoots:
			// Answered from the server's settings, never by the person.
			responses[q.Key] = q.Auto
			continue
		case mcpclient.KindSampling:
			q.Reply = postedReply(values, i)
			switch {
			case action == ActionDecline || action == ActionCancel:
				responses[q.Key] = map[string]any{"action": ActionDecline}
			case action != ActionAccept || q.Unsupported != "":
				ok = false
				q.Error = "Choose whether to send your reply or decline."
			case strings.TrimSpace(q.Reply) == "":
				ok = false
				q.ReplyError = replyRequired
			default:
				responses[q.Key] = samplingReply(q.Reply)
			}
			continue
		}
		switch {
		case action == ActionDecline || action == ActionCancel:
			responses[q.Key] = map[string]any{"action": action}
			if q.Form != nil {
				q.Form.Decode(values) // keep what was typed, should they change their mind
				clearErrors(q.Form)
			}
		case action != ActionAccept:
			ok = false
			q.Error = chooseMessage(q)
			if q.Form != nil {
				q.Form.Decode(values)
				clearErrors(q.Form)
			}
		case q.Unsupported != "":
			ok = false
			q.Error = chooseMessage(q)
		case q.Kind == mcpclient.KindURL:
			// Accepting a URL-mode question carries no content: what the
			// person did on the page never passes through here.
			responses[q.Key] = map[string]any{"action": ActionAccept}
		default:
			content, good := q.Form.Decode(values)
			if !good {
				ok = false
				continue
			}
			encoded, err := q.Form.Encode(content)
			if err != nil {
				ok = false
				q.Error = "Your answers could not be read."
				continue
			}
			responses[q.Key] = map[string]any{"action": ActionAccept, "content": encoded}
		}
	}
	if !ok {
		return nil, actions, false
	}
	raw, err := inOrder(qs, responses)
	if err != nil {
		return nil, actions, false
	}
	return raw, actions, true
}

// inOrder writes the responses as a JSON object in the order of the
// round's questions, which is the server's.
func inOrder(qs []Question, responses map[string]any) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, q := range qs {
		v, ok := responses[q.Key]
		if !ok {
			continue
		}
		key, err := mcpclient.MarshalRaw(q.Key)
		if err != nil {
			return nil, err
		}
		val, err := mcpclient.MarshalRaw(v)
		if err != nil {
			return nil, err
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// chooseMessage asks the person to pick one of the question's answers.
func chooseMessage(q *Question) string {
	switch {
	case q.Unsupported != "":
		return "Choose Decline or Cancel: this question cannot be answered here."
	case q.URL != "":
		return "Choose “I've finished”, Decline or Cancel."
	}
	return "Choose whether to send these answers, decline or cancel."
}

func clearErrors(f *forms.Form) {
	for i := range f.Fields {
		f.Fields[i].Error = ""
	}
	f.Errors = nil
}

// FromDraft fills the questions' forms with a saved draft and returns the
// choices it holds. A draft is what was typed, not what was sent, so it is
// not checked: no field shows an error.
func FromDraft(qs []Question, form url.Values) []string {
	actions := make([]string, len(qs))
	for i := range qs {
		q := &qs[i]
		actions[i] = form.Get(ActionName(i))
		if actions[i] == "" && q.Form != nil && q.Unsupported == "" {
			actions[i] = ActionAccept
		}
		if q.Form != nil && hasFieldsOf(form, q.Form.Prefix) {
			q.Form.Decode(form)
			clearErrors(q.Form)
		}
		if q.Sampling != nil {
			q.Reply = postedReply(form, i)
		}
	}
	return actions
}

// hasFieldsOf reports whether form holds any field of the question whose
// names start with prefix. A question whose fields were set aside (declined
// in the browser) posts none, and keeps its defaults.
func hasFieldsOf(form url.Values, prefix string) bool {
	for name := range form {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// Typed is what the person typed into question i of qs, posted as values,
// to show when it could not be sent, so that nothing they wrote is lost: a
// sampling request's reply, or a form's content, unless they declined or
// cancelled it. Both are empty when there is nothing to show.
func Typed(qs []Question, values url.Values, i int) (reply string, content json.RawMessage) {
	q := &qs[i]
	switch {
	case q.Sampling != nil:
		return postedReply(values, i), nil
	case q.Form != nil && values.Get(ActionName(i)) != ActionDecline && values.Get(ActionName(i)) != ActionCancel:
		if c, _ := q.Form.Decode(values); len(c) > 0 {
			if raw, err := mcpclient.MarshalRaw(c); err == nil {
				return "", raw
			}
		}
	}
	return "", nil
}

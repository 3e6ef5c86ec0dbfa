package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// Answer actions, as the spec names them.
const (
	actionAccept  = "accept"
	actionDecline = "decline"
	actionCancel  = "cancel"
)

// question is one input request of a stored round, ready to render or to
// check answers against.
type question struct {
	mcpclient.Question
	Message string
	Schema  json.RawMessage
	Form    *forms.Form
	// Unsupported says why this question cannot be answered here.
	Unsupported string
}

type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// questionsOf reads a round's questions and builds a form for each, with
// posted names prefixed by the question's position (q0., q1., …), never by
// the server's keys.
func questionsOf(r *store.Round) ([]question, error) {
	qs, err := mcpclient.ParseQuestions(r.InputRequests)
	if err != nil {
		return nil, err
	}
	out := make([]question, len(qs))
	for i, q := range qs {
		out[i] = question{Question: q}
		var p elicitParams
		if q.Params != nil {
			_ = json.Unmarshal(q.Params, &p)
		}
		out[i].Message = p.Message
		if q.Kind != mcpclient.KindForm {
			out[i].Unsupported = "This kind of question cannot be answered here. You can decline or cancel it."
			continue
		}
		out[i].Schema = p.RequestedSchema
		form, err := forms.New(p.RequestedSchema, fmt.Sprintf("q%d.", i))
		if err != nil {
			out[i].Unsupported = "The server sent a form that cannot be shown (" + err.Error() + "). You can decline or cancel it."
			continue
		}
		out[i].Form = form
	}
	return out, nil
}

func actionName(i int) string { return fmt.Sprintf("q%d$action", i) }
func actionID(i int) string   { return fmt.Sprintf("q%d-actions", i) }

// decodeAnswers turns a posted round form into inputResponses. It reports
// field errors on the questions' forms and returns ok=false when any.
func decodeAnswers(qs []question, values url.Values) (json.RawMessage, []string, bool) {
	responses := map[string]any{}
	actions := make([]string, len(qs))
	ok := true
	for i := range qs {
		q := &qs[i]
		action := values.Get(actionName(i))
		actions[i] = action
		switch {
		case action == actionDecline || action == actionCancel:
			responses[q.Key] = map[string]any{"action": action}
			if q.Form != nil {
				q.Form.Decode(values) // keep what was typed, should they change their mind
				clearErrors(q.Form)
			}
		case action != actionAccept:
			ok = false
			if q.Form != nil {
				q.Form.Decode(values)
				clearErrors(q.Form)
				q.Form.Errors = append(q.Form.Errors, "Choose whether to send, decline or cancel.")
			}
		case q.Unsupported != "":
			ok = false
		default:
			content, good := q.Form.Decode(values)
			if !good {
				ok = false
				continue
			}
			if content == nil {
				content = map[string]any{}
			}
			responses[q.Key] = map[string]any{"action": actionAccept, "content": content}
		}
	}
	if !ok {
		return nil, actions, false
	}
	raw, err := marshalNoEscape(responses)
	if err != nil {
		return nil, actions, false
	}
	return raw, actions, true
}

func clearErrors(f *forms.Form) {
	for i := range f.Fields {
		f.Fields[i].Error = ""
	}
	f.Errors = nil
}

// apiAnswer is one entry of an API inputResponses object.
type apiAnswer struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
}

// checkAPIAnswers checks an API inputResponses object against the round's
// questions with the same rules as the form. It returns field errors by
// question key ("" for the whole object).
func checkAPIAnswers(qs []question, raw json.RawMessage) map[string]map[string]string {
	errs := map[string]map[string]string{}
	add := func(key, field, msg string) {
		if errs[key] == nil {
			errs[key] = map[string]string{}
		}
		errs[key][field] = msg
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil || given == nil {
		add("", "", "inputResponses must be an object keyed by input request")
		return errs
	}
	known := map[string]bool{}
	for _, q := range qs {
		known[q.Key] = true
		answer, present := given[q.Key]
		if !present {
			add(q.Key, "", "Answer this question (accept, decline or cancel).")
			continue
		}
		var a apiAnswer
		if err := json.Unmarshal(answer, &a); err != nil {
			add(q.Key, "", "An answer must be an object with an action.")
			continue
		}
		switch a.Action {
		case actionDecline, actionCancel:
			continue
		case actionAccept:
		default:
			add(q.Key, "", `action must be "accept", "decline" or "cancel".`)
			continue
		}
		if q.Unsupported != "" {
			add(q.Key, "", q.Unsupported)
			continue
		}
		var content any = map[string]any{}
		if len(a.Content) > 0 {
			dec := json.NewDecoder(bytes.NewReader(a.Content))
			dec.UseNumber()
			if err := dec.Decode(&content); err != nil {
				add(q.Key, "", "content must be a JSON object.")
				continue
			}
		}
		if _, isObject := content.(map[string]any); !isObject {
			add(q.Key, "", "content must be a JSON object.")
			continue
		}
		fieldErrs, err := forms.Validate(q.Schema, content)
		if err != nil {
			add(q.Key, "", "The server's form cannot be checked: "+err.Error())
			continue
		}
		for field, msg := range fieldErrs {
			add(q.Key, field, msg)
		}
	}
	for key := range given {
		if !known[key] {
			add(key, "", "This round has no such question.")
		}
	}
	return errs
}

// questionVMs builds the questions' view models for the answer form.
func questionVMs(qs []question, server string, actions []string) []views.QuestionVM {
	out := make([]views.QuestionVM, len(qs))
	for i, q := range qs {
		action := actionAccept
		if actions != nil && actions[i] != "" {
			action = actions[i]
		}
		if q.Unsupported != "" && action == actionAccept {
			action = ""
		}
		out[i] = views.QuestionVM{
			Key: q.Key, Server: server, Message: q.Message, Kind: q.Kind,
			ActionName: actionName(i), ActionID: actionID(i), Action: action, Form: q.Form, Unsupported: q.Unsupported,
		}
	}
	return out
}

// errorLinks lists the forms' errors for the summary at the top.
func errorLinks(qs []question) []views.ErrorLink {
	var links []views.ErrorLink
	for i, q := range qs {
		if q.Form == nil {
			continue
		}
		for _, msg := range q.Form.Errors {
			href := "#" + actionID(i)
			if q.Form.Fallback {
				href = "#" + q.Form.JSONID()
			}
			links = append(links, views.ErrorLink{Href: href, Message: msg})
		}
		for _, f := range q.Form.Fields {
			if f.Error != "" {
				links = append(links, views.ErrorLink{Href: "#" + f.ID, Message: f.Label + ": " + f.Error})
			}
		}
	}
	return links
}

// answeredVMs describes a past round's answers, question by question.
func answeredVMs(r *store.Round, server string) []views.QuestionVM {
	qs, err := questionsOf(r)
	if err != nil {
		return []views.QuestionVM{{Message: "The questions of this round could not be read."}}
	}
	var given map[string]apiAnswer
	_ = json.Unmarshal(r.Responses, &given)
	out := make([]views.QuestionVM, len(qs))
	for i, q := range qs {
		vm := views.QuestionVM{Key: q.Key, Server: server, Message: q.Message, Kind: q.Kind}
		if vm.Message == "" {
			vm.Message = q.Key
		}
		a, ok := given[q.Key]
		switch {
		case r.Status != store.RoundAnswered:
			vm.Answer = "Not answered."
		case !ok:
			vm.Answer = "No answer."
		case a.Action == actionAccept:
			vm.Answer = "Sent:"
			vm.AnswerJSON = prettyJSON(a.Content)
		case a.Action == actionDecline:
			vm.Answer = "Declined."
		case a.Action == actionCancel:
			vm.Answer = "Cancelled."
		}
		out[i] = vm
	}
	return out
}

// questionSummaries is a short text per question, for the inbox.
func questionSummaries(raw json.RawMessage) []string {
	qs, err := questionsOf(&store.Round{InputRequests: raw})
	if err != nil {
		return []string{"(questions that cannot be read)"}
	}
	var out []string
	for _, q := range qs {
		if q.Message != "" {
			out = append(out, q.Message)
		} else {
			out = append(out, q.Key)
		}
	}
	sort.Strings(out)
	return out
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

func marshalNoEscape(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// fieldErrorText flattens API field errors into one sentence.
func fieldErrorText(errs map[string]map[string]string) string {
	var parts []string
	for key, fields := range errs {
		for field, msg := range fields {
			where := key
			if field != "" {
				where += "." + field
			}
			parts = append(parts, strings.TrimPrefix(where+": "+msg, ": "))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

package views

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// Answered describes a past round's answers, question by question, with
// date-times in the time zone named zone.
func Answered(r *store.Round, server, zone string) []QuestionVM {
	qs, err := round.Parse(r)
	if err != nil {
		return []QuestionVM{{Message: "The questions of this round could not be read."}}
	}
	round.InZone(qs, zone)
	var given map[string]round.Response
	_ = json.Unmarshal(r.Responses, &given)
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(r.Responses, &raw)
	unsent := round.NeverSent(r, qs)
	out := make([]QuestionVM, len(qs))
	for i, q := range qs {
		vm := QuestionVM{Key: q.Key, Server: server, Message: q.Message, Kind: q.Kind}
		if vm.Message == "" {
			vm.Message = q.Key
		}
		a, ok := given[q.Key]
		switch {
		case r.Status != store.RoundAnswered:
			vm.Answer = "Not answered."
		case !ok:
			vm.Answer = "No answer."
		case q.Kind == mcpclient.KindSampling:
			vm.Answer, vm.AnswerJSON = answeredSampling(raw[q.Key])
		case q.Kind == mcpclient.KindRoots:
			vm.Answer, vm.AnswerJSON = answeredRoots(raw[q.Key])
		case a.Action == round.ActionAccept && q.Kind == mcpclient.KindURL:
			vm.Answer = "Finished on the page."
		case a.Action == round.ActionAccept && unsent:
			vm.Answer = "Given, but not sent, as the sampling request was declined:"
			vm.AnswerJSON = prettyJSON(a.Content)
		case a.Action == round.ActionAccept:
			vm.Answer = "Sent:"
			if vm.AnswerLines = answerLines(q.Form, a.Content); vm.AnswerLines == nil {
				vm.AnswerJSON = prettyJSON(a.Content)
			}
		case a.Action == round.ActionDecline:
			vm.Answer = "Declined."
		case a.Action == round.ActionCancel:
			vm.Answer = "Cancelled."
		}
		out[i] = vm
	}
	return out
}

// AdminQuestions lists a round's questions with the answers given, if any,
// for admins, by key. The request state is not read.
func AdminQuestions(r *store.Round) []AdminQuestionVM {
	qs, _ := mcpclient.ParseQuestions(r.InputRequests)
	var answers map[string]round.Response
	var raw map[string]json.RawMessage
	if r.Responses != nil {
		_ = json.Unmarshal(r.Responses, &answers)
		_ = json.Unmarshal(r.Responses, &raw)
	}
	out := make([]AdminQuestionVM, 0, len(qs))
	for _, q := range qs {
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(q.Params, &p)
		if p.Message == "" {
			p.Message = round.KindSummary(q)
		}
		qv := AdminQuestionVM{Key: q.Key, Kind: q.Kind, Message: p.Message}
		if a, ok := answers[q.Key]; ok {
			qv.Action = a.Action
			var pretty bytes.Buffer
			if len(a.Content) > 0 && json.Indent(&pretty, a.Content, "", "  ") == nil {
				qv.Content = pretty.String()
			}
			if q.Kind == mcpclient.KindRoots {
				// A roots answer has no content: it is the roots.
				qv.Content = prettyJSON(raw[q.Key])
			}
		}
		out = append(out, qv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// answerLines words an accepted form answer for people, field by field in
// the form's order: the field's label and the value, with the titles of the
// choices picked and date-times in the form's time zone. It returns nil
// when the answer cannot be told that way (a JSON box, unreadable content),
// for the caller to show the JSON instead.
func answerLines(f *forms.Form, content json.RawMessage) []AnswerLine {
	if f == nil || f.Fallback || len(content) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(content))
	dec.UseNumber()
	var given map[string]any
	if err := dec.Decode(&given); err != nil || given == nil {
		return nil
	}
	f.Fill(given)
	var lines []AnswerLine
	known := map[string]bool{}
	for _, fd := range f.Fields {
		known[fd.Name] = true
		if _, ok := given[fd.Name]; !ok {
			continue
		}
		lines = append(lines, AnswerLine{Label: fd.Label, Value: fieldValue(f, fd)})
	}
	// What the form does not know (an answer given through the API) is
	// still shown, as JSON.
	var extra []string
	for name := range given {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		b, _ := json.Marshal(given[name])
		lines = append(lines, AnswerLine{Label: name, Value: string(b)})
	}
	return lines
}

// fieldValue is a filled field's value as a person reads it.
func fieldValue(f *forms.Form, fd forms.Field) string {
	switch fd.Kind {
	case forms.KindCheckbox:
		if fd.Checked {
			return "Yes"
		}
		return "No"
	case forms.KindRadio, forms.KindSelect:
		return optionLabel(fd.Options, fd.Value)
	case forms.KindCheckboxes:
		if len(fd.Values) == 0 {
			return "None"
		}
		labels := make([]string, len(fd.Values))
		for i, v := range fd.Values {
			labels[i] = optionLabel(fd.Options, v)
		}
		return strings.Join(labels, ", ")
	case forms.KindDateTime:
		return strings.Replace(fd.Value, "T", " ", 1) + " (" + f.TimeZone + ")"
	}
	return fd.Value
}

func optionLabel(opts []forms.Option, v string) string {
	for _, o := range opts {
		if o.Value == v {
			return o.Label
		}
	}
	return v
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

package handlers

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/views"
)

// answerLines words an accepted form answer for people, field by field in
// the form's order: the field's label and the value, with the titles of the
// choices picked and date-times in the form's time zone. It returns nil
// when the answer cannot be told that way (a JSON box, unreadable content),
// for the caller to show the JSON instead.
func answerLines(f *forms.Form, content json.RawMessage) []views.AnswerLine {
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
	var lines []views.AnswerLine
	known := map[string]bool{}
	for _, fd := range f.Fields {
		known[fd.Name] = true
		if _, ok := given[fd.Name]; !ok {
			continue
		}
		lines = append(lines, views.AnswerLine{Label: fd.Label, Value: fieldValue(f, fd)})
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
		lines = append(lines, views.AnswerLine{Label: name, Value: string(b)})
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

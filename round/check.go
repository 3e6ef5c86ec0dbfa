package round

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
)

// FieldErrors are what does not fit in an API answer, by question key and
// field ("" for the whole question, or the whole object).
type FieldErrors map[string]map[string]string

// Response is one entry of an inputResponses object: the action, and an
// accepted form's content.
type Response struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
}

// checkAPIAnswers checks an API inputResponses object against the round's
// questions with the same rules as the form. It returns field errors by
// question key ("" for the whole object).
func checkAPIAnswers(qs []Question, raw json.RawMessage) FieldErrors {
	errs := FieldErrors{}
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
		if q.Kind == mcpclient.KindRoots {
			if present {
				add(q.Key, "", rootsGiven)
			}
			continue
		}
		if !present {
			add(q.Key, "", "Answer this question (accept, decline or cancel).")
			continue
		}
		if q.Kind == mcpclient.KindSampling {
			for field, msg := range checkSamplingAnswer(answer) {
				add(q.Key, field, msg)
			}
			continue
		}
		var a Response
		if err := json.Unmarshal(answer, &a); err != nil {
			add(q.Key, "", "An answer must be an object with an action.")
			continue
		}
		switch a.Action {
		case ActionDecline, ActionCancel:
			continue
		case ActionAccept:
		default:
			add(q.Key, "", `action must be "accept", "decline" or "cancel".`)
			continue
		}
		if q.Unsupported != "" {
			add(q.Key, "", q.Unsupported)
			continue
		}
		if q.Kind == mcpclient.KindURL {
			if len(a.Content) > 0 && string(a.Content) != "null" {
				add(q.Key, "", `A URL-mode question is accepted without content: send {"action": "accept"}.`)
			}
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

// String flattens the errors into one sentence.
func (errs FieldErrors) String() string {
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

// checkSamplingAnswer checks an API answer to a sampling question: a
// CreateMessageResult from the assistant with a reply that is not blank, or
// {"action": "decline"} (or "cancel"), which ends the call. It returns field
// errors.
func checkSamplingAnswer(raw json.RawMessage) map[string]string {
	var a struct {
		Action  *string         `json:"action"`
		Role    string          `json:"role"`
		Model   *string         `json:"model"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return map[string]string{"": "An answer to a sampling request must be a CreateMessageResult object."}
	}
	if a.Action != nil {
		if *a.Action == ActionDecline || *a.Action == ActionCancel {
			return nil
		}
		return map[string]string{"": `To refuse a sampling request send {"action": "decline"}; to answer it, a CreateMessageResult.`}
	}
	errs := map[string]string{}
	if a.Role != "assistant" {
		errs["role"] = `role must be "assistant".`
	}
	if a.Model == nil || strings.TrimSpace(*a.Model) == "" {
		errs["model"] = "model must name who wrote the reply, such as \"human\"."
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(a.Content, &blocks); err != nil {
		blocks = blocks[:0]
		var one struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(a.Content, &one); err != nil || len(a.Content) == 0 || string(a.Content) == "null" {
			errs["content"] = "content must be a content block, or a list of them."
			return errs
		}
		blocks = append(blocks, one)
	}
	if len(blocks) == 0 {
		errs["content"] = "The reply is empty."
	}
	for _, b := range blocks {
		switch {
		case b.Type == "":
			errs["content"] = "Every content block needs a type."
		case b.Type == "text" && (b.Text == nil || strings.TrimSpace(*b.Text) == ""):
			errs["content"] = "The reply is empty: " + replyRequired
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// addRootsAnswers adds the roots answers to an API inputResponses object,
// which leaves them out.
func addRootsAnswers(qs []Question, raw json.RawMessage) (json.RawMessage, error) {
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil {
		return nil, err
	}
	added := false
	for _, q := range qs {
		if q.Kind == mcpclient.KindRoots {
			given[q.Key] = q.Auto
			added = true
		}
	}
	if !added {
		return raw, nil
	}
	return mcpclient.MarshalRaw(given)
}

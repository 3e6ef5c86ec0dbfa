package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// A sampling request is answered by a person, who writes the reply a model
// would give. A declined one is not answered at all: the spec has no
// refusal to send back ("the client does not need to replay the initial
// call"), so the call ends there and the server is not asked again.

// Messages for sampling and roots questions.
const (
	replyRequired   = "Write the reply, or choose Decline."
	refusedSampling = "You declined the server's sampling request, so the request was not sent again: " +
		"a declined sampling request ends the call."
	rootsGiven = "Roots are answered from this server's settings; leave this answer out."
)

// replyName is the posted name of a sampling question's reply.
func replyName(i int) string { return fmt.Sprintf("q%d.reply", i) }
func replyID(i int) string   { return fmt.Sprintf("q%d-reply", i) }

// samplingParams is a sampling/createMessage request's params, read loosely:
// a field of an unexpected shape is shown as the server sent it.
type samplingParams struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	SystemPrompt     string          `json:"systemPrompt"`
	MaxTokens        json.Number     `json:"maxTokens"`
	Temperature      *json.Number    `json:"temperature"`
	StopSequences    []string        `json:"stopSequences"`
	IncludeContext   string          `json:"includeContext"`
	Metadata         json.RawMessage `json:"metadata"`
	ModelPreferences *struct {
		Hints []struct {
			Name string `json:"name"`
		} `json:"hints"`
		CostPriority         *json.Number `json:"costPriority"`
		SpeedPriority        *json.Number `json:"speedPriority"`
		IntelligencePriority *json.Number `json:"intelligencePriority"`
	} `json:"modelPreferences"`
	Tools []struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
	ToolChoice *struct {
		Mode string `json:"mode"`
	} `json:"toolChoice"`
}

// samplingVM reads a sampling request for the person to answer, and a
// one-line summary of it for lists. ok is false when it cannot be read.
func samplingVM(params json.RawMessage) (*views.SamplingVM, string, bool) {
	var p samplingParams
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if params == nil || dec.Decode(&p) != nil {
		return nil, "", false
	}
	vm := &views.SamplingVM{SystemPrompt: p.SystemPrompt, MaxTokens: p.MaxTokens.String(),
		StopSequences: p.StopSequences, IncludeContext: p.IncludeContext}
	if p.Temperature != nil {
		vm.Temperature = p.Temperature.String()
	}
	if len(p.Metadata) > 0 && string(p.Metadata) != "null" {
		vm.Metadata = prettyJSON(p.Metadata)
	}
	if mp := p.ModelPreferences; mp != nil {
		for _, h := range mp.Hints {
			if h.Name != "" {
				vm.Hints = append(vm.Hints, h.Name)
			}
		}
		for _, pr := range []struct {
			label string
			v     *json.Number
		}{{"Cost priority", mp.CostPriority}, {"Speed priority", mp.SpeedPriority}, {"Intelligence priority", mp.IntelligencePriority}} {
			if pr.v != nil {
				vm.Priorities = append(vm.Priorities, views.PriorityVM{Label: pr.label, Value: pr.v.String() + " (0 to 1)"})
			}
		}
	}
	for _, t := range p.Tools {
		tool := views.SamplingToolVM{Name: t.Name, Description: t.Description}
		if t.Title != "" && t.Title != t.Name {
			tool.Description = strings.TrimSpace(t.Title + ". " + t.Description)
		}
		if len(t.InputSchema) > 0 {
			tool.Schema = prettyJSON(t.InputSchema)
		}
		vm.Tools = append(vm.Tools, tool)
	}
	if p.ToolChoice != nil && p.ToolChoice.Mode != "" {
		vm.ToolChoice = map[string]string{
			"auto":     "the model may use the tools",
			"required": "the model must use a tool",
			"none":     "the model must not use the tools",
		}[p.ToolChoice.Mode]
		if vm.ToolChoice == "" {
			vm.ToolChoice = p.ToolChoice.Mode
		}
	}
	last := ""
	for _, m := range p.Messages {
		msg := messageVM(m.Role, m.Content)
		for _, b := range msg.Blocks {
			if b.Type == "text" && m.Role == "user" {
				last = b.Text
			}
		}
		vm.Messages = append(vm.Messages, msg)
	}
	summary := "Write the model's reply (sampling)"
	if last != "" {
		if r := []rune(strings.Join(strings.Fields(last), " ")); len(r) > 80 {
			last = string(r[:79]) + "…"
		}
		summary = "Write the model's reply to “" + last + "”"
	}
	return vm, summary, true
}

// messageVM reads one message of a conversation, whose content is one
// block or a list of them.
func messageVM(role string, content json.RawMessage) views.MessageVM {
	m := views.MessageVM{Role: role}
	var blocks []wireContent
	if err := json.Unmarshal(content, &blocks); err != nil {
		var one wireContent
		if err := json.Unmarshal(content, &one); err != nil {
			return views.MessageVM{Role: role, Blocks: []views.ContentVM{{Type: "raw", Text: string(content)}}}
		}
		blocks = []wireContent{one}
	}
	for i, b := range blocks {
		if !knownContent[b.Type] {
			// Tool uses and results, and anything newer, as sent.
			var raw []json.RawMessage
			_ = json.Unmarshal(content, &raw)
			text := string(content)
			if i < len(raw) {
				text = prettyJSON(raw[i])
			}
			m.Blocks = append(m.Blocks, views.ContentVM{Type: b.Type, Text: text})
			continue
		}
		m.Blocks = append(m.Blocks, contentVM(b))
	}
	return m
}

var knownContent = map[string]bool{"text": true, "image": true, "audio": true, "resource": true, "resource_link": true}

// samplingReply is the CreateMessageResult a person's reply is sent as.
func samplingReply(text string) map[string]any {
	return map[string]any{
		"role":       "assistant",
		"content":    map[string]any{"type": "text", "text": text},
		"model":      "human",
		"stopReason": "endTurn",
	}
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
		if *a.Action == actionDecline || *a.Action == actionCancel {
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

// refused reports whether the person declined a sampling question of the
// round, in the inputResponses about to be stored.
func refused(qs []question, responses json.RawMessage) bool {
	var given map[string]struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(responses, &given)
	for _, q := range qs {
		if q.Kind == mcpclient.KindSampling && given[q.Key].Action != "" {
			return true
		}
	}
	return false
}

// withRoots gives a round's roots/list questions the answer from the call's
// server settings, to show and to send.
func withRoots(qs []question, call *store.Call) {
	for i := range qs {
		if qs[i].Kind != mcpclient.KindRoots {
			continue
		}
		qs[i].Roots = nil
		for _, r := range store.ParseRoots(call.ServerRootsList) {
			qs[i].Roots = append(qs[i].Roots, views.RootVM{URI: r.URI, Name: r.Name})
		}
		qs[i].Auto = store.RootsResult(call.ServerRootsList)
	}
}

// addRootsAnswers adds the roots answers to an API inputResponses object,
// which leaves them out.
func addRootsAnswers(qs []question, raw json.RawMessage) (json.RawMessage, error) {
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

// answeredSampling describes the answer given to a sampling question.
func answeredSampling(raw json.RawMessage) (string, string) {
	var a struct {
		Action  string          `json:"action"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return "No answer.", ""
	}
	if a.Action != "" {
		return "Declined.", ""
	}
	var texts []string
	for _, b := range messageVM("assistant", a.Content).Blocks {
		texts = append(texts, b.Text)
	}
	return "Replied as the model (" + strconv.Quote(a.Model) + "):", strings.Join(texts, "\n")
}

// answeredRoots describes the roots a roots/list question was answered with.
func answeredRoots(raw json.RawMessage) (string, string) {
	var r struct {
		Roots []store.Root `json:"roots"`
	}
	_ = json.Unmarshal(raw, &r)
	if len(r.Roots) == 0 {
		return "Answered automatically: no roots.", ""
	}
	var lines []string
	for _, root := range r.Roots {
		line := root.URI
		if root.Name != "" {
			line = root.Name + ": " + root.URI
		}
		lines = append(lines, line)
	}
	return fmt.Sprintf("Answered automatically with %d %s:", len(r.Roots), plural(len(r.Roots), "root")), strings.Join(lines, "\n")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// kindSummary names a question that has no message of its own, for lists.
func kindSummary(q mcpclient.Question) string {
	switch q.Kind {
	case mcpclient.KindSampling:
		if _, summary, ok := samplingVM(q.Params); ok {
			return summary
		}
		return "Write the model's reply (sampling)"
	case mcpclient.KindRoots:
		return "Which folders the server may look at (roots): answered automatically"
	}
	return ""
}

// postedReply reads a sampling question's posted reply.
func postedReply(values url.Values, i int) string {
	return values.Get(replyName(i))
}

package views

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// samplingOf shows a sampling request for the person to answer; nil for
// none.
func samplingOf(p *round.Sampling) *SamplingVM {
	if p == nil {
		return nil
	}
	vm := &SamplingVM{SystemPrompt: p.SystemPrompt, MaxTokens: p.MaxTokens.String(),
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
				vm.Priorities = append(vm.Priorities, PriorityVM{Label: pr.label, Value: pr.v.String() + " (0 to 1)"})
			}
		}
	}
	for _, t := range p.Tools {
		tool := SamplingToolVM{Name: t.Name, Description: t.Description}
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
	for _, m := range p.Messages {
		vm.Messages = append(vm.Messages, messageVM(m.Role, m.Content))
	}
	return vm
}

// messageVM reads one message of a conversation, whose content is one
// block or a list of them.
func messageVM(role string, content json.RawMessage) MessageVM {
	m := MessageVM{Role: role}
	blocks, ok := round.Blocks(content)
	if !ok {
		return MessageVM{Role: role, Blocks: []ContentVM{{Type: "raw", Text: string(content)}}}
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
			m.Blocks = append(m.Blocks, ContentVM{Type: b.Type, Text: text})
			continue
		}
		m.Blocks = append(m.Blocks, contentVM(b))
	}
	return m
}

var knownContent = map[string]bool{"text": true, "image": true, "audio": true, "resource": true, "resource_link": true}

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
	return fmt.Sprintf("Answered automatically with %d %s:", len(r.Roots), plural(len(r.Roots), "root", "roots")), strings.Join(lines, "\n")
}

package demo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tool is a demo tool: rounds of questions, then a result.
type tool struct {
	def    *mcp.Tool
	input  *form // the tool's inputSchema, also used to check arguments
	rounds []func(c *call) []question
	finish func(c *call) *mcp.CallToolResult
	// run, when set, is the whole tool: long work that asks nothing.
	run mcp.ToolHandler
}

// question is one input request; key is its key in inputRequests. It is an
// elicitation (a form, or a URL when form is nil) unless sampling or roots
// is set.
type question struct {
	key     string
	message string
	form    *form  // form mode
	url     string // URL mode, when form is nil
	// check, if set, holds the tool's own expectations beyond the schema.
	check func(answer map[string]any) string
	// sampling asks the client for a model's reply; roots for its roots.
	sampling *mcp.CreateMessageParams
	roots    bool
}

// call is one tool call as the tool sees it.
type call struct {
	args    map[string]any
	answers map[string]map[string]any // by question key
	// action is "accept" once every question is answered, or "decline" or
	// "cancel" if the user stopped.
	action string
}

// handler runs a tool's rounds. It keeps nothing between requests: whatever
// a retry needs comes back in the signed requestState.
func (d *demo) handler(t *tool) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var raw map[string]any
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &raw); err != nil {
				return nil, invalidParams("arguments must be a JSON object")
			}
		}
		args, problem := t.input.check(raw)
		if problem != "" {
			return failed("Invalid arguments: " + problem), nil
		}
		c, asks, err := d.play(t.def.Name, t.rounds, args, req.Params.RequestState, req.Params.InputResponses, req.ClientCapabilities())
		if err != nil {
			return nil, err
		}
		if asks != nil {
			return &mcp.CallToolResult{InputRequests: asks.requests, RequestState: asks.state}, nil
		}
		return t.finish(c), nil
	}
}

// asking is an input_required answer: the questions and the sealed state.
type asking struct {
	requests mcp.InputRequestMap
	state    string
}

// play runs the rounds of a tool, prompt or resource (named id in the
// state) for one request: it returns the next questions to ask, or the
// call once every round is answered or the user stopped.
func (d *demo) play(id string, rounds []func(*call) []question, args map[string]any, state string,
	responses mcp.InputResponseMap, caps *mcp.ClientCapabilities) (*call, *asking, error) {
	sum, err := digest(args)
	if err != nil {
		return nil, nil, err
	}
	p := progress{Tool: id, Args: sum}
	// Responses without a requestState answer nothing we asked: ignore them.
	retry := state != ""
	if retry {
		if p, err = d.open(state, id, sum); err != nil {
			return nil, nil, stateRefused("invalid requestState: " + err.Error())
		}
		if p.Round < 0 || p.Round >= len(rounds) {
			return nil, nil, stateRefused("invalid requestState: no such round")
		}
	}
	if p.Answers == nil {
		p.Answers = map[string]map[string]any{}
	}
	c := &call{args: args, answers: p.Answers, action: "accept"}
	for ; p.Round < len(rounds); p.Round++ {
		qs := rounds[p.Round](c)
		if !retry {
			a, err := d.ask(caps, p, qs, nil)
			return nil, a, err
		}
		retry = false
		again, err := collect(c, qs, responses)
		if err != nil {
			return nil, nil, err
		}
		if c.action != "accept" {
			return c, nil, nil
		}
		if len(again) > 0 {
			a, err := d.ask(caps, p, qs, again)
			return nil, a, err
		}
	}
	return c, nil, nil
}

// collect records the answers to this round's questions in c. It returns the
// questions to ask again (missing or unacceptable answers), each with what was
// wrong, and stops c if the user declined or cancelled.
func collect(c *call, qs []question, responses mcp.InputResponseMap) (map[string]string, error) {
	again := map[string]string{}
	for _, q := range qs {
		if _, done := c.answers[q.key]; done {
			continue
		}
		resp, ok := responses[q.key]
		if !ok || resp == nil {
			again[q.key] = ""
			continue
		}
		if q.sampling != nil || q.roots {
			answer, problem, err := q.received(resp)
			if err != nil {
				return nil, err
			}
			if problem != "" {
				again[q.key] = problem
				continue
			}
			c.answers[q.key] = answer
			continue
		}
		er, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return nil, invalidParams(fmt.Sprintf("inputResponses[%q] is not an elicitation result", q.key))
		}
		switch er.Action {
		case "accept":
			answer, problem := q.accept(er.Content)
			if problem != "" {
				again[q.key] = problem
				continue
			}
			c.answers[q.key] = answer
		case "decline":
			if c.action != "cancel" {
				c.action = "decline"
			}
		case "cancel":
			c.action = "cancel"
		default:
			return nil, invalidParams(fmt.Sprintf("inputResponses[%q] has unknown action %q", q.key, er.Action))
		}
	}
	return again, nil
}

// accept checks an accepted answer against the question's schema and the
// tool's own expectations.
func (q question) accept(content map[string]any) (map[string]any, string) {
	if q.form == nil {
		return map[string]any{}, "" // URL mode: accepting is the whole answer
	}
	answer, problem := q.form.check(content)
	if problem == "" && q.check != nil {
		problem = q.check(answer)
	}
	return answer, problem
}

// received reads the answer to a sampling or roots question: the reply's
// text and model, or the roots' URIs and names.
func (q question) received(resp mcp.InputResponse) (map[string]any, string, error) {
	if q.roots {
		r, ok := resp.(*mcp.ListRootsResult)
		if !ok {
			return nil, "", invalidParams(fmt.Sprintf("inputResponses[%q] is not a roots list", q.key))
		}
		var roots []any
		for _, root := range r.Roots {
			if root != nil {
				roots = append(roots, map[string]any{"uri": root.URI, "name": root.Name})
			}
		}
		return map[string]any{"roots": roots}, "", nil
	}
	var model string
	var content []mcp.Content
	switch r := resp.(type) {
	case *mcp.CreateMessageWithToolsResult:
		model, content = r.Model, r.Content
	case *mcp.CreateMessageResult:
		model, content = r.Model, []mcp.Content{r.Content}
	default:
		return nil, "", invalidParams(fmt.Sprintf("inputResponses[%q] is not a sampling result", q.key))
	}
	var text []string
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok && strings.TrimSpace(tc.Text) != "" {
			text = append(text, tc.Text)
		}
	}
	if len(text) == 0 {
		return nil, "the reply had no text", nil
	}
	return map[string]any{"text": strings.Join(text, "\n"), "model": model}, "", nil
}

// ask returns an input_required answer for the round's unanswered questions.
// With again set, it asks only those, saying what was wrong.
func (d *demo) ask(caps *mcp.ClientCapabilities, p progress, qs []question, again map[string]string) (*asking, error) {
	asks := mcp.InputRequestMap{}
	for _, q := range qs {
		problem, asking := again[q.key]
		if _, done := p.Answers[q.key]; done || (again != nil && !asking) {
			continue
		}
		msg := q.message
		if problem != "" {
			msg = "Please try again: " + problem + ". " + msg
		}
		switch {
		case q.sampling != nil:
			if caps == nil || caps.Sampling == nil {
				return nil, missing("sampling", "sampling")
			}
			asks[q.key] = q.sampling
			continue
		case q.roots:
			if caps == nil || caps.RootsV2 == nil && !caps.Roots.ListChanged {
				return nil, missing("roots", "roots")
			}
			asks[q.key] = &mcp.ListRootsParams{}
			continue
		}
		if q.form == nil {
			if err := needElicitation(caps, "url"); err != nil {
				return nil, err
			}
			asks[q.key] = &mcp.ElicitParams{Mode: "url", Message: msg, URL: q.url, ElicitationID: randomID()}
			continue
		}
		if err := needElicitation(caps, "form"); err != nil {
			return nil, err
		}
		asks[q.key] = &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: q.form.raw}
	}
	state, err := d.seal(p)
	if err != nil {
		return nil, err
	}
	return &asking{requests: asks, state: state}, nil
}

// missing refuses to ask for sampling or roots of a client that has not
// declared them, as the spec requires.
func missing(capability, what string) error {
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("this asks for %s: the client must declare the %s capability", what, capability),
		Data:    json.RawMessage(fmt.Sprintf(`{"requiredCapabilities":{%q:{}}}`, capability)),
	}
}

// needElicitation refuses to send an elicitation mode the client has not
// declared, as the spec requires. An empty elicitation capability means form.
func needElicitation(caps *mcp.ClientCapabilities, mode string) error {
	if caps != nil && caps.Elicitation != nil {
		e := caps.Elicitation
		if mode == "url" && e.URL != nil || mode == "form" && (e.Form != nil || e.URL == nil) {
			return nil
		}
	}
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("this tool asks questions: the client must declare the elicitation capability with %s mode", mode),
		Data:    json.RawMessage(fmt.Sprintf(`{"requiredCapabilities":{"elicitation":{%q:{}}}}`, mode)),
	}
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// stateRefused refuses a requestState this server cannot open, with the
// reason mcp 2.0 gives, so a client knows to ask afresh.
func stateRefused(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg, Data: json.RawMessage(`{"reason":"invalid_request_state"}`)}
}

// text is a finished call's result.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// failed is a tool error the caller can read and correct.
func failed(s string) *mcp.CallToolResult {
	r := text(s)
	r.IsError = true
	return r
}

// randomID returns 128 random bits as hex.
func randomID() string {
	b := make([]byte, 16)
	rand.Read(b) // never returns an error
	return fmt.Sprintf("%x", b)
}

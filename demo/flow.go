package demo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tool is a demo tool: rounds of questions, then a result.
type tool struct {
	def    *mcp.Tool
	input  *form // the tool's inputSchema, also used to check arguments
	rounds []func(c *call) []question
	finish func(c *call) *mcp.CallToolResult
}

// question is one elicitation request; key is its key in inputRequests.
type question struct {
	key     string
	message string
	form    *form  // form mode
	url     string // URL mode, when form is nil
	// check, if set, holds the tool's own expectations beyond the schema.
	check func(answer map[string]any) string
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
		sum, err := digest(args)
		if err != nil {
			return nil, err
		}
		p := progress{Tool: t.def.Name, Args: sum}
		// Responses without a requestState answer nothing we asked: ignore them.
		retry := req.Params.RequestState != ""
		if retry {
			if p, err = d.open(req.Params.RequestState, t.def.Name, sum); err != nil {
				return nil, invalidParams("invalid requestState: " + err.Error())
			}
			if p.Round < 0 || p.Round >= len(t.rounds) {
				return nil, invalidParams("invalid requestState: no such round")
			}
		}
		if p.Answers == nil {
			p.Answers = map[string]map[string]any{}
		}
		c := &call{args: args, answers: p.Answers, action: "accept"}
		for ; p.Round < len(t.rounds); p.Round++ {
			qs := t.rounds[p.Round](c)
			if !retry {
				return d.ask(req, p, qs, nil)
			}
			retry = false
			again, err := collect(c, qs, req.Params.InputResponses)
			if err != nil {
				return nil, err
			}
			if c.action != "accept" {
				return t.finish(c), nil
			}
			if len(again) > 0 {
				return d.ask(req, p, qs, again)
			}
		}
		return t.finish(c), nil
	}
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

// ask returns an input_required result for the round's unanswered questions.
// With again set, it asks only those, saying what was wrong.
func (d *demo) ask(req *mcp.CallToolRequest, p progress, qs []question, again map[string]string) (*mcp.CallToolResult, error) {
	caps := req.ClientCapabilities()
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
	return &mcp.CallToolResult{InputRequests: asks, RequestState: state}, nil
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

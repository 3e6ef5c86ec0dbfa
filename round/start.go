package round

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// Start is a call someone asks to start, from a page or through the API:
// on which server, what (a tool, a prompt or a resource), with which
// arguments and over which protocol.
type Start struct {
	Server string
	// Method is tools/call (for ""), prompts/get or resources/read.
	Method string
	// Target is the tool's or the prompt's name, or the resource's URI;
	// Title is what the server titled it, when the caller knows.
	Target, Title string
	// Arguments are a JSON object; none, or null, are {}.
	Arguments json.RawMessage
	// Protocol is the revision to start with; "" or "auto" take the
	// server's setting.
	Protocol string
}

// Found is what was looked up on the server to start a call: the tool or
// the prompt, whose input schema or arguments check the call's. Without
// them the arguments go unchecked here: a form built from them checked
// them, or the server asks the caller to connect before it lists its tools,
// and checks them itself.
type Found struct {
	Tool   *mcp.Tool
	Prompt *mcp.Prompt
}

// StartError says why a call cannot be started as asked: a sentence for
// the caller and, for arguments that do not fit, which, by name.
type StartError struct {
	Message string
	Fields  map[string]string
	// Unreadable says the arguments are not JSON at all.
	Unreadable bool
}

func (e *StartError) Error() string { return e.Message }

// unfit is a start that does not fit, for msg.
func unfit(msg string) error { return &StartError{Message: msg} }

// TargetField names a method's target as the API's request does: "tool",
// "prompt" or "uri".
func TargetField(method string) string {
	return map[string]string{mcpclient.MethodCallTool: "tool", mcpclient.MethodGetPrompt: "prompt", mcpclient.MethodReadResource: "uri"}[method]
}

// Check checks what s names, before anything is looked up: the method
// (tools/call when none is given), the server and the target, and the
// protocol.
func (s *Start) Check() error {
	if s.Method == "" {
		s.Method = mcpclient.MethodCallTool
	}
	if TargetField(s.Method) == "" {
		return unfit(`"method" must be "tools/call", "prompts/get" or "resources/read".`)
	}
	if s.Server == "" || s.Target == "" {
		return unfit(`"server" and "` + TargetField(s.Method) + `" are required.`)
	}
	if !KnownProtocol(s.Protocol) {
		return unfit(`"protocol" must be ` + ProtocolChoices() + ".")
	}
	return nil
}

// CheckArguments checks that s's arguments are a JSON object, and makes
// none, or null, {}.
func (s *Start) CheckArguments() error {
	_, err := s.arguments()
	return err
}

// arguments reads s's arguments (see CheckArguments).
func (s *Start) arguments() (map[string]any, error) {
	if len(s.Arguments) == 0 || string(s.Arguments) == "null" {
		s.Arguments = json.RawMessage(`{}`)
	}
	var args any
	if err := json.Unmarshal(s.Arguments, &args); err != nil {
		return nil, &StartError{Message: `"arguments" must be a JSON object.`, Unreadable: true}
	}
	m, ok := args.(map[string]any)
	if !ok {
		return nil, unfit(`"arguments" must be a JSON object.`)
	}
	return m, nil
}

// NewCall is what store.CreateCall needs to start s on srv, checked
// against what was found there: the arguments, without those given as null
// that a tool takes as not given (SEP-2243), checked against the tool's
// input schema or the prompt's arguments; a resource's URI; the target and
// title as the server names them; the protocol, "" for the server's
// setting. Who starts the call, who answers it and where its events go are
// the caller's to add. A start that does not fit is a *StartError.
func NewCall(srv *store.Server, s Start, found Found) (store.NewCall, error) {
	if s.Method == "" {
		s.Method = mcpclient.MethodCallTool
	}
	args, err := s.arguments()
	if err != nil {
		return store.NewCall{}, err
	}
	var fieldErrs map[string]string
	switch s.Method {
	case mcpclient.MethodCallTool:
		if tool := found.Tool; tool != nil {
			// An optional argument given as null is taken as not given:
			// the call goes without it, and without its Mcp-Param-* header.
			var checked any
			checked, s.Arguments = withoutNulls(tool, args, s.Arguments)
			if fieldErrs = toolArgumentErrors(tool, checked); len(fieldErrs) > 0 {
				return store.NewCall{}, &StartError{Message: "The arguments do not fit the tool's input schema.", Fields: fieldErrs}
			}
			s.Target, s.Title = tool.Name, ToolTitle(tool)
		}
	case mcpclient.MethodGetPrompt:
		if p := found.Prompt; p != nil {
			s.Title = p.Title
			if fieldErrs = checkPromptArguments(p.Arguments, args); len(fieldErrs) > 0 {
				return store.NewCall{}, &StartError{Message: "The arguments do not fit the prompt's arguments.", Fields: fieldErrs}
			}
		}
	case mcpclient.MethodReadResource:
		if err := checkURI(s.Target); err != nil {
			return store.NewCall{}, unfit(err.Error())
		}
		if len(args) > 0 {
			return store.NewCall{}, unfit(`A resource read takes no "arguments".`)
		}
	}
	return store.NewCall{
		ServerID: srv.ID, Method: s.Method, Target: s.Target, Title: s.Title, Arguments: s.Arguments,
		Protocol: strings.TrimPrefix(s.Protocol, mcpclient.ProtocolAuto),
	}, nil
}

// KnownProtocol says whether a call may be started with protocol: a
// revision the client speaks, or "" or "auto" for the server's setting.
func KnownProtocol(protocol string) bool {
	return protocol == "" || protocol == mcpclient.ProtocolAuto || mcpclient.KnownRevision(protocol)
}

// ProtocolChoices words the protocols a call may be started with, for an
// error: "auto" or a revision: "2026-07-28", … or "2024-11-05".
func ProtocolChoices() string {
	quoted := make([]string, len(mcpclient.Revisions))
	for i, r := range mcpclient.Revisions {
		quoted[i] = strconv.Quote(r)
	}
	last := len(quoted) - 1
	return `"` + mcpclient.ProtocolAuto + `" or a revision: ` + strings.Join(quoted[:last], ", ") + " or " + quoted[last]
}

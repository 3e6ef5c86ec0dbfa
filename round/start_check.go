package round

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
)

// maxURI caps a resource URI we send.
const maxURI = 4096

// ToolTitle is the title the server gave a tool, for people: its title, else
// its annotations' title; "" when it gave neither.
func ToolTitle(t *mcp.Tool) string {
	if t.Title == "" && t.Annotations != nil {
		return t.Annotations.Title
	}
	return t.Title
}

// toolArgumentErrors checks arguments against a tool's input schema and
// returns errors by argument; none when the schema cannot check them.
func toolArgumentErrors(tool *mcp.Tool, args any) map[string]string {
	schema, err := json.Marshal(tool.InputSchema)
	if err != nil || string(schema) == "null" {
		return nil
	}
	errs, err := forms.Validate(schema, args)
	if err != nil {
		return nil
	}
	return errs
}

// withoutNulls drops the arguments given as null that the tool's schema
// refuses as null and does not require, from both the decoded arguments
// and their raw JSON (the others keep their bytes and order).
func withoutNulls(tool *mcp.Tool, args any, raw json.RawMessage) (any, json.RawMessage) {
	m, ok := args.(map[string]any)
	if !ok {
		return args, raw
	}
	errs := toolArgumentErrors(tool, args)
	var schema struct {
		Required []string `json:"required"`
	}
	if b, err := json.Marshal(tool.InputSchema); err == nil {
		_ = json.Unmarshal(b, &schema)
	}
	drop := map[string]bool{}
	for k, v := range m {
		if _, refused := errs[k]; v == nil && refused && !slices.Contains(schema.Required, k) {
			drop[k] = true
		}
	}
	if len(drop) == 0 {
		return args, raw
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return args, raw
	}
	kept := map[string]any{}
	var out bytes.Buffer
	out.WriteByte('{')
	for _, k := range mcpclient.ObjectKeys(raw) {
		if drop[k] {
			continue
		}
		kept[k] = m[k]
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		key, _ := mcpclient.MarshalRaw(k)
		out.Write(key)
		out.WriteByte(':')
		out.Write(fields[k])
	}
	out.WriteByte('}')
	return kept, out.Bytes()
}

// checkPromptArguments checks an API call's prompt arguments: strings, each
// one the prompt takes, and every required one given. It returns errors by
// argument name.
func checkPromptArguments(params []*mcp.PromptArgument, args map[string]any) map[string]string {
	errs := map[string]string{}
	known := map[string]bool{}
	for _, p := range params {
		if p == nil {
			continue
		}
		known[p.Name] = true
		v, given := args[p.Name]
		if s, ok := v.(string); p.Required && (!given || ok && strings.TrimSpace(s) == "") {
			errs[p.Name] = "Required."
		}
	}
	for name, v := range args {
		switch _, isString := v.(string); {
		case !known[name]:
			errs[name] = "This prompt takes no such argument."
		case !isString:
			errs[name] = "Prompt arguments are strings."
		}
	}
	return errs
}

// checkURI checks a resource URI before it is sent: absolute, and of a
// sensible size.
func checkURI(uri string) error {
	u, err := url.Parse(uri)
	switch {
	case strings.TrimSpace(uri) == "":
		return errors.New("Name the resource to read: its URI.")
	case len(uri) > maxURI:
		return errors.New("This resource URI is too long.")
	case err != nil || u.Scheme == "":
		return errors.New("A resource URI must be absolute, such as file:///notes.txt or https://example.com/a.")
	}
	return nil
}

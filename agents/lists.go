package agents

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// discoverTimeout bounds asking the server behind what it is.
const discoverTimeout = 30 * time.Second

// discover answers server/discover: Rounds, as the server behind it, with
// the capabilities the server offers (tools, prompts, resources). Resources
// are always offered: a call's outcome is one (rounds://calls/{id}), and
// the list of a server without any is empty.
func (d *Door) discover(q *Request) error {
	f, err := d.face(q)
	if err != nil {
		return err
	}
	out := q.cacheable(map[string]any{
		"resultType":        "complete",
		"supportedVersions": SupportedVersions,
		"capabilities":      f.Capabilities,
		"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": f.Info},
	})
	if f.Instructions != "" {
		out["instructions"] = f.Instructions
	}
	return q.ResultOf(out)
}

// face is Rounds as the server behind it: what the server offers of
// tools, prompts, resources, completions and logging, its name and
// version, its instructions.
type face struct {
	Capabilities map[string]any
	Info         map[string]string
	Instructions string
}

// face asks the server behind what it is, for discover and initialize.
func (d *Door) face(q *Request) (*face, error) {
	ctx, cancel := context.WithTimeout(q.Ctx, discoverTimeout)
	defer cancel()
	disc, err := d.o.Catalog.Discover(ctx, q.Who.User.Name, q.Server)
	if err != nil {
		return nil, d.serverTrouble(q, err)
	}
	var theirs map[string]json.RawMessage
	_ = json.Unmarshal(disc.Capabilities, &theirs)
	caps := map[string]any{"resources": map[string]any{}}
	// Logging, when the server offers it: its log messages reach the agent
	// during its calls (relay.go).
	for _, k := range []string{"tools", "prompts", "resources", "completions", "logging"} {
		if _, ok := theirs[k]; ok {
			caps[k] = map[string]any{}
		}
	}
	// Rounds answers tasks itself, whatever the server behind does.
	caps["extensions"] = map[string]any{ExtensionTasks: map[string]any{}}
	name := q.Server.Name + " via Rounds"
	if disc.ServerName != "" {
		name = disc.ServerName + " via Rounds"
	}
	return &face{Capabilities: caps, Info: map[string]string{"name": name, "version": disc.Version}, Instructions: disc.Instructions}, nil
}

// toolsList passes tools/list through: each tool as the server sent it,
// all in one page.
func (d *Door) toolsList(q *Request) error {
	raw, err := d.o.Catalog.RawTools(q.Ctx, q.Who.User.Name, q.Server)
	if err != nil {
		return d.serverTrouble(q, err)
	}
	if raw == nil {
		raw = []json.RawMessage{}
	}
	return q.ResultOf(q.cacheable(map[string]any{"resultType": "complete", "tools": raw}))
}

// promptsList passes prompts/list through, in one page.
func (d *Door) promptsList(q *Request) error {
	cat, err := d.o.Catalog.Catalog(q.Ctx, q.Who.User.Name, q.Server)
	if err != nil {
		return d.serverTrouble(q, err)
	}
	return q.ResultOf(q.cacheable(map[string]any{"resultType": "complete", "prompts": listOf(cat.RawPrompts)}))
}

// resourcesList passes resources/list through, in one page.
func (d *Door) resourcesList(q *Request) error {
	cat, err := d.o.Catalog.Catalog(q.Ctx, q.Who.User.Name, q.Server)
	if err != nil {
		return d.serverTrouble(q, err)
	}
	return q.ResultOf(q.cacheable(map[string]any{"resultType": "complete", "resources": listOf(cat.RawResources)}))
}

// templatesList passes resources/templates/list through, in one page.
func (d *Door) templatesList(q *Request) error {
	cat, err := d.o.Catalog.Catalog(q.Ctx, q.Who.User.Name, q.Server)
	if err != nil {
		return d.serverTrouble(q, err)
	}
	return q.ResultOf(q.cacheable(map[string]any{"resultType": "complete", "resourceTemplates": listOf(cat.RawTemplates)}))
}

// serverTrouble turns what went wrong asking the server into the agent's
// error: the server's own JSON-RPC error as it gave it, or a sentence.
func (d *Door) serverTrouble(q *Request, err error) error {
	var se *mcpclient.ServerError
	if errors.As(err, &se) {
		return &RPCError{Status: http.StatusOK, Code: se.Code, Message: se.Message}
	}
	if errors.As(err, new(*mcpclient.AuthRequiredError)) {
		return &RPCError{Status: http.StatusOK, Code: jsonrpc.CodeInternalError,
			Message: q.Server.Name + " wants " + q.Who.User.Name + " to connect first: use Connect on its page in Rounds (" +
				d.o.PublicURL + "/servers/" + pathEscape(q.Server.Name) + ")."}
	}
	if p, ok := mcpclient.Describe(err); ok {
		return &RPCError{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, Message: p.Sentence()}
	}
	return err
}

// listOf is list, or an empty list for none: a list result's array is
// never null.
func listOf(list []json.RawMessage) []json.RawMessage {
	if list == nil {
		return []json.RawMessage{}
	}
	return list
}

// complete passes completion/complete to the server behind: a plain
// request, answered at once, no round.
func (d *Door) complete(q *Request) error {
	out, err := d.o.Catalog.Complete(q.Ctx, q.Who.User.Name, q.Server, q.Params)
	if err != nil {
		return d.serverTrouble(q, err)
	}
	return q.Result(q.completed(out))
}

package mcpclient

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Complete asks a server for completion/complete with params (ref,
// argument, context; any _meta is the client's own and dropped) and
// returns its result.
func (c *Client) Complete(ctx context.Context, srv Server, params json.RawMessage) (json.RawMessage, error) {
	var p mcp.CompleteParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &ServerError{Code: CodeInvalidParams, Message: "The params of completion/complete are not valid."}
	}
	p.Meta = nil
	var out json.RawMessage
	err := c.withSession(ctx, srv, func(cs *mcp.ClientSession) error {
		res, err := cs.Complete(ctx, &p)
		if err != nil {
			return err
		}
		out, err = json.Marshal(res)
		return err
	})
	return out, err
}

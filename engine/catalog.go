package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// defaultToolsTTL applies when a server gives no ttlMs hint.
const defaultToolsTTL = 5 * time.Minute

// Tools returns a server's tools from the cache in Postgres, listing them
// again once the server's ttlMs hint has run out. The engine asks a server
// on person's behalf, with their connection there, if any.
func (e *Engine) Tools(ctx context.Context, person string, srv *store.Server) ([]*mcp.Tool, error) {
	tools, _, err := e.toolList(ctx, person, srv)
	return tools, err
}

// RawTools returns a server's tools as the server sent each one, in its
// order; like Tools, from the cache while it lasts.
func (e *Engine) RawTools(ctx context.Context, person string, srv *store.Server) ([]json.RawMessage, error) {
	_, raw, err := e.toolList(ctx, person, srv)
	return raw, err
}

func (e *Engine) toolList(ctx context.Context, person string, srv *store.Server) ([]*mcp.Tool, []json.RawMessage, error) {
	if srv.Tools != nil && srv.ToolsRaw != nil && srv.ToolsExpiresAt != nil && time.Now().Before(*srv.ToolsExpiresAt) {
		var tools []*mcp.Tool
		var raw []json.RawMessage
		if json.Unmarshal(srv.Tools, &tools) == nil && json.Unmarshal(srv.ToolsRaw, &raw) == nil {
			return tools, raw, nil
		}
	}
	reach, err := e.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, nil, err
	}
	list, err := e.mcp.ListTools(ctx, reach)
	if err != nil {
		return nil, nil, e.noted(ctx, person, srv, err)
	}
	ttl := list.TTL
	if ttl <= 0 {
		ttl = defaultToolsTTL
	}
	decoded, err := json.Marshal(list.Tools)
	if err != nil {
		return nil, nil, err
	}
	raw := make([]json.RawMessage, 0, len(list.Tools))
	for _, t := range list.Tools {
		r, ok := list.Raw[t.Name]
		if !ok {
			// Not seen on the wire (never expected): the decoded tool.
			if r, err = json.Marshal(t); err != nil {
				return nil, nil, err
			}
		}
		raw = append(raw, r)
	}
	rawList := []byte("[")
	for i, r := range raw {
		if i > 0 {
			rawList = append(rawList, ',')
		}
		rawList = append(rawList, r...)
	}
	rawList = append(rawList, ']')
	if err := e.store.SetServerTools(ctx, srv.ID, decoded, rawList, list.Protocol, time.Now().Add(ttl)); err != nil {
		e.log.WarnContext(ctx, "caching tools", "server", srv.Name, "err", err)
	}
	return list.Tools, raw, nil
}

// CachedTool returns one tool of a server from the cached catalog, without
// asking the server: fresh is false when the catalog has run out (then
// call Tools), and a nil tool from a fresh catalog means there is none.
func (e *Engine) CachedTool(srv *store.Server, name string) (tool *mcp.Tool, fresh bool) {
	if srv.Tools == nil || srv.ToolsRaw == nil || srv.ToolsExpiresAt == nil || !time.Now().Before(*srv.ToolsExpiresAt) {
		return nil, false
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(srv.Tools, &tools); err != nil {
		return nil, false
	}
	return FindTool(tools, name), true
}

// FindTool returns the tool named name, or nil.
func FindTool(tools []*mcp.Tool, name string) *mcp.Tool {
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Tool returns one tool of a server.
func (e *Engine) Tool(ctx context.Context, person string, srv *store.Server, name string) (*mcp.Tool, error) {
	tools, err := e.Tools(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, &store.Error{Kind: store.ErrNotFound, Message: "tool " + name + " not found"}
}

// mcpServer is how the engine reaches a registered server, with the
// connection of the person it serves, if any.
// A server pinned to a revision is discovered and listed with it too.
func (e *Engine) mcpServer(ctx context.Context, person string, srv *store.Server) (mcpclient.Server, error) {
	out, err := e.store.MCPServer(srv, e.cfg.Capabilities)
	if err != nil {
		return out, err
	}
	if out.Token, _, err = e.accessToken(ctx, srv.ID, person, ""); err != nil {
		e.log.WarnContext(ctx, "reading a connection", "server", srv.Name, "err", err)
	}
	return out, nil
}

// noted records that a server asked for authorization, so pages and the
// API say so (to person too), and returns err.
func (e *Engine) noted(ctx context.Context, person string, srv *store.Server, err error) error {
	var ae *mcpclient.AuthRequiredError
	if errors.As(err, &ae) {
		if merr := e.store.MarkOAuthRequired(ctx, srv.ID, ae.ResourceMetadata, ae.Scope); merr != nil {
			e.log.WarnContext(ctx, "recording a server's challenge", "server", srv.Name, "err", merr)
		}
		e.turnedDown(ctx, srv.ID, person, ae)
	}
	return err
}

// Catalog lists a server's prompts, resources and resource templates. They
// are listed afresh each time: only the tools are cached.
func (e *Engine) Catalog(ctx context.Context, person string, srv *store.Server) (*mcpclient.Catalog, error) {
	reach, err := e.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	cat, err := e.mcp.ListCatalog(ctx, reach)
	return cat, e.noted(ctx, person, srv, err)
}

// Prompt returns one prompt of a server.
func (e *Engine) Prompt(ctx context.Context, person string, srv *store.Server, name string) (*mcp.Prompt, error) {
	reach, err := e.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	prompts, err := e.mcp.ListPrompts(ctx, reach)
	if err != nil {
		return nil, err
	}
	for _, p := range prompts {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, &store.Error{Kind: store.ErrNotFound, Message: "prompt " + name + " not found"}
}

// ResourceTemplates lists a server's resource templates.
func (e *Engine) ResourceTemplates(ctx context.Context, person string, srv *store.Server) ([]*mcp.ResourceTemplate, error) {
	reach, err := e.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	return e.mcp.ListResourceTemplates(ctx, reach)
}

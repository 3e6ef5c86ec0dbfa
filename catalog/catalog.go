// Package catalog is what the registered servers offer, as the pages and
// the API show it: their tools, cached in Postgres while the server's
// ttlMs hint lasts, and their prompts, resources and resource templates,
// each asked of the server on a person's behalf, with their connection
// there if any.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// defaultToolsTTL applies when a server gives no ttlMs hint.
const defaultToolsTTL = 5 * time.Minute

// Options are a Service's collaborators.
type Options struct {
	Store *store.Store
	MCP   *mcpclient.Client
	// Capabilities are what Rounds declares to every server; sampling and
	// roots are each server's own setting.
	Capabilities mcpclient.Capabilities
	// Token returns the access token of person's connection to a server,
	// renewed first when due; "" for none (the engine keeps connections).
	Token func(ctx context.Context, serverID int64, person string) (string, error)
	// Refused is told when a server refused person's token, so the
	// connection can be forgotten (the engine's TurnedDown).
	Refused func(ctx context.Context, serverID int64, person string, ae *mcpclient.AuthRequiredError)
	Log     *slog.Logger
}

// Service lists what servers offer; the pages and the API call it.
type Service struct {
	store   *store.Store
	mcp     *mcpclient.Client
	caps    mcpclient.Capabilities
	token   func(ctx context.Context, serverID int64, person string) (string, error)
	refused func(ctx context.Context, serverID int64, person string, ae *mcpclient.AuthRequiredError)
	log     *slog.Logger
}

// New returns a Service.
func New(o Options) *Service {
	return &Service{store: o.Store, mcp: o.MCP, caps: o.Capabilities, token: o.Token, refused: o.Refused, log: o.Log}
}

// Tools returns a server's tools from the cache in Postgres, listing them
// again once the server's ttlMs hint has run out. A server is asked on
// person's behalf, with their connection there, if any.
func (s *Service) Tools(ctx context.Context, person string, srv *store.Server) ([]*mcp.Tool, error) {
	tools, _, err := s.toolList(ctx, person, srv)
	return tools, err
}

// RawTools returns a server's tools as the server sent each one, in its
// order; like Tools, from the cache while it lasts.
func (s *Service) RawTools(ctx context.Context, person string, srv *store.Server) ([]json.RawMessage, error) {
	_, raw, err := s.toolList(ctx, person, srv)
	return raw, err
}

func (s *Service) toolList(ctx context.Context, person string, srv *store.Server) ([]*mcp.Tool, []json.RawMessage, error) {
	if srv.Tools != nil && srv.ToolsRaw != nil && srv.ToolsExpiresAt != nil && time.Now().Before(*srv.ToolsExpiresAt) {
		var tools []*mcp.Tool
		var raw []json.RawMessage
		if json.Unmarshal(srv.Tools, &tools) == nil && json.Unmarshal(srv.ToolsRaw, &raw) == nil {
			return tools, raw, nil
		}
	}
	reach, err := s.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, nil, err
	}
	list, err := s.mcp.ListTools(ctx, reach)
	if err != nil {
		return nil, nil, s.noted(ctx, person, srv, err)
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
	if err := s.store.SetServerTools(ctx, srv.ID, decoded, rawList, list.Protocol, time.Now().Add(ttl)); err != nil {
		s.log.WarnContext(ctx, "caching tools", "server", srv.Name, "err", err)
	}
	return list.Tools, raw, nil
}

// CachedTool returns one tool of a server from the cached catalog, without
// asking the server: fresh is false when the catalog has run out (then
// call Tools), and a nil tool from a fresh catalog means there is none.
func (s *Service) CachedTool(srv *store.Server, name string) (tool *mcp.Tool, fresh bool) {
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
func (s *Service) Tool(ctx context.Context, person string, srv *store.Server, name string) (*mcp.Tool, error) {
	tools, err := s.Tools(ctx, person, srv)
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

// mcpServer is how the catalog reaches a registered server, with the
// connection of the person it serves, if any.
// A server pinned to a revision is discovered and listed with it too.
func (s *Service) mcpServer(ctx context.Context, person string, srv *store.Server) (mcpclient.Server, error) {
	out, err := s.store.MCPServer(srv, s.caps)
	if err != nil {
		return out, err
	}
	if out.Token, err = s.token(ctx, srv.ID, person); err != nil {
		s.log.WarnContext(ctx, "reading a connection", "server", srv.Name, "err", err)
	}
	return out, nil
}

// noted records that a server asked for authorization, so pages and the
// API say so (to person too), and returns err.
func (s *Service) noted(ctx context.Context, person string, srv *store.Server, err error) error {
	var ae *mcpclient.AuthRequiredError
	if errors.As(err, &ae) {
		if merr := s.store.MarkOAuthRequired(ctx, srv.ID, ae.ResourceMetadata, ae.Scope); merr != nil {
			s.log.WarnContext(ctx, "recording a server's challenge", "server", srv.Name, "err", merr)
		}
		s.refused(ctx, srv.ID, person, ae)
	}
	return err
}

// Catalog lists a server's prompts, resources and resource templates. They
// are listed afresh each time: only the tools are cached.
func (s *Service) Catalog(ctx context.Context, person string, srv *store.Server) (*mcpclient.Catalog, error) {
	reach, err := s.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	cat, err := s.mcp.ListCatalog(ctx, reach)
	return cat, s.noted(ctx, person, srv, err)
}

// Prompt returns one prompt of a server.
func (s *Service) Prompt(ctx context.Context, person string, srv *store.Server, name string) (*mcp.Prompt, error) {
	reach, err := s.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	prompts, err := s.mcp.ListPrompts(ctx, reach)
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
func (s *Service) ResourceTemplates(ctx context.Context, person string, srv *store.Server) ([]*mcp.ResourceTemplate, error) {
	reach, err := s.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	return s.mcp.ListResourceTemplates(ctx, reach)
}

// Discover asks a server what it is and what it offers, on person's
// behalf.
func (s *Service) Discover(ctx context.Context, person string, srv *store.Server) (*mcpclient.Discovery, error) {
	reach, err := s.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	d, err := s.mcp.Discover(ctx, reach)
	return d, s.noted(ctx, person, srv, err)
}

// Complete passes a completion/complete request to a server, for person.
func (s *Service) Complete(ctx context.Context, person string, srv *store.Server, params json.RawMessage) (json.RawMessage, error) {
	reach, err := s.mcpServer(ctx, person, srv)
	if err != nil {
		return nil, err
	}
	out, err := s.mcp.Complete(ctx, reach, params)
	return out, s.noted(ctx, person, srv, err)
}

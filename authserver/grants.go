package authserver

import (
	"context"

	"net/url"
	"strings"

	"github.com/mcp-rounds/rounds/store"
)

// Request is an authorization request waiting for a person's consent, as
// the consent page shows it.
type Request struct {
	ID string
	// ClientID and ClientName are the client's; the name is what the
	// client says of itself: untrusted text. Host is where its ID or its
	// redirect leads; Unverified is true for a client that registered
	// itself, whose name nobody vouches for.
	ClientID, ClientName, Host string
	Unverified                 bool
	// Servers are the servers it asks for.
	Servers []string
	// RedirectHost is where the person is sent back to.
	RedirectHost string
}

// Pending returns an authorization request still waiting for consent;
// ErrNotFound for one unknown, expired or answered already.
func (s *Server) Pending(ctx context.Context, id string) (*Request, error) {
	r, err := s.o.Store.AgentAuthRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.GrantID != nil {
		return nil, &store.Error{Kind: store.ErrNotFound, Message: "This request was answered already."}
	}
	c, err := s.o.Store.AgentClient(ctx, r.ClientID)
	if err != nil {
		return nil, err
	}
	req := &Request{ID: r.ID, ClientID: c.ID, ClientName: c.Name, Unverified: !c.MetadataURL,
		Servers: r.Resources, RedirectHost: hostOf(r.RedirectURI)}
	req.Host = req.RedirectHost
	if c.MetadataURL {
		req.Host = hostOf(c.ID)
	}
	return req, nil
}

// Approve records the person's consent to the request and returns where
// the browser goes next: op's callback, which sends it on to the client
// with its code.
func (s *Server) Approve(ctx context.Context, id string, u *store.User, addr string) (string, error) {
	r, err := s.Pending(ctx, id)
	if err != nil {
		return "", err
	}
	e := store.AuditEntry{Instance: s.o.InstanceID, Actor: u.Name, Action: "oauth.consent", Target: r.ClientID,
		Addr: addr, Detail: map[string]any{"client_name": r.ClientName, "servers": r.Servers}}
	if err := s.o.Store.ApproveAgentAuthRequest(ctx, id, u.ID, e); err != nil {
		return "", err
	}
	return PathAuthorizeDone + "?id=" + url.QueryEscape(id), nil
}

// Deny refuses the request and returns the client's redirect URI with
// error=access_denied.
func (s *Server) Deny(ctx context.Context, id string) (string, error) {
	r, err := s.o.Store.AgentAuthRequest(ctx, id)
	if err != nil {
		return "", err
	}
	if r.GrantID != nil {
		return "", &store.Error{Kind: store.ErrNotFound, Message: "This request was answered already."}
	}
	if err := s.o.Store.DeleteAgentAuthRequest(ctx, id); err != nil {
		return "", err
	}
	u, err := url.Parse(r.RedirectURI)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("error", "access_denied")
	q.Set("error_description", "The person declined.")
	if r.State != "" {
		q.Set("state", r.State)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Agents lists a person's connected agents.
func (s *Server) Agents(ctx context.Context, userID int64) ([]store.AgentGrant, error) {
	return s.o.Store.AgentGrants(ctx, userID)
}

// Disconnect revokes a person's grant to an agent and all its tokens, at
// once on every instance (tokens are looked up in Postgres each time).
func (s *Server) Disconnect(ctx context.Context, u *store.User, grantID int64, addr string) error {
	return s.o.Store.DeleteAgentGrant(ctx, u.ID, grantID, store.AuditEntry{Instance: s.o.InstanceID,
		Actor: u.Name, Action: "oauth.disconnect", Addr: addr})
}

// Grant is what a valid access token carries: whose it is, which client
// holds it, and the servers it may reach.
type Grant struct {
	User       *store.User
	ClientID   string
	ClientName string
	Servers    []string
}

// Verify checks an access token; ErrNotFound for one that is not valid:
// unknown, expired, revoked, or of a disabled person.
func (s *Server) Verify(ctx context.Context, token string) (*Grant, error) {
	if !strings.HasPrefix(token, AccessPrefix) {
		return nil, &store.Error{Kind: store.ErrNotFound, Message: "token not found"}
	}
	u, g, err := s.o.Store.AgentAccess(ctx, hash(token))
	if err != nil {
		return nil, err
	}
	return &Grant{User: u, ClientID: g.ClientID, ClientName: g.ClientName, Servers: g.Servers}, nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

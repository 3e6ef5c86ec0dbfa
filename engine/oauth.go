package engine

import (
	"context"
	"errors"
	"time"

	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// Auth is the OAuth client the engine refreshes connections with.
func (e *Engine) Auth() *mcpauth.Client { return e.cfg.Auth }

// AccessToken returns the access token of person's connection to a
// server, renewed first when due; "" for none. The catalog asks with it.
func (e *Engine) AccessToken(ctx context.Context, serverID int64, person string) (string, error) {
	token, _, err := e.accessToken(ctx, serverID, person, "")
	return token, err
}

// accessToken returns the access token person uses at a server, renewing
// it first when it has run out or is the one the server just refused (one
// instance at a time: see store.RefreshOAuthToken). No connection is no
// token. renewable says whether a refused token could be renewed.
func (e *Engine) accessToken(ctx context.Context, serverID int64, person, refused string) (token string, renewable bool, err error) {
	t, err := e.store.OAuthTokenFor(ctx, serverID, person)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return e.renewDue(ctx, t, serverID, person, refused)
}

// renewDue is accessToken for a connection already read (nil for none).
func (e *Engine) renewDue(ctx context.Context, t *store.OAuthToken, serverID int64, person, refused string) (token string, renewable bool, err error) {
	if t == nil {
		return "", false, nil
	}
	if refused != "" && t.Access != refused {
		return t.Access, false, nil // renewed meanwhile
	}
	due := t.ExpiresAt != nil && t.ExpiresAt.Sub(e.cfg.Now()) < 30*time.Second
	if (!due && refused == "") || t.Refresh == "" || e.cfg.Auth == nil {
		return t.Access, t.Refresh != "" && e.cfg.Auth != nil, nil
	}
	t, err = e.store.RefreshOAuthToken(ctx, serverID, person, t.Access, func(t *store.OAuthToken) (string, string, *time.Time, error) {
		got, err := e.cfg.Auth.Refresh(ctx, t.TokenEndpoint, mcpauth.Registration{
			ClientID: t.Client.ClientID, ClientSecret: t.Client.ClientSecret, AuthMethod: t.Client.AuthMethod,
		}, t.Refresh, t.Resource)
		if err != nil {
			e.log.WarnContext(ctx, "renewing a connection failed", "server_id", serverID, "err", err)
			return "", "", nil, err
		}
		return got.Access, got.Refresh, got.Expires, nil
	})
	if err != nil {
		// No connection left: the person signs in again.
		return "", false, nil
	}
	return t.Access, false, nil
}

// needsAuthorization records a server's challenge, and says on the call
// what the person must do.
func (e *Engine) needsAuthorization(ctx context.Context, c *store.Call, seq int, ae *mcpclient.AuthRequiredError) error {
	if err := e.store.MarkOAuthRequired(ctx, c.ServerID, ae.ResourceMetadata, ae.Scope); err != nil {
		return err
	}
	e.TurnedDown(ctx, c.ServerID, c.Owner, ae)
	msg := c.ServerName + " needs you to sign in before it answers. Connect, and the call goes on by itself."
	if ae.Status == 403 {
		msg = c.ServerName + " needs more permissions (" + ae.Scope + ") than your connection gives. Connect again to grant them, and the call goes on by itself."
	}
	if c.ServerOAuthMode == store.OAuthShared {
		msg = c.ServerName + " needs an administrator to sign in for everyone. The call goes on once they have."
	}
	return e.store.NeedAuthorization(ctx, c.ID, seq, msg)
}

// TurnedDown forgets the connection a server refused with 401 after any
// renewal (its authorization server may have moved, or revoked it): the
// person's status at the server reads "required" with where to sign in,
// and connecting again starts from the server's challenge, registering
// with the authorization server it names now. A 403 asks for more scopes
// of the same connection, which stays.
func (e *Engine) TurnedDown(ctx context.Context, serverID int64, person string, ae *mcpclient.AuthRequiredError) {
	if ae.Status != 401 {
		return
	}
	if err := e.store.ForgetOAuthToken(ctx, serverID, person); err != nil {
		e.log.WarnContext(ctx, "forgetting a refused connection", "server_id", serverID, "err", err)
	}
}

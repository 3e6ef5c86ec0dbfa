package agents

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-rounds/rounds/store"
)

// Principal is who an agent acts for, and with what: an API token or an
// OAuth client's access token.
type Principal struct {
	User *store.User
	// TokenID is the API token's id; zero for OAuth.
	TokenID int64
	// OAuthClient and OAuthClientName are the OAuth client's.
	OAuthClient     string
	OAuthClientName string
}

// APIToken prefixes Rounds' API tokens; anything else is taken for an
// OAuth access token.
const APIToken = "rnd_"

type userCheckKey struct{}

// WithUserCheck gives the door, for one request, the check the pages make
// of a signed-in person (single sign-on asked again when due); its
// store.ErrNotFound (store.ErrSignOnAgain) refuses the token.
func WithUserCheck(r *http.Request, check func(*store.User) (*store.User, error)) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userCheckKey{}, check))
}

// checked is u as the request's user check leaves it.
func checked(ctx context.Context, u *store.User) (*store.User, error) {
	if check, ok := ctx.Value(userCheckKey{}).(func(*store.User) (*store.User, error)); ok {
		return check(u)
	}
	return u, nil
}

// errNoToken is a request without a usable token.
var errNoToken = errors.New("no valid token")

// authenticate finds who the agent acts for, from Authorization: Bearer.
// An OAuth token must have been granted for this server.
func (d *Door) authenticate(ctx context.Context, r *http.Request, server string) (*Principal, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return nil, errNoToken
	}
	if strings.HasPrefix(token, APIToken) {
		u, err := d.o.Store.UserByToken(ctx, token)
		if err == nil {
			u, err = checked(ctx, u)
		}
		if isNotFound(err) {
			return nil, errNoToken
		}
		if err != nil {
			return nil, err
		}
		return &Principal{User: u, TokenID: u.TokenID}, nil
	}
	if d.o.VerifyOAuth == nil {
		return nil, errNoToken
	}
	g, err := d.o.VerifyOAuth(ctx, token)
	if isNotFound(err) {
		return nil, errNoToken
	}
	if err != nil {
		return nil, err
	}
	if g == nil || g.User == nil || !slices.Contains(g.Servers, server) {
		return nil, errNoToken
	}
	if g.User, err = checked(ctx, g.User); isNotFound(err) {
		return nil, errNoToken
	} else if err != nil {
		return nil, err
	}
	return &Principal{User: g.User, OAuthClient: g.ClientID, OAuthClientName: g.ClientName}, nil
}

// unauthorized answers a request without a valid token (401, naming the
// protected resource's metadata), or one whose token could not be checked.
func (d *Door) unauthorized(w http.ResponseWriter, server string, err error) {
	if !errors.Is(err, errNoToken) {
		d.o.Log.Error("checking an agent's token", "server", server, "err", err)
		writeError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeInternalError, "Rounds cannot check the token just now. Please try again.", nil)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+d.ResourceMetadataURL(server)+`"`)
	writeError(w, http.StatusUnauthorized, nil, jsonrpc.CodeInvalidRequest,
		"Send Authorization: Bearer with a Rounds API token, or sign in with OAuth.", nil)
}

// ResourceMetadataURL is where a server's protected resource metadata
// (RFC 9728) is.
func (d *Door) ResourceMetadataURL(server string) string {
	return d.o.PublicURL + "/.well-known/oauth-protected-resource/mcp/" + pathEscape(server)
}

// ResourceURL is the server's address at Rounds: the resource an OAuth
// token is bound to.
func (d *Door) ResourceURL(server string) string { return d.o.PublicURL + "/mcp/" + pathEscape(server) }

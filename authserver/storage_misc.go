package authserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"slices"
	"strconv"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/mcp-rounds/rounds/store"
)

// authRequest is a stored authorization request, as op sees it.
type authRequest struct{ store.AgentAuthRequest }

func (r *authRequest) GetID() string                      { return r.ID }
func (r *authRequest) GetACR() string                     { return "" }
func (r *authRequest) GetAMR() []string                   { return nil }
func (r *authRequest) GetAudience() []string              { return []string{r.ClientID} }
func (r *authRequest) GetAuthTime() time.Time             { return r.CreatedAt }
func (r *authRequest) GetClientID() string                { return r.ClientID }
func (r *authRequest) GetNonce() string                   { return r.Nonce }
func (r *authRequest) GetRedirectURI() string             { return r.RedirectURI }
func (r *authRequest) GetState() string                   { return r.State }
func (r *authRequest) Done() bool                         { return r.GrantID != nil }
func (r *authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseTypeCode }
func (r *authRequest) GetResponseMode() oidc.ResponseMode {
	return oidc.ResponseMode(r.ResponseMode)
}
func (r *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: oidc.CodeChallengeMethodS256}
}

// GetScopes always holds offline_access: every client of Rounds may
// refresh its tokens, whether or not it asked for that scope.
func (r *authRequest) GetScopes() []string {
	if slices.Contains(r.Scopes, oidc.ScopeOfflineAccess) {
		return r.Scopes
	}
	return append(slices.Clip(r.Scopes), oidc.ScopeOfflineAccess)
}

func (r *authRequest) GetSubject() string {
	if r.UserID == nil {
		return ""
	}
	return strconv.FormatInt(*r.UserID, 10)
}

// refreshRequest is what a refresh token was issued for.
type refreshRequest struct {
	store.AgentTokenGrant
	hash   []byte
	scopes []string
}

func (r *refreshRequest) GetAMR() []string            { return nil }
func (r *refreshRequest) GetAudience() []string       { return []string{r.ClientID} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.GrantedAt }
func (r *refreshRequest) GetClientID() string         { return r.ClientID }
func (r *refreshRequest) GetScopes() []string         { return r.scopes }
func (r *refreshRequest) GetSubject() string          { return strconv.FormatInt(r.UserID, 10) }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.scopes = s }

func (st *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	return st.s.client(ctx, id)
}

// AuthorizeClientIDSecret checks a confidential client's secret.
func (st *storage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	c, err := st.s.o.Store.AgentClient(ctx, id)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(secret))
	if c.SecretHash == nil || subtle.ConstantTimeCompare(c.SecretHash, sum[:]) != 1 {
		return errors.New("wrong client secret")
	}
	return nil
}

// signingKey is the Ed25519 key that signs ID tokens (Rounds' access
// tokens are opaque and signed by nobody).
type signingKey struct{ s *Server }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.EdDSA }
func (k signingKey) Key() any                                    { return k.s.key }
func (k signingKey) ID() string                                  { return "rounds-1" }

type publicKey struct{ s *Server }

func (k publicKey) ID() string                         { return "rounds-1" }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.EdDSA }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return k.s.key.Public() }

func (st *storage) SigningKey(context.Context) (op.SigningKey, error) { return signingKey{st.s}, nil }
func (st *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.EdDSA}, nil
}
func (st *storage) KeySet(context.Context) ([]op.Key, error) { return []op.Key{publicKey{st.s}}, nil }

// What follows op asks of every storage; Rounds offers no user info,
// introspection or JWT profile grants.

var errUnsupported = errors.New("not supported by Rounds")

func (st *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (st *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errUnsupported
}
func (st *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errUnsupported
}
func (st *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}
func (st *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}
func (st *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}
func (st *storage) Health(ctx context.Context) error { return st.s.o.Store.Pool().Ping(ctx) }

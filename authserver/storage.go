package authserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/mcp-rounds/rounds/store"
)

// requestTTL is how long a person has to sign in and consent.
const requestTTL = 15 * time.Minute

// storage is op's storage, over the store. Its methods besides those of
// the authorization code flow are in storage_misc.go.
type storage struct{ s *Server }

// CreateAuthRequest stores an authorization request after Rounds' own
// checks: PKCE with S256, the code in the query, and resources naming
// servers.
func (st *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge with code_challenge_method=S256.")
	}
	if req.ResponseMode != "" && req.ResponseMode != oidc.ResponseModeQuery {
		return nil, oidc.ErrInvalidRequest().WithDescription("Only response_mode=query is supported.")
	}
	servers, err := st.s.servers(ctx, resourcesFrom(ctx))
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, invalidTarget("Name the servers wanted: resource=" + st.s.issuer + "/mcp/NAME.")
	}
	r := store.AgentAuthRequest{
		ID: newID(), ClientID: req.ClientID, RedirectURI: req.RedirectURI, State: req.State, Nonce: req.Nonce,
		Scopes: req.Scopes, ResponseMode: string(req.ResponseMode), CodeChallenge: req.CodeChallenge,
		Resources: servers, ExpiresAt: time.Now().Add(requestTTL), CreatedAt: time.Now(),
	}
	if err := st.s.o.Store.CreateAgentAuthRequest(ctx, r); err != nil {
		return nil, err
	}
	return &authRequest{r}, nil
}

func (st *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	r, err := st.s.o.Store.AgentAuthRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	return &authRequest{*r}, nil
}

func (st *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	if !strings.HasPrefix(code, codePrefix) {
		return nil, errors.New("not a code of ours")
	}
	r, err := st.s.o.Store.AgentAuthRequestByCode(ctx, hash(code))
	if err != nil {
		return nil, err
	}
	return &authRequest{*r}, nil
}

func (st *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	return st.s.o.Store.SetAgentAuthCode(ctx, id, hash(code))
}

func (st *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	return st.s.o.Store.DeleteAgentAuthRequest(ctx, id)
}

func (st *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	access, _, exp, err := st.issue(ctx, req, false)
	return access, exp, err
}

func (st *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, _ string) (string, string, time.Time, error) {
	return st.issue(ctx, req, true)
}

// issue makes the tokens of a code exchange or a refresh: bound to the
// servers the token request names (RFC 8707), which must be among those
// granted, or else to all of them. The code is used up, or the refresh
// token rotated, in the same transaction.
func (st *storage) issue(ctx context.Context, req op.TokenRequest, refresh bool) (string, string, time.Time, error) {
	t := store.AgentTokens{}
	var granted []string
	switch r := req.(type) {
	case *authRequest:
		if r.GrantID == nil {
			return "", "", time.Time{}, oidc.ErrInvalidGrant()
		}
		t.GrantID, granted, t.Scopes, t.Consumes = *r.GrantID, r.Resources, r.Scopes, r.ID
	case *refreshRequest:
		t.GrantID, granted, t.Scopes, t.Rotates = r.GrantID, r.Servers, r.scopes, r.hash
	default:
		return "", "", time.Time{}, fmt.Errorf("authserver: no tokens for a %T", req)
	}
	servers, err := st.s.servers(ctx, resourcesFrom(ctx))
	if err != nil {
		return "", "", time.Time{}, err
	}
	for _, srv := range servers {
		if !slices.Contains(granted, srv) {
			return "", "", time.Time{}, invalidTarget("The resource " + st.s.Resource(srv) + " was not granted.")
		}
	}
	if len(servers) == 0 {
		servers = granted
	}
	t.Servers = servers
	access := newSecret(AccessPrefix)
	exp := time.Now().Add(st.s.o.AccessTTL)
	t.AccessHash, t.AccessExpires = hash(access), exp
	var next string
	if refresh {
		next = newSecret(refreshPrefix)
		t.RefreshHash, t.RefreshExpires = hash(next), time.Now().Add(st.s.o.RefreshTTL)
	}
	if err := st.s.o.Store.CreateAgentTokens(ctx, t); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("The code or refresh token was used already.")
		}
		return "", "", time.Time{}, err
	}
	return access, next, exp, nil
}

func (st *storage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	if !strings.HasPrefix(token, refreshPrefix) {
		return nil, oidc.ErrInvalidGrant()
	}
	h := hash(token)
	g, err := st.s.o.Store.AgentRefreshToken(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oidc.ErrInvalidGrant().WithDescription("The refresh token is not valid: used, expired or revoked.")
	}
	if err != nil {
		return nil, err
	}
	return &refreshRequest{AgentTokenGrant: *g, hash: h, scopes: g.Scopes}, nil
}

func (st *storage) GetRefreshTokenInfo(ctx context.Context, _ string, token string) (string, string, error) {
	if !strings.HasPrefix(token, refreshPrefix) {
		return "", "", op.ErrInvalidRefreshToken
	}
	g, err := st.s.o.Store.AgentRefreshToken(ctx, hash(token))
	if err != nil {
		return "", "", op.ErrInvalidRefreshToken
	}
	return strconv.FormatInt(g.UserID, 10), token, nil
}

// RevokeToken revokes an access or refresh token of the client; an
// unknown token is not an error (RFC 7009).
func (st *storage) RevokeToken(ctx context.Context, token, _, clientID string) *oidc.Error {
	if err := st.s.o.Store.RevokeAgentToken(ctx, hash(token), clientID); err != nil {
		return oidc.ErrServerError()
	}
	return nil
}

func (st *storage) TerminateSession(context.Context, string, string) error { return nil }

// tokenCrypto is op's token "encryption": Rounds' tokens are random
// secrets kept hashed, so an access token's id is the token itself, and an
// authorization code is a fresh secret.
type tokenCrypto struct{}

func (tokenCrypto) Encrypt(s string) (string, error) {
	if id, _, ok := strings.Cut(s, ":"); ok {
		return id, nil // tokenID:subject of an access token
	}
	return newSecret(codePrefix), nil // the code of an authorization request
}

func (tokenCrypto) Decrypt(s string) (string, error) {
	if strings.HasPrefix(s, AccessPrefix) {
		return s + ":", nil
	}
	return "", errors.New("not an access token")
}

func newSecret(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func hash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// invalidTarget is RFC 8707's error for a resource Rounds does not serve.
func invalidTarget(description string) *oidc.Error {
	return &oidc.Error{ErrorType: "invalid_target", Description: description}
}

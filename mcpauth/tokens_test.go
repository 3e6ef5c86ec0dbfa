package mcpauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/mcptest"
)

// connected is a client registered at a fresh authorization server, with
// what discovery found for a server it protects.
type connected struct {
	as     *mcptest.AuthServer
	c      *mcpauth.Client
	target *mcpauth.Target
	reg    mcpauth.Registration
}

func connect(t *testing.T, settings func(*mcptest.AuthServer)) *connected {
	t.Helper()
	as := mcptest.NewAuthServer(t)
	if settings != nil {
		as.Set(settings)
	}
	c := &mcpauth.Client{HTTP: mcpauth.NewHTTPClient(5 * time.Second), PublicURL: "http://127.0.0.1:1"}
	mcpURL := mcptest.Protect(t, as, http.NotFoundHandler(), "mcp:tools")
	target, err := c.Discover(t.Context(), mcpURL, "")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := c.Register(t.Context(), target, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &connected{as: as, c: c, target: target, reg: *reg}
}

// TestCheckIssuer: the iss an authorization server sends a person back
// with is held to the issuer the flow started at (RFC 9207): the same one
// passes, another one or none where one was promised is refused, and none
// where none was promised passes.
func TestCheckIssuer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		settings func(*mcptest.AuthServer)
		query    func(q url.Values) // what reaches Rounds, changed on the way
		refused  string             // in the refusal; "" for none
	}{
		{name: "SameIssuer"},
		{name: "AnotherIssuer", settings: func(as *mcptest.AuthServer) { as.WrongIss = true },
			refused: `came back from the wrong authorization server (iss "http://evil.test"`},
		{name: "MissingButPromised", query: func(q url.Values) { q.Del("iss") },
			refused: "came back without naming its authorization server"},
		{name: "SentTwice", query: func(q url.Values) { q.Add("iss", q.Get("iss")) }, refused: "wrong authorization server"},
		{name: "EmptyButPromised", query: func(q url.Values) { q.Set("iss", "") }, refused: "wrong authorization server"},
		{name: "NeverPromised", settings: func(as *mcptest.AuthServer) { as.NoIss = true }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cn := connect(t, tt.settings)
			q := authorize(t, cn.c, cn.target, cn.reg, oauth2.GenerateVerifier())
			if tt.query != nil {
				tt.query(q)
			}
			err := mcpauth.CheckIssuer(q, cn.target.AS.Issuer, cn.target.AS.AuthorizationResponseIssParameterSupported)
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var me *mcpauth.Error
			if !errors.As(err, &me) || !strings.Contains(me.Message, tt.refused) || !strings.Contains(me.Message, "so it was refused") {
				t.Fatalf("err = %v, want a refusal saying %q", err, tt.refused)
			}
		})
	}
}

// TestRefresh: a connection whose access token has run out is renewed with
// its refresh token, for the same server: the new token works where the
// old one no longer does, the refresh token is rotated, and the old one,
// or one asked for another server, is refused in words.
func TestRefresh(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	cn := connect(t, func(as *mcptest.AuthServer) { as.TokenTTL = ttl })
	ctx := t.Context()
	verifier := oauth2.GenerateVerifier()
	code := authorizeCode(t, cn.c, cn.target, cn.reg, verifier)
	first, err := cn.c.Exchange(ctx, cn.target.AS.TokenEndpoint, cn.reg, code, verifier, cn.target.Resource)
	if err != nil {
		t.Fatal(err)
	}
	if first.Refresh == "" || first.Expires == nil || time.Until(*first.Expires) > ttl {
		t.Fatalf("tokens = %+v, want a refresh token and an access token good for %s", first, ttl)
	}
	if _, ok := cn.as.Check(first.Access, cn.target.Resource); !ok {
		t.Fatal("the first access token is not good for the server")
	}
	// Wait for it to run out, as a connection left alone does.
	for deadline := time.Now().Add(5 * ttl); ; time.Sleep(50 * time.Millisecond) {
		if _, ok := cn.as.Check(first.Access, cn.target.Resource); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the access token never ran out")
		}
	}

	renewed, err := cn.c.Refresh(ctx, cn.target.AS.TokenEndpoint, cn.reg, first.Refresh, cn.target.Resource)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cn.as.Check(renewed.Access, cn.target.Resource); !ok || renewed.Access == first.Access {
		t.Fatalf("the renewed access token %q is not a new one good for the server", renewed.Access)
	}
	if renewed.Refresh == "" || renewed.Refresh == first.Refresh {
		t.Errorf("refresh token after renewal = %q, want a new one", renewed.Refresh)
	}
	if renewed.Expires == nil || !renewed.Expires.After(time.Now()) || time.Until(*renewed.Expires) > ttl {
		t.Errorf("renewed token expires %v, want within %s from now", renewed.Expires, ttl)
	}
	if !strings.Contains(" "+renewed.Scope+" ", " offline_access ") {
		t.Errorf("scope = %q, want what was granted", renewed.Scope)
	}
	if refreshes, foreign := cn.as.Counts(); refreshes != 1 || foreign != 0 {
		t.Errorf("the authorization server served %d refreshes and saw %d foreign tokens, want 1 and 0", refreshes, foreign)
	}

	for _, tt := range []struct {
		name, refresh, resource, said string
	}{
		{"Reused", first.Refresh, cn.target.Resource, "(400 invalid_grant)"},
		{"AnotherServer", renewed.Refresh, "http://elsewhere.test/mcp", "(400 invalid_target)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cn.c.Refresh(ctx, cn.target.AS.TokenEndpoint, cn.reg, tt.refresh, tt.resource)
			var me *mcpauth.Error
			if !errors.As(err, &me) || !strings.Contains(me.Message, "refused to renew the connection") || !strings.Contains(me.Message, tt.said) {
				t.Fatalf("err = %v, want a refusal saying %s", err, tt.said)
			}
		})
	}

	cn.as.Close()
	_, err = cn.c.Refresh(context.Background(), cn.target.AS.TokenEndpoint, cn.reg, renewed.Refresh, cn.target.Resource)
	var me *mcpauth.Error
	if !errors.As(err, &me) || !strings.Contains(me.Message, "could not be reached to renew the connection") {
		t.Fatalf("with the authorization server down: %v", err)
	}
}

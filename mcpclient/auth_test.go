package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// TestChallengeAfterAnOpenHandshake: a server that lets anyone initialize
// but wants a token for tools/list (or wants more scopes for a call on a
// held session) is reported as asking for a sign-in, with its challenge,
// not as a bare HTTP error; with the token the list comes.
func TestChallengeAfterAnOpenHandshake(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "half-open", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "admin_only", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	const prm = "http://metadata.test/.well-known/oauth-protected-resource/mcp"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		token := r.Header.Get("Authorization")
		switch {
		case bytes.Contains(body, []byte(`"tools/list"`)) && token == "":
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+prm+`"`)
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		case bytes.Contains(body, []byte(`"tools/call"`)) && token != "Bearer admin":
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="`+prm+`"`)
			http.Error(w, "more scopes", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := mcpclient.New(mcpclient.Options{})
	ctx := context.Background()
	_, err := c.ListTools(ctx, mcpclient.Server{URL: srv.URL})
	var ae *mcpclient.AuthRequiredError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.ResourceMetadata != prm {
		t.Fatalf("listing without a token: %v, want a sign-in asked for with the metadata URL", err)
	}
	tools, err := c.ListTools(ctx, mcpclient.Server{URL: srv.URL, Token: "user"})
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("listing with a token: %v", err)
	}
	// The held 2025-11-25 path: the session opens, the call is refused
	// for want of a scope.
	held := mcpclient.Server{URL: srv.URL, Token: "user", Protocol: mcpclient.ProtocolHandshake,
		Held: &mcpclient.Held{Ask: func(context.Context, mcpclient.Question) (json.RawMessage, error) { return nil, errors.New("no") }}}
	_, err = c.Send(ctx, held, mcpclient.Request{Name: "admin_only", Arguments: []byte(`{}`)}, nil)
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Code != "insufficient_scope" || ae.Scope != "mcp:admin" {
		t.Fatalf("a call wanting more scopes: %v, want insufficient_scope for mcp:admin", err)
	}
	held.Token = "admin"
	if out, err := c.Send(ctx, held, mcpclient.Request{Name: "admin_only", Arguments: []byte(`{}`)}, nil); err != nil || out.Result == nil {
		t.Fatalf("after the step-up: %v", err)
	}
}

package mcpclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// TestRevisions: every revision the client lists is one the go-sdk speaks,
// and a server pinned to it is discovered, and called, with exactly it.
func TestRevisions(t *testing.T) {
	t.Parallel()
	if sdk := mcp.SupportedProtocolVersions(); !slices.Equal(mcpclient.Revisions, sdk) {
		t.Fatalf("Revisions = %q, but the go-sdk speaks %q", mcpclient.Revisions, sdk)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "any-revision", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	c := mcpclient.New(mcpclient.Options{})
	for _, rev := range mcpclient.Revisions {
		t.Run(rev, func(t *testing.T) {
			pinned := mcpclient.Server{URL: srv.URL, Protocol: rev}
			d, err := c.Discover(t.Context(), pinned)
			if err != nil {
				t.Fatal(err)
			}
			if d.Protocol != rev {
				t.Errorf("discovered %s, want %s", d.Protocol, rev)
			}
			out, err := c.Send(t.Context(), pinned, mcpclient.Request{Name: "hello"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Protocol != rev || !strings.Contains(string(out.Result), `"hello"`) {
				t.Errorf("call over %s: protocol %s, result %s", rev, out.Protocol, out.Result)
			}
		})
	}
}

func TestKnownRevision(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, s string
		want    bool
	}{
		{"Stateless", "2026-07-28", true},
		{"Handshake", "2025-11-25", true},
		{"Oldest", "2024-11-05", true},
		{"Auto", "auto", false},
		{"Empty", "", false},
		{"Unknown", "2024-10-07", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mcpclient.KnownRevision(tt.s); got != tt.want {
				t.Errorf("KnownRevision(%q) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

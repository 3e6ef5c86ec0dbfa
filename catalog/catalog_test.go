package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestToolsCached: a server's tools are listed once, then read from the
// cache in Postgres, as CachedTool is, until the cache is dropped; a tool
// the server has not is not found.
func TestToolsCached(t *testing.T) {
	ctx := t.Context()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Says it back."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	var listed atomic.Int32
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"tools/list"`)) {
			listed.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	if _, err := st.UpsertServer(ctx, "tools", srv.URL); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(catalog.Options{Store: st, MCP: mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second}),
		Token:   func(context.Context, int64, string) (string, error) { return "", nil },
		Refused: func(context.Context, int64, string, *mcpclient.AuthRequiredError) {},
		Log:     slog.New(slog.DiscardHandler)})
	stored := func() *store.Server {
		t.Helper()
		s, err := st.ServerByName(ctx, "tools")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	if _, fresh := cat.CachedTool(stored(), "echo"); fresh {
		t.Fatal("a server never listed has a fresh catalog")
	}
	for range 2 {
		tool, err := cat.Tool(ctx, "ada", stored(), "echo")
		if err != nil || tool == nil || tool.Description != "Says it back." {
			t.Fatalf("Tool(echo) = %+v, %v", tool, err)
		}
	}
	if n := listed.Load(); n != 1 {
		t.Fatalf("the server was asked for its tools %d times; want once, then the cache", n)
	}
	if tool, fresh := cat.CachedTool(stored(), "echo"); !fresh || tool == nil {
		t.Fatalf("CachedTool(echo) = %v, %v after listing", tool, fresh)
	}
	if tool, fresh := cat.CachedTool(stored(), "nope"); !fresh || tool != nil {
		t.Fatalf("CachedTool(nope) = %v, %v; want none, fresh", tool, fresh)
	}
	if _, err := cat.Tool(ctx, "ada", stored(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Tool(nope) = %v; want not found", err)
	}

	if err := st.ClearServerTools(ctx, "tools"); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Tools(ctx, "ada", stored()); err != nil {
		t.Fatal(err)
	}
	if n := listed.Load(); n != 2 {
		t.Fatalf("after the cache was dropped the server was asked %d times in all; want twice", n)
	}
}

package mcpclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/mcptest"
)

// TestListCatalog lists the conformance server's prompts, resources and
// resource templates over one session.
func TestListCatalog(t *testing.T) {
	t.Parallel()
	srv := mcpclient.Server{URL: mcptest.Everything(t)}
	c := mcpclient.New(mcpclient.Options{})
	cat, err := c.ListCatalog(t.Context(), srv)
	if err != nil {
		t.Fatal(err)
	}
	var prompts, resources, templates []string
	for _, p := range cat.Prompts {
		prompts = append(prompts, p.Name)
	}
	for _, r := range cat.Resources {
		resources = append(resources, r.URI)
	}
	for _, tpl := range cat.Templates {
		templates = append(templates, tpl.URITemplate)
	}
	if !slices.Contains(prompts, "test_input_required_result_prompt") || !slices.Contains(prompts, "test_prompt_with_arguments") {
		t.Errorf("prompts = %v", prompts)
	}
	if !slices.Contains(resources, "test://static-binary") {
		t.Errorf("resources = %v", resources)
	}
	if !slices.Equal(templates, []string{"test://template/{id}/data"}) {
		t.Errorf("templates = %v", templates)
	}
	one, err := c.ListPrompts(t.Context(), srv)
	if err != nil || len(one) != len(cat.Prompts) {
		t.Errorf("ListPrompts: %d prompts, %v; want %d", len(one), err, len(cat.Prompts))
	}
}

// TestListingsFollowPages: a server that lists two at a time has every
// tool, prompt, resource and resource template listed, in its order.
func TestListingsFollowPages(t *testing.T) {
	t.Parallel()
	server := mcp.NewServer(&mcp.Implementation{Name: "pager", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("item%d", i)
		want = append(want, name)
		mcp.AddTool(server, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
		server.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		server.AddResource(&mcp.Resource{Name: name, URI: "test://" + name}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		server.AddResourceTemplate(&mcp.ResourceTemplate{Name: name, URITemplate: "test://" + name + "/{id}"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	c := mcpclient.New(mcpclient.Options{})
	names := func(n int, name func(int) string) []string {
		out := make([]string, n)
		for i := range n {
			out[i] = name(i)
		}
		return out
	}
	tools, err := c.ListTools(t.Context(), mcpclient.Server{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(len(tools.Tools), func(i int) string { return tools.Tools[i].Name }); !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	cat, err := c.ListCatalog(t.Context(), mcpclient.Server{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for kind, got := range map[string][]string{
		"prompts":   names(len(cat.Prompts), func(i int) string { return cat.Prompts[i].Name }),
		"resources": names(len(cat.Resources), func(i int) string { return cat.Resources[i].Name }),
		"templates": names(len(cat.Templates), func(i int) string { return cat.Templates[i].Name }),
	} {
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", kind, got, want)
		}
	}
}

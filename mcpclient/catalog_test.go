package mcpclient_test

import (
	"slices"
	"testing"

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

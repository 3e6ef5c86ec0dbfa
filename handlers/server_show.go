package handlers

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// listTimeout bounds the listings of a server's page.
const listTimeout = 5 * time.Second

// toolsUnlisted leads what a page says when a server's tools did not list.
const toolsUnlisted = "The tools of this server could not be listed."

// serverShow renders a server's page: its tools, prompts, resources and
// resource templates, each ready to use.
func (h *Handler) serverShow(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	vm := h.serverPageVM(ctx, srv)
	if vm.Connection, err = h.connectionVM(c, srv); err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ServerPage(vm))
}

// serverPageVM lists what a server offers. Tools and the rest are asked
// for in parallel, each with a deadline; what cannot be listed says why.
func (h *Handler) serverPageVM(ctx context.Context, srv *store.Server) views.ServerPageVM {
	base := "/servers/" + url.PathEscape(srv.Name)
	vm := views.ServerPageVM{Name: srv.Name, URL: srv.URL, Sampling: srv.Sampling, Roots: srv.Roots}
	for _, r := range store.ParseRoots(srv.RootsList) {
		vm.RootsList = append(vm.RootsList, views.RootVM{URI: r.URI, Name: r.Name})
	}
	var tools []*mcp.Tool
	var catalog *mcpclient.Catalog
	var toolsErr, catalogErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		defer cancel()
		tools, toolsErr = h.catalog.Tools(lctx, signedIn(lctx), srv)
	})
	wg.Go(func() {
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		defer cancel()
		catalog, catalogErr = h.catalog.Catalog(lctx, signedIn(lctx), srv)
	})
	wg.Wait()
	if toolsErr != nil {
		vm.ToolsError = mcpclient.WithDetail(toolsUnlisted, toolsErr)
	}
	for _, t := range tools {
		vm.Tools = append(vm.Tools, toolVM(srv, t))
	}
	if catalogErr != nil {
		vm.CatalogError = mcpclient.WithDetail("The prompts and resources of this server could not be listed.", catalogErr)
		return vm
	}
	for _, p := range catalog.Prompts {
		vm.Prompts = append(vm.Prompts, views.PromptVM{
			Name: p.Name, Title: cmp.Or(p.Title, p.Name), Description: p.Description,
			Action: base + "/prompts/" + url.PathEscape(p.Name), Form: promptForm(p),
		})
	}
	for _, r := range catalog.Resources {
		vm.Resources = append(vm.Resources, views.ResourceVM{
			URI: r.URI, Name: r.Name, Title: cmp.Or(r.Title, r.Name, r.URI), Description: r.Description,
			MIMEType: r.MIMEType, Action: base + "/resources",
		})
	}
	for _, t := range catalog.Templates {
		vm.Templates = append(vm.Templates, views.TemplateVM{
			URITemplate: t.URITemplate, Name: t.Name, Title: cmp.Or(t.Title, t.Name, t.URITemplate),
			Description: t.Description, MIMEType: t.MIMEType, Action: base + "/resources", Form: templateForm(t),
		})
	}
	return vm
}

// toolVM is a tool in a list, linking to its form.
func toolVM(srv *store.Server, t *mcp.Tool) views.ToolVM {
	return views.ToolVM{
		Name: t.Name, Title: cmp.Or(round.ToolTitle(t), t.Name), Description: t.Description,
		Href: "/servers/" + url.PathEscape(srv.Name) + "/tools/" + url.PathEscape(t.Name), Icon: iconHref(srv, t),
	}
}

// stringField is one string property of a form built here.
type stringField struct {
	Name, Title, Description string
	Required                 bool
}

// stringsForm builds a form of string fields, in order, from a schema it
// writes itself: prompt arguments and template variables are all strings.
func stringsForm(fields []stringField, prefix string) *forms.Form {
	props := make([]byte, 0, 64*len(fields))
	props = append(props, '{')
	var required []string
	for i, f := range fields {
		if i > 0 {
			props = append(props, ',')
		}
		name, _ := json.Marshal(f.Name)
		prop, _ := json.Marshal(map[string]any{"type": "string", "title": cmp.Or(f.Title, f.Name), "description": f.Description})
		props = append(append(append(props, name...), ':'), prop...)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	props = append(props, '}')
	req, _ := json.Marshal(append([]string{}, required...))
	schema := `{"type":"object","properties":` + string(props) + `,"required":` + string(req) + `}`
	form, err := forms.New(json.RawMessage(schema), prefix)
	if err != nil {
		// Too many or too large: one JSON box, checked by the server.
		form, _ = forms.New(nil, prefix)
	}
	return form
}

// promptForm is the form of a prompt's arguments.
func promptForm(p *mcp.Prompt) *forms.Form {
	var fields []stringField
	for _, a := range p.Arguments {
		if a != nil {
			fields = append(fields, stringField{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
	}
	return stringsForm(fields, "prompt-"+shortHash(p.Name)+".")
}

// templateForm is the form of a resource template's variables; each one is
// needed to make the URI.
func templateForm(t *mcp.ResourceTemplate) *forms.Form {
	var fields []stringField
	if tpl, err := uritemplate.New(t.URITemplate); err == nil {
		for _, name := range tpl.Varnames() {
			fields = append(fields, stringField{Name: name, Required: true})
		}
	}
	return stringsForm(fields, "template-"+shortHash(t.URITemplate)+".")
}

// shortHash names a form on a page after something the server named, in
// characters that are safe anywhere.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

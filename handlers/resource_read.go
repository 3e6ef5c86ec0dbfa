package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/views"
)

// resourceRead reads a resource from the server page: POST
// /servers/{server}/resources with the uri of a listed resource, or with a
// listed template and its variables. It goes through the round engine like
// a tool call, so the server may ask before it answers.
func (h *Handler) resourceRead(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	values, err := formParams(c)
	if err != nil {
		return err
	}
	uri := values.Get("uri")
	if tplText := values.Get("template"); tplText != "" {
		templates, err := h.catalog.ResourceTemplates(ctx, signedIn(ctx), srv)
		if err != nil {
			return err
		}
		found := false
		for _, t := range templates {
			if t.URITemplate != tplText {
				continue
			}
			found = true
			form := templateForm(t)
			content, ok := form.Decode(values)
			if ok {
				uri, err = expandTemplate(tplText, content)
				ok = err == nil
				if err != nil {
					form.Errors = append(form.Errors, err.Error())
				}
			}
			if !ok {
				vm := h.serverPageVM(ctx, srv)
				for i := range vm.Templates {
					if vm.Templates[i].URITemplate == tplText {
						vm.Templates[i].Form = form
					}
				}
				vm.Errors = views.FormErrors(form)
				return render(c, http.StatusUnprocessableEntity, views.ServerPage(vm))
			}
		}
		if !found {
			return notFoundErr("resource template")
		}
	}
	nc, err := round.NewCall(srv, round.Start{Method: mcpclient.MethodReadResource, Target: uri}, round.Found{})
	if err != nil {
		return refusedStart(c, err)
	}
	nc.Owner = h.person(c)
	nc.Audit = h.userAudit(c, "call.started", "", map[string]any{"server": srv.Name, "uri": uri})
	return h.startCall(c, nc)
}

// expandTemplate makes a URI of a resource template and its variables.
func expandTemplate(text string, vars map[string]any) (string, error) {
	tpl, err := uritemplate.New(text)
	if err != nil {
		return "", errors.New("The server's URI template cannot be read.")
	}
	values := uritemplate.Values{}
	for name, v := range vars {
		if s, ok := v.(string); ok {
			values.Set(name, uritemplate.String(s))
		}
	}
	return tpl.Expand(values)
}

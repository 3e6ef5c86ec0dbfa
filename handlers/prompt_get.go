package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/views"
)

// promptGet gets a prompt with the arguments from the server page's form:
// POST /servers/{server}/prompts/{prompt}. It goes through the round engine
// like a tool call, so the server may ask before it answers.
func (h *Handler) promptGet(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	prompt, err := h.catalog.Prompt(ctx, signedIn(ctx), srv, c.Param("prompt"))
	if err != nil {
		return err
	}
	values, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	form := promptForm(prompt)
	args := map[string]any{}
	if !form.Empty {
		content, ok := form.Decode(values)
		if !ok {
			vm := h.serverPageVM(ctx, srv)
			for i := range vm.Prompts {
				if vm.Prompts[i].Name == prompt.Name {
					vm.Prompts[i].Form = form
				}
			}
			vm.Errors = views.FormErrors(form)
			return render(c, http.StatusUnprocessableEntity, views.ServerPage(vm))
		}
		if content != nil {
			args = content
		}
	}
	raw, err := mcpclient.MarshalRaw(args)
	if err != nil {
		return err
	}
	nc, err := round.NewCall(srv, round.Start{Method: mcpclient.MethodGetPrompt, Target: prompt.Name, Title: prompt.Title, Arguments: raw}, round.Found{})
	if err != nil {
		return refusedStart(c, err)
	}
	nc.Owner = h.person(c)
	nc.Audit = h.userAudit(c, "call.started", "", map[string]any{"server": srv.Name, "prompt": prompt.Name})
	return h.startCall(c, nc)
}

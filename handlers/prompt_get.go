package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
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
			vm.Errors = round.FormErrors(form)
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
	return h.startCall(c, store.NewCall{
		ServerID: srv.ID, Owner: h.person(c), Method: mcpclient.MethodGetPrompt, Target: prompt.Name, Title: prompt.Title, Arguments: raw,
		Audit: h.userAudit(c, "call.started", "", map[string]any{"server": srv.Name, "prompt": prompt.Name}),
	})
}

// checkPromptArguments checks an API call's prompt arguments: strings, each
// one the prompt takes, and every required one given. It returns errors by
// argument name.
func checkPromptArguments(params []*mcp.PromptArgument, args map[string]any) map[string]string {
	errs := map[string]string{}
	known := map[string]bool{}
	for _, p := range params {
		if p == nil {
			continue
		}
		known[p.Name] = true
		v, given := args[p.Name]
		if s, ok := v.(string); p.Required && (!given || ok && strings.TrimSpace(s) == "") {
			errs[p.Name] = "Required."
		}
	}
	for name, v := range args {
		switch _, isString := v.(string); {
		case !known[name]:
			errs[name] = "This prompt takes no such argument."
		case !isString:
			errs[name] = "Prompt arguments are strings."
		}
	}
	return errs
}

package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// argsPrefix namespaces the tool form's posted names.
const argsPrefix = "arg."

// toolShow renders the form that starts a call, generated from the tool's
// inputSchema.
func (h *Handler) toolShow(c echo.Context) error {
	ctx := c.Request().Context()
	vm, _, err := h.toolPage(ctx, c.Param("server"), c.Param("tool"))
	if err != nil {
		return err
	}
	return h.renderToolPage(c, http.StatusOK, vm)
}

// renderToolPage shows the tool's form, with whom its rounds may be
// assigned to: read only when the form is shown, not when it is posted.
func (h *Handler) renderToolPage(c echo.Context, status int, vm *views.ToolPageVM) error {
	choices, err := h.assigneeChoices(c.Request().Context())
	if err != nil {
		return err
	}
	vm.Assignee.Choices = choices
	return render(c, status, views.ToolPage(*vm))
}

// toolPage reads the server and builds the form that starts a call of
// its tool.
func (h *Handler) toolPage(ctx context.Context, serverName, toolName string) (*views.ToolPageVM, *store.Server, error) {
	srv, err := h.store.ServerByName(ctx, serverName)
	if err != nil {
		return nil, nil, err
	}
	tool, err := h.catalog.Tool(ctx, signedIn(ctx), srv, toolName)
	if err != nil {
		return nil, nil, err
	}
	form, err := toolForm(tool)
	if err != nil {
		return nil, nil, err
	}
	if form.HasDateTime() {
		_ = form.SetTimeZone(views.ZoneOf(ctx).Name)
	}
	vm := &views.ToolPageVM{
		Server: srv.Name, Name: tool.Name, Title: cmp.Or(round.ToolTitle(tool), tool.Name), Description: tool.Description,
		Action: "/servers/" + url.PathEscape(srv.Name) + "/tools/" + url.PathEscape(tool.Name),
		Form:   form, Icon: iconHref(srv, tool),
	}
	if a := tool.Annotations; a != nil {
		vm.ReadOnly = a.ReadOnlyHint
		vm.Destructive = !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint
	}
	return vm, srv, nil
}

// toolForm builds the arguments form. Flat properties get fields; anything
// more complex gets a JSON box checked against the schema.
func toolForm(tool *mcp.Tool) (*forms.Form, error) {
	schema, err := json.Marshal(tool.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	form, err := forms.New(schema, argsPrefix)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrInvalid, Message: "This tool's input schema cannot be used: " + err.Error()}
	}
	return form, nil
}

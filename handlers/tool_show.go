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
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// argsPrefix namespaces the tool form's posted names.
const argsPrefix = "arg."

// toolShow renders the form that starts a call, generated from the tool's
// inputSchema.
func (h *Handler) toolShow(c echo.Context) error {
	vm, _, err := h.toolPage(c.Request().Context(), c.Param("server"), c.Param("tool"))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ToolPage(*vm))
}

func (h *Handler) toolPage(ctx context.Context, serverName, toolName string) (*views.ToolPageVM, *store.Server, error) {
	srv, err := h.store.ServerByName(ctx, serverName)
	if err != nil {
		return nil, nil, err
	}
	tool, err := h.engine.Tool(ctx, srv, toolName)
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
	choices, err := h.assigneeChoices(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &views.ToolPageVM{
		Server: srv.Name, Name: tool.Name, Title: cmp.Or(toolTitle(tool), tool.Name), Description: tool.Description,
		Action:   "/servers/" + url.PathEscape(srv.Name) + "/tools/" + url.PathEscape(tool.Name),
		Form:     form,
		Assignee: views.AssigneeVM{Choices: choices},
	}, srv, nil
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

// toolTitle is the title the server gave a tool, for people: its title, else
// its annotations' title; "" when it gave neither.
func toolTitle(t *mcp.Tool) string {
	if t.Title == "" && t.Annotations != nil {
		return t.Annotations.Title
	}
	return t.Title
}

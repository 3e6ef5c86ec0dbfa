package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/apiv1"
	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/catalog"
	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// callApproval decides on a call's approval from its page: the tool's own
// form, filled in with the arguments asked, and Approve or Decline. Arguments
// that do not fit show the page again with what was typed.
func (h *Handler) callApproval(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	values, err := formParams(c)
	if err != nil {
		return err
	}
	body := apiv1.ApprovalRequest{Decision: values.Get("decision"), Reason: strings.TrimSpace(values.Get("reason"))}
	var form *forms.Form
	if body.Decision == store.DecisionApprove {
		call, err := h.store.Call(ctx, id)
		if err != nil {
			return err
		}
		if form, err = h.approvalForm(ctx, call, nil); err != nil {
			return err
		}
		content, ok := form.Decode(values)
		if !ok {
			return h.renderApprovalAgain(c, id, form, views.FormErrors(form), body.Reason)
		}
		if body.Arguments, err = mcpclient.MarshalRaw(content); err != nil {
			return err
		}
	}
	_, err = h.decide(c, body)
	var se *round.StartError
	switch {
	case errors.As(err, &se):
		return h.renderApprovalAgain(c, id, form, []views.ErrorLink{{Href: "#approval-form", Message: se.Message}}, body.Reason)
	case errors.Is(err, store.ErrForbidden), errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrInvalid):
		var e *store.Error
		errors.As(err, &e)
		return h.renderNotice(c, errStatus(err), id, e.Message)
	case err != nil:
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/calls/"+id)
}

// errStatus is the status of a store error, as the error handler gives it.
func errStatus(err error) int {
	switch {
	case errors.Is(err, store.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict
	}
	return http.StatusUnprocessableEntity
}

// renderApprovalAgain shows the call page with the approval's form as it
// was posted, and why it was not taken.
func (h *Handler) renderApprovalAgain(c echo.Context, id string, form *forms.Form, errs []views.ErrorLink, reason string) error {
	vm, err := h.callVM(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if vm.Approval != nil && vm.Approval.Form != nil {
		vm.Approval.Form, vm.Approval.Errors, vm.Approval.ReasonValue = form, errs, reason
	}
	noPrefetch(c)
	return render(c, http.StatusUnprocessableEntity, views.CallPage(*vm))
}

// approvalForm is the tool's own form for the call's arguments, filled in
// with args when given; a tool the server never listed gets a JSON box.
func (h *Handler) approvalForm(ctx context.Context, call *store.Call, args json.RawMessage) (*forms.Form, error) {
	tool, err := h.approvalTool(ctx, call)
	if err != nil {
		return nil, err
	}
	var form *forms.Form
	if tool != nil {
		form, err = toolForm(tool)
	} else {
		form, err = forms.New(json.RawMessage("null"), argsPrefix)
	}
	if err != nil {
		return nil, err
	}
	if form.HasDateTime() {
		_ = form.SetTimeZone(views.ZoneOf(ctx).Name)
	}
	if len(args) > 0 {
		var content map[string]any
		if json.Unmarshal(args, &content) == nil {
			form.Fill(content)
		}
	}
	return form, nil
}

// approvalTool is the call's tool as its server last listed it, or nil.
func (h *Handler) approvalTool(ctx context.Context, call *store.Call) (*mcp.Tool, error) {
	facts, err := h.store.ServerApprovalFacts(ctx, call.ServerID)
	if err != nil {
		return nil, err
	}
	var tools []*mcp.Tool
	if json.Unmarshal(facts.Tools, &tools) != nil {
		return nil, nil
	}
	return catalog.FindTool(tools, call.Target), nil
}

// approvalVM is the call's approval for its page, as person sees it: with
// the form to decide when they may, or why they may not.
func (h *Handler) approvalVM(ctx context.Context, call *store.Call, person string) (*views.ApprovalVM, error) {
	if call.Method != mcpclient.MethodCallTool {
		return nil, nil
	}
	a, err := h.store.Approval(ctx, call.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	vm := &views.ApprovalVM{State: a.State, Reason: a.Reason, Caller: a.Caller, Tool: call.Target, Needs: a.Needs,
		Approved: a.Approved(), Waiting: a.Waiting(), ExpiresAt: a.ExpiresAt, Action: "/calls/" + call.ID + "/approval",
		Arguments: indentJSON(a.Arguments), Original: indentJSON(a.OriginalArguments)}
	vm.Changed = vm.Arguments != vm.Original
	if call.Agent != nil {
		vm.Agent = call.Agent.Label()
	}
	var rule approvals.Rule
	if json.Unmarshal(a.Rule, &rule) == nil {
		vm.Asks = rule.Asks()
	}
	for _, d := range a.Decisions {
		vm.Decisions = append(vm.Decisions, views.DecisionVM{By: d.By, For: d.For, Decision: d.Decision,
			Arguments: indentJSON(d.Arguments), Reason: d.Reason, At: d.At})
	}
	approvalHistoryVM(vm, a, call.ID, isAdmin(ctx))
	tool, err := h.approvalTool(ctx, call)
	if err != nil {
		return nil, err
	}
	if tool != nil {
		vm.Description, vm.Annotations = tool.Description, annotationLines(tool)
	}
	if a.State != store.ApprovalWaiting || person == "" {
		return vm, nil
	}
	if person == a.Caller {
		vm.Refusal = store.OwnCallMessage
		return vm, nil
	}
	if asked, err := h.store.AskedOfApproval(ctx, call.ID, person); err != nil || !asked {
		return vm, err
	}
	vm.Form, err = h.approvalForm(ctx, call, a.Arguments)
	return vm, err
}

// annotationLines words a tool's annotations for people; a tool without
// them is destructive by the spec's defaults, and says so.
func annotationLines(tool *mcp.Tool) []string {
	a := tool.Annotations
	if a == nil {
		return []string{"The tool says nothing of what it changes: by the spec's defaults it may change or delete things."}
	}
	var out []string
	switch {
	case a.ReadOnlyHint:
		out = append(out, "Read-only: the tool says it changes nothing.")
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		out = append(out, "The tool says it only adds, and deletes or overwrites nothing.")
	default:
		out = append(out, "Destructive: the tool may change or delete things.")
	}
	if a.IdempotentHint {
		out = append(out, "Idempotent: running it again with the same arguments changes nothing more.")
	}
	if a.OpenWorldHint != nil && *a.OpenWorldHint {
		out = append(out, "Open world: it reaches outside systems.")
	}
	return out
}

// indentJSON is JSON indented for people to read; "" for none.
func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}

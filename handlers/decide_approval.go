package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// mailApprovalChoices are the decisions of an approval mail's links, in
// the order the mail offers them (engine's approvalChoices).
var mailApprovalChoices = []struct{ label, decision string }{
	{"Approve", store.DecisionApprove}, {"Decline", store.DecisionDecline},
}

// maxReasonRunes bounds a decline's reason typed on a link's page.
const maxReasonRunes = 500

// approvalDecideVM is the page of an approval mail's link: the call's
// server, tool, caller and arguments, and the decision, or why nothing
// can be decided any more.
func (h *Handler) approvalDecideVM(c echo.Context, l *mailLink) (*views.DecideVM, error) {
	ctx := c.Request().Context()
	call, err := h.store.Call(ctx, l.CallID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, echo.NewHTTPError(http.StatusNotFound, msgLinkGone)
	}
	if err != nil {
		return nil, err
	}
	a, err := h.store.Approval(ctx, l.CallID)
	if err != nil {
		return nil, err
	}
	if l.Choice >= len(mailApprovalChoices) {
		return nil, echo.NewHTTPError(http.StatusNotFound, msgLinkForged)
	}
	choice := mailApprovalChoices[l.Choice]
	vm := &views.DecideVM{Action: "/decide/" + l.token, Server: call.ServerName, Target: call.Target, Owner: call.Owner,
		Message: "Rounds asks for your approval before this tool runs: the server has not seen this call.",
		Person:  l.Person, ExpiresAt: a.ExpiresAt, Choice: choice.label, Reason: choice.decision == store.DecisionDecline,
		Verb: "decided", Arguments: indentJSON(a.Arguments)}
	if call.Title != "" {
		vm.Target = call.Title
	}
	if u := user(c); u != nil {
		vm.CallHref = "/calls/" + call.ID
	}
	for _, d := range a.Decisions {
		if d.Epoch == a.Epoch && (d.By == l.Person || d.For == l.Person) {
			vm.AnsweredBy, vm.AnsweredAt = d.By, &d.At
		}
	}
	switch {
	case vm.AnsweredBy != "":
	case a.State == store.ApprovalApproved:
		vm.Gone = "This call was approved already."
	case a.State != store.ApprovalWaiting && a.Reason != "":
		vm.Gone = a.Reason
	case a.State != store.ApprovalWaiting:
		vm.Gone = store.ApprovalEndedMessage
	case !time.Now().Before(a.ExpiresAt):
		vm.Gone = store.ApprovalExpiredMessage
	case l.UsedAt != nil:
		vm.Gone = store.MailLinkUsedMessage
	}
	return vm, nil
}

// decideApproval approves or declines a call's approval with an
// approval mail's link, as the person mailed, through the same engine
// path as the API and the call's page (engine.Decide); the mail's links
// are marked used in the decision's transaction.
func (h *Handler) decideApproval(c echo.Context, l *mailLink) error {
	if l.Choice >= len(mailApprovalChoices) {
		return echo.NewHTTPError(http.StatusNotFound, msgLinkForged)
	}
	reason := strings.TrimSpace(c.FormValue("reason"))
	if utf8.RuneCountInString(reason) > maxReasonRunes {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "Say why in 500 characters or fewer.")
	}
	decision := mailApprovalChoices[l.Choice].decision
	if decision != store.DecisionDecline {
		reason = ""
	}
	_, err := h.engine.Decide(c.Request().Context(), store.ApprovalDecision{Call: l.CallID, By: l.Person,
		Decision: decision, Reason: reason, MailLink: l.Hash, Audit: h.auditEntry(c, "", "", "", nil)})
	status := http.StatusOK
	switch {
	case errors.Is(err, store.ErrConflict):
		status = http.StatusConflict
		if l.MailLink, err = h.store.MailLink(c.Request().Context(), l.Hash); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	vm, err := h.approvalDecideVM(c, l)
	if err != nil {
		return err
	}
	vm.Sent = status == http.StatusOK
	return renderDecided(c, status, vm)
}

package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// adminRoundExpire expires a pending round now; the call ends expired.
func (h *Handler) adminRoundExpire(c echo.Context) error {
	return h.adminRoundEnd(c, store.RoundExpired)
}

// adminRoundCancel cancels a pending round; the call ends cancelled.
func (h *Handler) adminRoundCancel(c echo.Context) error {
	return h.adminRoundEnd(c, store.RoundCancelled)
}

// maxReason bounds an operator's reason, which goes into the audit log and
// onto the person's page.
const maxReason = 500

// adminRoundEnd ends one call's waiting round. The first post (the button
// on the call page) asks to confirm and why; the confirmed post with a
// reason acts.
func (h *Handler) adminRoundEnd(c echo.Context, status string) error {
	ctx := c.Request().Context()
	seq, err := seqParam(c)
	if err != nil {
		return err
	}
	call, err := h.store.Call(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	reason, ok, vm := h.confirmEnd(c, status, []string{call.ID})
	if !ok {
		rows, err := h.store.AdminCallsByID(ctx, []string{call.ID})
		if err != nil {
			return err
		}
		vm.Action = c.Request().URL.Path
		vm.Back = "/admin/calls/" + call.ID
		for _, r := range rows {
			vm.Calls = append(vm.Calls, adminCallRow(r))
		}
		return render(c, confirmStatus(vm), views.AdminConfirmPage(vm))
	}
	err = h.endRound(c, call.ID, seq, call.ServerName, call.Owner, status, reason)
	if errors.Is(err, store.ErrConflict) {
		return h.adminCallNotice(c, http.StatusConflict, call.ID, err.Error())
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin/calls/"+call.ID+"?done="+status)
}

// adminCallsEnd expires or cancels the waiting rounds of the calls
// selected in the list, after the operator confirms and says why. A call
// no longer waiting by then is left as it is, and the notice says how many.
func (h *Handler) adminCallsEnd(c echo.Context) error {
	ctx := c.Request().Context()
	status := store.RoundExpired
	if c.FormValue("action") == "cancel" {
		status = store.RoundCancelled
	}
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	rows, err := h.store.AdminCallsByID(ctx, form["call"])
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return c.Redirect(http.StatusSeeOther, "/admin/calls?done=none")
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	reason, ok, vm := h.confirmEnd(c, status, ids)
	if !ok {
		vm.Action, vm.Back = "/admin/calls/end", "/admin/calls"
		for _, r := range rows {
			vm.Calls = append(vm.Calls, adminCallRow(r))
		}
		return render(c, confirmStatus(vm), views.AdminConfirmPage(vm))
	}
	ended, skipped := 0, 0
	for _, r := range rows {
		err := h.endRound(c, r.ID, r.CurrentSeq, r.ServerName, r.Owner, status, reason)
		switch {
		case err == nil:
			ended++
		case errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound):
			skipped++
		default:
			return err
		}
	}
	q := url.Values{"done": {status}, "n": {strconv.Itoa(ended)}, "skipped": {strconv.Itoa(skipped)}}
	return c.Redirect(http.StatusSeeOther, "/admin/calls?"+q.Encode())
}

// confirmEnd reads the confirmation and the reason of an operator's
// request to end rounds. When either is missing it returns the page that
// asks for them (its error set when a confirmed post lacked a reason).
func (h *Handler) confirmEnd(c echo.Context, status string, ids []string) (string, bool, views.AdminConfirmVM) {
	reason := strings.TrimSpace(c.FormValue("reason"))
	confirmed := c.FormValue("confirm") == "yes"
	if confirmed && reason != "" && utf8.RuneCountInString(reason) <= maxReason {
		return reason, true, views.AdminConfirmVM{}
	}
	n := len(ids)
	vm := views.AdminConfirmVM{IDs: ids, Reason: reason, Verb: "expire"}
	if status == store.RoundCancelled {
		vm.Verb, vm.Danger = "cancel", true
		vm.Title = oneOrMany(n, "Cancel this call?", "Cancel these "+strconv.Itoa(n)+" calls?")
		vm.Explain = oneOrMany(n, "Its waiting round ends now and the call ends cancelled. ", "Their waiting rounds end now and the calls end cancelled. ") +
			"Nothing more is sent to the server; the person's page says an administrator cancelled it, and why."
		vm.Button = oneOrMany(n, "Cancel the call", "Cancel "+strconv.Itoa(n)+" calls")
	} else {
		vm.Title = oneOrMany(n, "Expire this waiting round?", "Expire these "+strconv.Itoa(n)+" waiting rounds?")
		vm.Explain = oneOrMany(n, "It can no longer be answered and its call ends expired. ", "They can no longer be answered and their calls end expired. ") +
			"The person's page says an administrator expired it, and why."
		vm.Button = oneOrMany(n, "Expire the round", "Expire "+strconv.Itoa(n)+" rounds")
	}
	switch {
	case confirmed && reason == "":
		vm.Error = "Say why, for the audit log and the person."
	case utf8.RuneCountInString(reason) > maxReason:
		vm.Error = "The reason is " + strconv.Itoa(utf8.RuneCountInString(reason)) + " characters long; keep it to 500."
	}
	return "", false, vm
}

func confirmStatus(vm views.AdminConfirmVM) int {
	if vm.Error != "" {
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}

func oneOrMany(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// endRound ends one round as an operator, with the reason in the audit
// entry written in the same transaction.
func (h *Handler) endRound(c echo.Context, callID string, seq int, server, owner, status, reason string) error {
	entry := h.auditEntry(c, h.person(c), "admin.round."+status, callID,
		map[string]any{"seq": seq, "server": server, "owner": owner, "reason": reason})
	if err := h.store.EndRound(c.Request().Context(), callID, seq, status, reason, entry); err != nil {
		return err
	}
	h.log.InfoContext(c.Request().Context(), "round ended by an admin", "call_id", callID, "seq", seq, "status", status)
	return nil
}

// endNotice says what the last expiry or cancellation of several calls
// did.
func endNotice(q url.Values) string {
	n, _ := strconv.Atoi(q.Get("n"))
	skipped, _ := strconv.Atoi(q.Get("skipped"))
	var msg string
	switch q.Get("done") {
	case "none":
		return "No call was selected, so nothing was done."
	case store.RoundExpired:
		msg = oneOrMany(n, "Expired 1 waiting round: its call ended expired", "Expired "+strconv.Itoa(n)+" waiting rounds: their calls ended expired")
	case store.RoundCancelled:
		msg = oneOrMany(n, "Cancelled 1 call", "Cancelled "+strconv.Itoa(n)+" calls")
	default:
		return ""
	}
	msg += ", and the people's pages say so, with your reason, which is in the audit log."
	if n == 0 {
		msg = "Nothing was ended."
	}
	if skipped > 0 {
		msg += oneOrMany(skipped, " 1 selected call was no longer waiting and was left as it was.",
			" "+strconv.Itoa(skipped)+" selected calls were no longer waiting and were left as they were.")
	}
	return msg
}

// adminCallRetry sends a failed call's last request again with its stored
// answers.
func (h *Handler) adminCallRetry(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.store.Call(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	err = h.store.RetryCall(ctx, call.ID)
	if errors.Is(err, store.ErrConflict) {
		return h.adminCallNotice(c, http.StatusConflict, call.ID, err.Error())
	}
	if err != nil {
		return err
	}
	h.audit(c, "admin.call.retried", call.ID, map[string]any{"server": call.ServerName, "owner": call.Owner})
	return c.Redirect(http.StatusSeeOther, "/admin/calls/"+call.ID+"?done=retried")
}

func (h *Handler) adminCallNotice(c echo.Context, status int, id, msg string) error {
	vm, err := h.adminCallVM(c.Request().Context(), id)
	if err != nil {
		return err
	}
	vm.ErrorNotice = msg
	return render(c, status, views.AdminCallPage(*vm))
}

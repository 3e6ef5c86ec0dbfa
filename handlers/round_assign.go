package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// notYoursToHandOn is the 403 of a person who may see the round but not
// hand it on: its owner, when it is asked of someone else.
const notYoursToHandOn = "Only whom this round is asked of, their delegate while they are away, or an admin may hand it on."

// apiRoundAssign hands a waiting round on: POST
// /api/v1/calls/{id}/rounds/{seq}/assign {"to": NAME}.
func (h *Handler) apiRoundAssign(c echo.Context) error {
	seq, err := seqParam(c)
	if err != nil {
		return err
	}
	var body struct {
		To string `json:"to"`
	}
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil || strings.TrimSpace(body.To) == "" {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be a JSON object with "to": a person's name, or team:NAME.`)
	}
	call, err := h.handOn(c, seq, strings.TrimSpace(body.To))
	if err != nil {
		return err
	}
	rounds, err := h.store.RoundsFrom(c.Request().Context(), call.ID, seq)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, h.apiCallOf(call, rounds))
}

// roundAssign hands a waiting round on from its page; a refusal shows the
// page again with the name typed and why.
func (h *Handler) roundAssign(c echo.Context) error {
	ctx := c.Request().Context()
	seq, err := seqParam(c)
	if err != nil {
		return err
	}
	to := strings.TrimSpace(c.FormValue("to"))
	call, err := h.handOn(c, seq, to)
	var se *store.Error
	if errors.As(err, &se) && (errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrConflict)) {
		vm, verr := h.callVM(ctx, c.Param("id"))
		if verr != nil {
			return verr
		}
		if vm.HandOn != nil {
			vm.HandOn.Value, vm.HandOn.Error = to, se.Message
		} else {
			vm.Notice = se.Message
		}
		return render(c, http.StatusUnprocessableEntity, views.CallPage(*vm))
	}
	if err != nil {
		return err
	}
	// Handed on, the round may be no longer the person's to see.
	if ok, err := h.mayOpen(ctx, call); err != nil || !ok {
		return c.Redirect(http.StatusSeeOther, "/inbox")
	}
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}

// handOn gives round seq of the call in the path to to, as the signed-in
// person, if they may (mayHandOn).
func (h *Handler) handOn(c echo.Context, seq int, to string) (*store.Call, error) {
	ctx := c.Request().Context()
	by := h.person(c)
	return h.store.HandOn(ctx, store.HandOver{CallID: c.Param("id"), Seq: seq, To: to, By: by,
		Check: func(at store.HandingOn) error { return mayHandOn(ctx, at) },
		Audit: h.auditEntry(c, by, "round.handed_on", c.Param("id"), nil)})
}

// mayHandOn says whether the signed-in person may hand the round on: whom
// the call's rounds are asked of (a person, a member of the team, or the
// owner of a call given to nobody), their delegate while they are away,
// or an admin; the owner too for a URL-mode question, which is theirs
// (and is then refused for its kind). Its owner, when the call is given
// to someone else, is refused with a sentence; anyone else does not see
// the call.
func mayHandOn(ctx context.Context, at store.HandingOn) error {
	u, _ := ctx.Value(userCtxKey{}).(*store.User)
	switch {
	case u == nil:
		return notFoundErr("call")
	case u.IsAdmin || at.Assigned || at.Delegating != "" || (at.Call.Assignee == nil && at.Call.Owner == u.Name):
		return nil
	case at.Round != nil && at.Round.Asks != nil && *at.Round.Asks == store.AsksOwner && at.Call.Owner == u.Name:
		return nil // asked of them: told why it stays theirs
	case at.Call.Owner == u.Name:
		return echo.NewHTTPError(http.StatusForbidden, notYoursToHandOn)
	}
	return notFoundErr("call")
}

// handOnVM is the round page's hand-over offer for the signed-in person,
// nil when they may not hand round r on.
func (h *Handler) handOnVM(ctx context.Context, call *store.Call, r *store.Round) (*views.HandOnVM, error) {
	u, _ := ctx.Value(userCtxKey{}).(*store.User)
	if u == nil {
		return nil, nil
	}
	at := store.HandingOn{Call: call, Round: r}
	if call.Assignee != nil {
		var err error
		if at.Assigned, err = h.store.IsAssignee(ctx, *call.Assignee, u.Name); err != nil {
			return nil, err
		}
	}
	if !at.Assigned && !u.IsAdmin {
		forWhom, ok, err := h.store.ActingFor(ctx, u.Name, []string{store.AskedOf(call)}, time.Now())
		if err != nil {
			return nil, err
		}
		if ok && forWhom != u.Name {
			at.Delegating = forWhom
		}
	}
	if mayHandOn(ctx, at) != nil {
		return nil, nil
	}
	vm := &views.HandOnVM{Action: "/calls/" + call.ID + "/rounds/" + strconv.Itoa(r.Seq) + "/assign",
		AskedOf: store.AskedOf(call)}
	if r.AsksURL() {
		vm.Refused = store.URLModeHandOnMessage
		return vm, nil
	}
	choices, err := h.assigneeChoices(ctx)
	if err != nil {
		return nil, err
	}
	vm.Choices = choices
	return vm, nil
}

// handedVM is round r's last hand-over, nil when it was never handed on.
func handedVM(r *store.Round) *views.HandedVM {
	if r.HandedAt == nil {
		return nil
	}
	return &views.HandedVM{From: deref(r.HandedFrom), To: deref(r.HandedTo), By: deref(r.HandedBy), At: *r.HandedAt}
}

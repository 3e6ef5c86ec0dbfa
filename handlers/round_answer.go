package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// roundAnswer takes the answers to a round posted from the call page. A
// failed check re-renders the round with what was typed; a round that was
// already answered (another tab, a double click) says so.
func (h *Handler) roundAnswer(c echo.Context) error {
	ctx := c.Request().Context()
	seq, err := seqParam(c)
	if err != nil {
		return err
	}
	values, err := formParams(c)
	if err != nil {
		return err
	}
	// Listening starts before the answer is stored, so the server's reply
	// is heard however soon it comes (see settle).
	w := h.watch(c.Param("id"), settleWait)
	if w != nil {
		defer w.stop()
	}
	call, r, a, err := h.answer(c, seq, func(call *store.Call, r *store.Round) (*round.Answer, error) {
		return round.FormAnswer(call, r, values)
	})
	switch {
	case errors.Is(err, round.ErrNotWaiting):
		qs, err := round.Parse(r)
		if err != nil {
			return err
		}
		return h.renderUnsent(c, c.Param("id"), h.notWaiting(ctx, &store.Call{ID: c.Param("id")}, r), qs, values)
	case errors.Is(err, errUnfit):
		return h.renderInvalid(c, c.Param("id"), r, a.Questions, values, a.Actions)
	case errors.Is(err, store.ErrConflict):
		var qs []round.Question
		if a != nil {
			qs = a.Questions
		}
		return h.renderUnsent(c, c.Param("id"), err.Error(), qs, values)
	case err != nil:
		return err
	}
	w.settle(ctx, call)
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}

// answer stores the signed-in person's answer to round seq of the call in
// the path as check decides it (round.FormAnswer, round.APIAnswer), and
// has the retry sent at once, in one call to the engine (engine.Answer): the
// call and the round are read with the person's right to answer, the
// answer is checked, and what it decides is stored with its audit entry,
// in one transaction. It returns the round as read and the checked answer;
// round.ErrNotWaiting when the round takes no answer, and errUnfit,
// storing nothing, when the answer does not fit.
func (h *Handler) answer(c echo.Context, seq int, check func(*store.Call, *store.Round) (*round.Answer, error)) (*store.Call, *store.Round, *round.Answer, error) {
	ctx := c.Request().Context()
	person := h.person(c)
	var (
		r *store.Round
		a *round.Answer
	)
	call, err := h.engine.Answer(ctx, store.Answer{CallID: c.Param("id"), Seq: seq, Person: person, Decide: func(at store.Answering) (store.Decision, error) {
		// As mayOpen decides, from what the transaction read.
		if !mayAccess(ctx, at.Call.Owner) && !at.Assigned && at.Delegating == "" {
			return store.Decision{}, notFoundErr("call")
		}
		r = at.Round
		var err error
		if a, err = check(at.Call, at.Round); err != nil {
			return store.Decision{}, err
		}
		if !a.Fits() {
			return store.Decision{}, errUnfit
		}
		forWhom := at.For(person)
		return store.Decision{Responses: a.Responses, By: person, For: forWhom, Refusal: a.Refusal,
			Audit: []store.AuditEntry{h.answerAudit(c, at.Call, at.Round.Seq, a.Responses, forWhom)}}, nil
	}})
	return call, r, a, err
}

// errUnfit rolls back an answer that does not fit; the caller says why.
var errUnfit = errors.New("the answer does not fit")

// renderInvalid shows the round again with what was typed and what needs
// another look, and keeps what was typed as a draft, should the person
// leave now.
func (h *Handler) renderInvalid(c echo.Context, callID string, r *store.Round, qs []round.Question, values url.Values, actions []string) error {
	ctx := c.Request().Context()
	if draft, size := draftFields(values, len(qs)); size <= maxDraftBytes {
		if err := h.store.SaveDraft(ctx, callID, r.Seq, draft); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	vm, call, err := h.callView(ctx, callID)
	if err != nil {
		return err
	}
	vm.Current = currentRoundVM(call, r, qs, actions)
	if len(vm.Current.Errors) == 0 {
		vm.Current.Errors = []views.ErrorLink{{Href: "#" + round.ActionID(0), Message: "Some answers need another look."}}
	}
	noPrefetch(c)
	return render(c, http.StatusUnprocessableEntity, views.CallPage(*vm))
}

// ownedRound loads the call and round named in the path, in one read.
func (h *Handler) ownedRound(c echo.Context) (*store.Call, *store.Round, error) {
	ctx := c.Request().Context()
	seq, err := seqParam(c)
	if err != nil {
		return nil, nil, err
	}
	call, rounds, err := h.store.CallAndRounds(ctx, c.Param("id"), seq)
	if err != nil {
		return nil, nil, err
	}
	if ok, err := h.mayOpen(ctx, call); err != nil {
		return nil, nil, err
	} else if !ok {
		return nil, nil, notFoundErr("call")
	}
	for i := range rounds {
		if rounds[i].Seq == seq {
			return call, &rounds[i], nil
		}
	}
	return nil, nil, store.ErrNotFound
}

// notWaiting says why a round cannot be answered, and tidies up a round
// found past its deadline.
func (h *Handler) notWaiting(ctx context.Context, call *store.Call, round *store.Round) string {
	if round.Status == store.RoundExpired {
		if err := h.store.ExpireRound(ctx, h.settings.InstanceID, call.ID, round.Seq); err != nil {
			h.log.WarnContext(ctx, "expiring a round past its deadline", "err", err)
		}
		return "This round expired before it was answered."
	}
	return notPendingMessage(round)
}

// renderNotice shows the call page with a message at the top.
func (h *Handler) renderNotice(c echo.Context, status int, callID, notice string) error {
	vm, err := h.callVM(c.Request().Context(), callID)
	if err != nil {
		return err
	}
	vm.Notice = notice
	noPrefetch(c)
	return render(c, status, views.CallPage(*vm))
}

// renderUnsent shows the call page with why the answers could not be sent
// (the round was answered elsewhere, or expired), and what the person
// typed, so that nothing they wrote is lost.
func (h *Handler) renderUnsent(c echo.Context, callID, notice string, qs []round.Question, values url.Values) error {
	vm, err := h.callVM(c.Request().Context(), callID)
	if err != nil {
		return err
	}
	vm.Notice = notice
	vm.Unsent = views.Unsent(qs, values)
	noPrefetch(c)
	return render(c, http.StatusConflict, views.CallPage(*vm))
}

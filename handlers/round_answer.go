package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// roundAnswer takes the answers to a round posted from the call page. A
// failed check re-renders the round with what was typed; a round that was
// already answered (another tab, a double click) says so.
func (h *Handler) roundAnswer(c echo.Context) error {
	ctx := c.Request().Context()
	person := h.person(c)
	call, round, err := h.ownedRound(c, person)
	if err != nil {
		return err
	}
	values, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	qs, err := questionsOf(round)
	if err != nil {
		return err
	}
	if round.Status != store.RoundPending || round.Seq != call.CurrentSeq {
		return h.renderUnsent(c, call.ID, h.notWaiting(ctx, call, round), qs, values)
	}
	withRoots(qs, call)
	responses, actions, ok := decodeAnswers(qs, values)
	if !ok {
		// Keep what was typed, as a draft, should the person leave now.
		if draft, size := draftFields(values, len(qs)); size <= maxDraftBytes {
			if err := h.store.SaveDraft(ctx, call.ID, round.Seq, draft); err != nil && !errors.Is(err, store.ErrConflict) {
				return err
			}
		}
		vm, err := h.callVM(ctx, call.ID, person)
		if err != nil {
			return err
		}
		if vm.Current, err = currentRoundVM(call, round, qs, actions); err != nil {
			return err
		}
		if len(vm.Current.Errors) == 0 {
			vm.Current.Errors = []views.ErrorLink{{Href: "#" + actionID(0), Message: "Some answers need another look."}}
		}
		noPrefetch(c)
		return render(c, http.StatusUnprocessableEntity, views.CallPage(*vm))
	}
	_, err = h.answerRound(c, call, round, qs, responses, person)
	if errors.Is(err, store.ErrConflict) {
		return h.renderUnsent(c, call.ID, err.Error(), qs, values)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}

// answerRound stores a round's answers and sends them on, with the audit
// entry in the same transaction; a declined sampling request instead ends
// the call with no retry, except on a held session, where the server waits
// for the refusal. It returns the call's new status when it knows it.
func (h *Handler) answerRound(c echo.Context, call *store.Call, round *store.Round, qs []question, responses json.RawMessage, person string) (store.CallChange, error) {
	ctx := c.Request().Context()
	entry := h.answerAudit(c, call, round.Seq, responses)
	if round.HeldBy == nil && refused(qs, responses) {
		return store.CallChange{}, h.store.RefuseRound(ctx, call.ID, round.Seq, responses, person, refusedSampling, entry)
	}
	return h.store.AnswerRoundChange(ctx, call.ID, round.Seq, responses, person, entry)
}

// ownedRound loads the call and round named in the path, in one read.
func (h *Handler) ownedRound(c echo.Context, person string) (*store.Call, *store.Round, error) {
	ctx := c.Request().Context()
	seq, err := strconv.Atoi(c.Param("seq"))
	if err != nil || seq < 1 {
		return nil, nil, store.ErrNotFound
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
		if err := h.store.ExpireRound(ctx, h.engine.Config().InstanceID, call.ID, round.Seq); err != nil {
			h.log.WarnContext(ctx, "expiring a round past its deadline", "err", err)
		}
		return "This round expired before it was answered."
	}
	return notPendingMessage(round)
}

// renderNotice shows the call page with a message at the top.
func (h *Handler) renderNotice(c echo.Context, status int, callID, notice string) error {
	vm, err := h.callVM(c.Request().Context(), callID, h.person(c))
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
func (h *Handler) renderUnsent(c echo.Context, callID, notice string, qs []question, values url.Values) error {
	vm, err := h.callVM(c.Request().Context(), callID, h.person(c))
	if err != nil {
		return err
	}
	vm.Notice = notice
	for i := range qs {
		q := &qs[i]
		u := views.UnsentVM{Question: questionLabel(*q)}
		switch {
		case q.Sampling != nil:
			if reply := postedReply(values, i); reply != "" {
				u.Lines = []views.AnswerLine{{Label: "Your reply", Value: reply}}
			}
		case q.Form != nil && values.Get(actionName(i)) != actionDecline && values.Get(actionName(i)) != actionCancel:
			if content, _ := q.Form.Decode(values); len(content) > 0 {
				if raw, err := marshalNoEscape(content); err == nil {
					u.Lines = answerLines(q.Form, raw)
				}
			}
		}
		if len(u.Lines) > 0 {
			vm.Unsent = append(vm.Unsent, u)
		}
	}
	noPrefetch(c)
	return render(c, http.StatusConflict, views.CallPage(*vm))
}

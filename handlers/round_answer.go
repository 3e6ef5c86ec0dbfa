package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// roundAnswer takes the answers to a round posted from the call page. A
// failed check re-renders the round with what was typed; a round that was
// already answered (another tab, a double click) says so.
func (h *Handler) roundAnswer(c echo.Context) error {
	ctx := c.Request().Context()
	person := h.person(c)
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
	// Read, check and store in one transaction, as the API does.
	var (
		round   *store.Round
		qs      []question
		actions []string
		stale   bool
		invalid bool
	)
	call, err := h.store.AnswerChecked(ctx, c.Param("id"), seq, func(call *store.Call, r *store.Round) (store.Decision, error) {
		if ok, err := h.mayOpen(ctx, call); err != nil {
			return store.Decision{}, err
		} else if !ok {
			return store.Decision{}, notFoundErr("call")
		}
		round = r
		var err error
		if qs, err = questionsOf(r); err != nil {
			return store.Decision{}, err
		}
		if r.Status != store.RoundPending || r.Seq != call.CurrentSeq {
			stale = true
			return store.Decision{}, errStale
		}
		withRoots(qs, call)
		var responses json.RawMessage
		var ok bool
		if responses, actions, ok = decodeAnswers(qs, values); !ok {
			invalid = true
			return store.Decision{}, errStale
		}
		return h.decision(c, call, r, qs, responses, person), nil
	})
	switch {
	case stale:
		return h.renderUnsent(c, c.Param("id"), h.notWaiting(ctx, &store.Call{ID: c.Param("id")}, round), qs, values)
	case invalid:
		return h.renderInvalid(c, c.Param("id"), round, qs, values, actions)
	case errors.Is(err, store.ErrConflict):
		return h.renderUnsent(c, c.Param("id"), err.Error(), qs, values)
	case err != nil:
		return err
	}
	w.settle(ctx, call)
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}

// decision is what answering round with responses stores: the answers,
// with their audit entry in the same transaction, or, for a sampling
// request declined (not on a held session, where the server waits for the
// refusal), the call's end with no retry.
func (h *Handler) decision(c echo.Context, call *store.Call, round *store.Round, qs []question, responses json.RawMessage, person string) store.Decision {
	d := store.Decision{Responses: responses, By: person, Audit: []store.AuditEntry{h.answerAudit(c, call, round.Seq, responses)}}
	if round.HeldBy == nil && refused(qs, responses) {
		d.Refusal = refusedSampling
	}
	return d
}

// renderInvalid shows the round again with what was typed and what needs
// another look, and keeps what was typed as a draft, should the person
// leave now.
func (h *Handler) renderInvalid(c echo.Context, callID string, round *store.Round, qs []question, values url.Values, actions []string) error {
	ctx := c.Request().Context()
	if draft, size := draftFields(values, len(qs)); size <= maxDraftBytes {
		if err := h.store.SaveDraft(ctx, callID, round.Seq, draft); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	vm, call, err := h.callView(ctx, callID)
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

// ownedRound loads the call and round named in the path, in one read, if
// the signed-in person may open the call (see mayOpen).
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
		if err := h.store.ExpireRound(ctx, h.engine.Config().InstanceID, call.ID, round.Seq); err != nil {
			h.log.WarnContext(ctx, "expiring a round past its deadline", "err", err)
		}
		return store.RoundExpiredMessage
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
				if raw, err := mcpclient.MarshalRaw(content); err == nil {
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

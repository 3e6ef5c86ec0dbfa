package handlers

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// callShow renders the call page: status, the current round's questions,
// earlier rounds and the result.
func (h *Handler) callShow(c echo.Context) error {
	vm, err := h.callVM(c.Request().Context(), c.Param("id"), h.person(c))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.CallPage(*vm))
}

// callLive renders the part of the call page that htmx refreshes while the
// server works.
func (h *Handler) callLive(c echo.Context) error {
	vm, err := h.callVM(c.Request().Context(), c.Param("id"), h.person(c))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.CallBody(*vm))
}

// ownedCall returns a call if person may see it; anyone else gets the same
// not-found as for a call that does not exist.
func (h *Handler) ownedCall(ctx context.Context, id, person string) (*store.Call, error) {
	call, err := h.store.Call(ctx, id)
	if err != nil {
		return nil, err
	}
	if call.Owner != person {
		return nil, store.ErrNotFound
	}
	return call, nil
}

func (h *Handler) callVM(ctx context.Context, id, person string) (*views.CallVM, error) {
	call, err := h.ownedCall(ctx, id, person)
	if err != nil {
		return nil, err
	}
	rounds, err := h.store.Rounds(ctx, call.ID)
	if err != nil {
		return nil, err
	}
	href := "/calls/" + call.ID
	vm := &views.CallVM{
		ID: call.ID, Href: href, Server: call.ServerName, Method: call.Method, Target: call.Target,
		Status: call.Status, Created: call.CreatedAt, Retryable: call.Retryable,
		RetryHref: href + "/retry", LiveHref: href + "/live",
		Live: call.Status == store.CallQueued || call.Status == store.CallRunning,
	}
	if call.Error != nil {
		vm.Error = *call.Error
	}
	for i := range rounds {
		r := &rounds[i]
		if r.Seq == call.CurrentSeq && call.Status == store.CallInputRequired && r.Status == store.RoundPending {
			current, err := currentRoundVM(call, r, nil, nil)
			if err != nil {
				return nil, err
			}
			vm.Current = current
			continue
		}
		vm.History = append(vm.History, views.RoundVM{
			Seq: r.Seq, Status: r.Status, AnsweredAt: r.AnsweredAt, ExpiresAt: r.ExpiresAt,
			Questions: answeredVMs(r, call.ServerName),
		})
	}
	if call.Status == store.CallComplete {
		vm.Result = resultVM(call.Method, call.Result)
	}
	return vm, nil
}

// currentRoundVM builds the answer form of a pending round. qs and actions
// carry what the person posted, when re-rendering after a failed check.
func currentRoundVM(call *store.Call, r *store.Round, qs []question, actions []string) (*views.RoundVM, error) {
	if qs == nil {
		var err error
		if qs, err = questionsOf(r); err != nil {
			return nil, err
		}
	}
	return &views.RoundVM{
		Seq:       r.Seq,
		Action:    "/calls/" + call.ID + "/rounds/" + strconv.Itoa(r.Seq),
		Status:    r.Status,
		ExpiresAt: r.ExpiresAt,
		Questions: questionVMs(qs, call.ServerName, actions),
		Errors:    errorLinks(qs),
	}, nil
}

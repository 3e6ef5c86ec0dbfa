package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// decideAnswer answers a round with the choice a mail's link stands for,
// as the person mailed, through the same engine path as the round's page
// (engine.Answer): the server gets the inputResponses the page would have
// sent. The mail's links are marked used in the answer's transaction, so
// they answer once; a round answered or ended meanwhile says so and
// changes nothing.
func (h *Handler) decideAnswer(c echo.Context) error {
	l, err := h.openMailLink(c)
	if err != nil {
		return err
	}
	if l.Kind == maillink.KindApproval {
		return h.decideApproval(c, l)
	}
	_, err = h.engine.Answer(c.Request().Context(), store.Answer{CallID: l.CallID, Seq: l.Seq, Person: l.Person,
		Decide: func(at store.Answering) (store.Decision, error) {
			if at.Call.Owner != l.Person && !at.Assigned && at.Delegating == "" {
				return store.Decision{}, echo.NewHTTPError(http.StatusForbidden, msgLinkNoMore)
			}
			if l.UsedAt != nil {
				return store.Decision{}, round.ErrNotWaiting
			}
			a, err := round.MailAnswer(at.Call, at.Round, l.Choice)
			if err != nil {
				return store.Decision{}, err
			}
			if !a.Fits() {
				return store.Decision{}, errUnfit
			}
			forWhom := at.For(l.Person)
			entry := h.answerAuditAs(c, l.Person, at.Call, at.Round.Seq, a.Responses, forWhom)
			entry.Detail["mail_link"] = true
			return store.Decision{Responses: a.Responses, By: l.Person, For: forWhom, Refusal: a.Refusal, MailLink: l.Hash,
				Audit: []store.AuditEntry{entry}}, nil
		}})
	status := http.StatusOK
	switch {
	case errors.Is(err, round.ErrNotWaiting) || errors.Is(err, store.ErrConflict):
		status = http.StatusConflict
		if l.MailLink, err = h.store.MailLink(c.Request().Context(), l.Hash); err != nil {
			return err
		}
	case errors.Is(err, round.ErrNoSuchChoice) || errors.Is(err, errUnfit):
		return echo.NewHTTPError(http.StatusNotFound, msgLinkForged)
	case err != nil:
		return err
	}
	vm, err := h.decideVM(c, l)
	if err != nil {
		return err
	}
	vm.Sent = status == http.StatusOK
	return renderDecided(c, status, vm)
}

// renderDecided shows a link's page after its POST.
func renderDecided(c echo.Context, status int, vm *views.DecideVM) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	noPrefetch(c)
	return render(c, status, views.DecidePage(*vm))
}

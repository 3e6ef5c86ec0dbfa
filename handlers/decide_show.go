package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// Refusals of a mail's link.
const (
	msgLinkForged = "This link is not one Rounds made, or it was changed on its way. Open the round from your inbox instead."
	msgLinkGone   = "This link no longer leads anywhere: its call was deleted."
	msgLinkNoMore = "This round is no longer yours to answer: it was given to someone else."
)

// mailLink is a mail's link as its path names it, its signature checked,
// and what the store keeps of it.
type mailLink struct {
	maillink.Link
	*store.MailLink
	token string
}

// openMailLink reads the link in the path: refused when it was not made
// here or was changed, and, unless MAIL_DECISIONS=link, when the person
// signed in is not the one it was mailed to.
func (h *Handler) openMailLink(c echo.Context) (*mailLink, error) {
	if h.settings.MailLinks == nil {
		return nil, echo.NewHTTPError(http.StatusNotFound, msgLinkForged)
	}
	token := c.Param("token")
	l, err := h.settings.MailLinks.Open(token)
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusNotFound, msgLinkForged)
	}
	ml, err := h.store.MailLink(c.Request().Context(), l.Hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, echo.NewHTTPError(http.StatusNotFound, msgLinkGone)
	}
	if err != nil {
		return nil, err
	}
	if u := user(c); h.settings.MailDecisions != maillink.ByLink && (u == nil || u.Name != ml.Person) {
		who := "someone else"
		if u != nil {
			who = u.Name
		}
		return nil, echo.NewHTTPError(http.StatusForbidden, "This link was mailed to "+ml.Person+", and only "+ml.Person+
			" may answer with it. You are signed in as "+who+": sign out, and sign in as "+ml.Person+" to use it.")
	}
	return &mailLink{Link: l, MailLink: ml, token: token}, nil
}

// decideShow shows what a mail's link will answer, with a button: only
// that button's POST answers. A GET, however often it comes (a mail
// scanner's, a preview's), changes nothing.
func (h *Handler) decideShow(c echo.Context) error {
	l, err := h.openMailLink(c)
	if err != nil {
		return err
	}
	vm, err := h.decideVM(c, l)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	noPrefetch(c)
	return render(c, http.StatusOK, views.DecidePage(*vm))
}

// decideVM is the page of link l, as the call and its round (or its
// approval) are now.
func (h *Handler) decideVM(c echo.Context, l *mailLink) (*views.DecideVM, error) {
	if l.Kind == maillink.KindApproval {
		return h.approvalDecideVM(c, l)
	}
	ctx := c.Request().Context()
	call, rounds, err := h.store.CallAndRounds(ctx, l.CallID, l.Seq)
	if errors.Is(err, store.ErrNotFound) || err == nil && (len(rounds) == 0 || rounds[0].Seq != l.Seq) {
		return nil, echo.NewHTTPError(http.StatusNotFound, msgLinkGone)
	}
	if err != nil {
		return nil, err
	}
	r := &rounds[0]
	qs, err := round.Parse(r)
	if err != nil {
		return nil, err
	}
	message, field := round.MailQuestion(qs)
	vm := &views.DecideVM{Action: "/decide/" + l.token, Server: call.ServerName, Target: call.Target, Owner: call.Owner,
		Message: message, Field: field, Person: l.Person, ExpiresAt: r.ExpiresAt, Verb: "answered"}
	if call.Title != "" {
		vm.Target = call.Title
	}
	if u := user(c); u != nil && (u.Name == call.Owner || u.IsAdmin || u.Name == l.Person) {
		vm.CallHref = "/calls/" + call.ID
	}
	choices := round.MailChoices(qs)
	if l.Choice < len(choices) {
		vm.Choice = choices[l.Choice].Label
	}
	switch {
	case r.Status == store.RoundAnswered && r.AnsweredBy != nil:
		vm.AnsweredBy, vm.AnsweredAt = *r.AnsweredBy, r.AnsweredAt
	case r.Status == store.RoundExpired || r.Status == store.RoundPending && !time.Now().Before(r.ExpiresAt):
		vm.Gone = "This round expired before it was answered."
	case r.Status != store.RoundPending || call.CurrentSeq != r.Seq || call.Status != store.CallInputRequired:
		vm.Gone = "This round no longer waits for answers."
	case l.UsedAt != nil:
		vm.Gone = store.MailLinkUsedMessage
	case vm.Choice == "":
		return nil, echo.NewHTTPError(http.StatusNotFound, msgLinkForged)
	}
	return vm, nil
}

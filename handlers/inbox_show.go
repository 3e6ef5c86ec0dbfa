package handlers

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// The inbox's Lately settled lists this many rounds, of this long ago at most.
const (
	settledShown = 10
	settledFor   = 7 * 24 * time.Hour
)

// inboxShow lists the rounds waiting on the person, and those that left
// the inbox lately with how they ended.
func (h *Handler) inboxShow(c echo.Context) error {
	ctx := c.Request().Context()
	items, settled, waiting, err := h.store.InboxPage(ctx, h.person(c), 100, time.Now().Add(-settledFor), settledShown)
	if err != nil {
		return err
	}
	countedWaiting(c, waiting) // read with the rest, in one batch
	var vm views.InboxVM
	for _, it := range items {
		item := views.InboxItemVM{
			Href: "/calls/" + it.CallID, Server: it.ServerName, Target: round.Preview(cmp.Or(it.Title, it.Target), round.PreviewName),
			Questions: round.Summaries(it.InputRequests), ExpiresAt: it.ExpiresAt, Created: it.CreatedAt,
		}
		if it.Seq == store.ApprovalSeq {
			// Rounds' own question, not the server's.
			item.Questions = []string{"Rounds asks for your approval before this tool runs."}
		} else if it.Assignee != nil && strings.HasPrefix(*it.Assignee, store.TeamPrefix) {
			item.For = "team " + strings.TrimPrefix(*it.Assignee, store.TeamPrefix)
		}
		if it.AwayFor != nil {
			item.For = *it.AwayFor + ", who is away and named you to answer"
		}
		if it.Owner != h.person(c) {
			item.From = it.Owner
		}
		vm.Items = append(vm.Items, item)
	}
	for _, it := range settled {
		s := views.SettledVM{
			Href: "/calls/" + it.CallID, Server: it.ServerName, Target: round.Preview(cmp.Or(it.Title, it.Target), round.PreviewName),
			Seq: it.Seq, Outcome: it.Outcome, Ended: it.EndedAt,
		}
		if it.AnsweredBy != nil && *it.AnsweredBy != h.person(c) {
			s.AnsweredBy = *it.AnsweredBy
		}
		vm.Settled = append(vm.Settled, s)
	}
	return render(c, http.StatusOK, views.InboxPage(vm))
}

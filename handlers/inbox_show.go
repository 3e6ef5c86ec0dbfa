package handlers

import (
	"cmp"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// inboxShow lists the rounds waiting on the person.
func (h *Handler) inboxShow(c echo.Context) error {
	items, err := h.store.Inbox(c.Request().Context(), h.person(c), 100)
	if err != nil {
		return err
	}
	var vm views.InboxVM
	for _, it := range items {
		item := views.InboxItemVM{
			Href: "/calls/" + it.CallID, Server: it.ServerName, Target: preview(cmp.Or(it.Title, it.Target), previewName),
			Questions: questionSummaries(it.InputRequests), ExpiresAt: it.ExpiresAt, Created: it.CreatedAt,
		}
		if it.Assignee != nil && strings.HasPrefix(*it.Assignee, store.TeamPrefix) {
			item.For = "team " + strings.TrimPrefix(*it.Assignee, store.TeamPrefix)
		}
		if it.Owner != h.person(c) {
			item.From = it.Owner
		}
		vm.Items = append(vm.Items, item)
	}
	return render(c, http.StatusOK, views.InboxPage(vm))
}

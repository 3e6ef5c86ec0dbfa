package handlers

import (
	"cmp"
	"net/http"

	"github.com/labstack/echo/v4"

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
		vm.Items = append(vm.Items, views.InboxItemVM{
			Href: "/calls/" + it.CallID, Server: it.ServerName, Target: preview(cmp.Or(it.Title, it.Target), previewName),
			Questions: questionSummaries(it.InputRequests), ExpiresAt: it.ExpiresAt, Created: it.CreatedAt,
		})
	}
	return render(c, http.StatusOK, views.InboxPage(vm))
}

package handlers

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// historyPageSize is how many calls a page of a person's history shows.
const historyPageSize = 25

// callList is a person's every call, newest first, with a status filter,
// a search (tool, server, the questions' text) and pages read by key.
func (h *Handler) callList(c echo.Context) error {
	q := c.QueryParams()
	f := store.HistoryFilter{Status: q.Get("status"), Query: q.Get("q"), Page: keyset(q, historyPageSize)}
	if !slices.Contains(callStatuses, f.Status) {
		f.Status = ""
	}
	if len([]rune(f.Query)) > 200 {
		f.Query = string([]rune(f.Query)[:200])
	}
	calls, err := h.store.History(c.Request().Context(), h.person(c), f)
	if err != nil {
		return err
	}
	vm := views.HistoryVM{Status: f.Status, Query: f.Query, Filtered: f.Status != "" || f.Query != ""}
	for _, s := range callStatuses {
		vm.Statuses = append(vm.Statuses, views.OptionVM{Value: s, Label: statusText(s)})
	}
	calls, vm.PrevHref, vm.NextHref = paged(calls, f.Page, "/calls", q,
		func(call store.Call) store.Cursor { return store.Cursor{At: call.CreatedAt, ID: call.ID} })
	for _, call := range calls {
		vm.Calls = append(vm.Calls, views.CallSummary{
			Href: "/calls/" + call.ID, Server: call.ServerName, Target: round.Preview(call.Target, round.PreviewName),
			Status: call.Status, Created: call.CreatedAt,
		})
	}
	return render(c, http.StatusOK, views.HistoryPage(vm))
}

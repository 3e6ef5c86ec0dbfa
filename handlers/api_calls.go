package handlers

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// apiCallsLimit is a page's default and largest size.
const (
	apiCallsLimit    = 50
	apiCallsLimitMax = 200
)

// apiCalls lists the caller's calls, newest first:
// GET /api/v1/calls?status=input_required,failed&limit=50&cursor=….
func (h *Handler) apiCalls(c echo.Context) error {
	limit := apiCallsLimit
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > apiCallsLimitMax {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, "limit must be a whole number from 1 to 200.")
		}
		limit = n
	}
	var statuses []string
	if v := c.QueryParam("status"); v != "" {
		for s := range strings.SplitSeq(v, ",") {
			if !slices.Contains(store.CallStatuses, s) {
				return echo.NewHTTPError(http.StatusUnprocessableEntity,
					"status must be one or more of "+strings.Join(store.CallStatuses, ", ")+", separated by commas.")
			}
			statuses = append(statuses, s)
		}
	}
	page, err := h.store.CallsAfter(c.Request().Context(), h.person(c), statuses, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	out := struct {
		Calls      []apiCall `json:"calls"`
		NextCursor *string   `json:"nextCursor"`
	}{Calls: make([]apiCall, 0, len(page.Calls))}
	for i := range page.Calls {
		out.Calls = append(out.Calls, h.apiCallOf(&page.Calls[i], nil))
	}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	return writeJSON(c, http.StatusOK, out)
}

// apiCallCancel ends the caller's unfinished call: POST /api/v1/calls/{id}/cancel.
// A round waiting for answers is cancelled with it; 409 once it has ended.
func (h *Handler) apiCallCancel(c echo.Context) error {
	ctx := c.Request().Context()
	call, err := h.startedCall(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	entry := h.auditEntry(c, h.person(c), "call.cancelled", call.ID, map[string]any{"api": true, "seq": call.CurrentSeq})
	if err := h.store.CancelCall(ctx, call.ID, entry); err != nil {
		return err
	}
	if call, err = h.store.Call(ctx, call.ID); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, h.apiCallOf(call, nil))
}

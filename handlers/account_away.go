package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// localMinute is how a datetime-local input says a time.
const localMinute = "2006-01-02T15:04"

// accountAway makes the signed-in person away until a time, in their
// zone, with a delegate; a refusal re-renders the page with what was
// typed and why.
func (h *Handler) accountAway(c echo.Context) error {
	ctx := c.Request().Context()
	untilValue, delegate := c.FormValue("until"), strings.TrimSpace(c.FormValue("delegate"))
	until, err := time.ParseInLocation(localMinute, untilValue, views.ZoneOf(ctx).Loc)
	if err != nil {
		err = &store.Error{Kind: store.ErrInvalid, Message: "Say when you are back as a date and a time."}
	} else {
		err = h.setAway(c, store.Away{Until: until, Delegate: delegate})
	}
	var se *store.Error
	if errors.As(err, &se) && errors.Is(err, store.ErrInvalid) {
		vm, verr := h.accountVM(c)
		if verr != nil {
			return verr
		}
		vm.Away.UntilValue, vm.Away.DelegateValue, vm.Away.Error = untilValue, delegate, se.Message
		return render(c, http.StatusUnprocessableEntity, views.AccountPage(*vm))
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/account?done=away")
}

// accountAwayEnd makes the signed-in person back.
func (h *Handler) accountAwayEnd(c echo.Context) error {
	if err := h.clearAway(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/account?done=back")
}

// apiAwaySet is PUT /api/v1/me/away {"until": RFC 3339, "delegate": name}.
func (h *Handler) apiAwaySet(c echo.Context) error {
	var body struct {
		Until    time.Time `json:"until"`
		Delegate string    `json:"delegate"`
	}
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil || body.Until.IsZero() || body.Delegate == "" {
		return echo.NewHTTPError(http.StatusBadRequest,
			`The body must be a JSON object with "until" (an RFC 3339 time) and "delegate" (a person's name).`)
	}
	a := store.Away{Until: body.Until, Delegate: strings.TrimSpace(body.Delegate)}
	if err := h.setAway(c, a); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, apiAway{Until: &a.Until, Delegate: a.Delegate})
}

// apiAwayClear is DELETE /api/v1/me/away: back; the rounds are one's own
// again.
func (h *Handler) apiAwayClear(c echo.Context) error {
	if err := h.clearAway(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiAway is the absence as the API shows it.
type apiAway struct {
	Until    *time.Time `json:"until"`
	Delegate string     `json:"delegate"`
}

func (h *Handler) setAway(c echo.Context, a store.Away) error {
	name := h.person(c)
	entry := h.auditEntry(c, name, "user.away", name,
		map[string]any{"until": a.Until.UTC().Format(time.RFC3339), "delegate": a.Delegate})
	return h.store.SetAway(c.Request().Context(), name, a, entry)
}

func (h *Handler) clearAway(c echo.Context) error {
	name := h.person(c)
	return h.store.ClearAway(c.Request().Context(), name, h.auditEntry(c, name, "user.back", name, nil))
}

// accountAwayVM is the away section as it stands.
func (h *Handler) accountAwayVM(c echo.Context) (views.AwayVM, error) {
	ctx := c.Request().Context()
	var vm views.AwayVM
	a, err := h.store.AwayOf(ctx, h.person(c))
	if err != nil {
		return vm, err
	}
	if a != nil {
		vm.Until, vm.Delegate = &a.Until, a.Delegate
		vm.UntilValue, vm.DelegateValue = a.Until.In(views.ZoneOf(ctx).Loc).Format(localMinute), a.Delegate
	}
	users, err := h.store.Users(ctx)
	if err != nil {
		return vm, err
	}
	for _, u := range users {
		if !u.Disabled && u.Name != h.person(c) {
			vm.People = append(vm.People, u.Name)
		}
	}
	return vm, nil
}

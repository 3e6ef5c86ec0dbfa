package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// maxDraftBytes caps a stored draft; a round's answers are far smaller.
const maxDraftBytes = 256 << 10

// roundDraft saves what a person has typed into a pending round, checked
// for nothing, so they can come back to it on any device. The "Save draft"
// button posts here and is sent back to the call page; htmx posts here on
// every change and gets 204.
func (h *Handler) roundDraft(c echo.Context) error {
	ctx := c.Request().Context()
	call, r, err := h.ownedRound(c)
	if err != nil {
		return err
	}
	htmx := c.Request().Header.Get("HX-Request") == "true"
	gone := func() error {
		if htmx {
			return echo.NewHTTPError(http.StatusConflict, "This round is no longer waiting for answers.")
		}
		return h.renderNotice(c, http.StatusConflict, call.ID, "This round was already answered, or is no longer current, so the draft was not saved.")
	}
	if r.Status != store.RoundPending || r.Seq != call.CurrentSeq {
		return gone()
	}
	values, err := formParams(c)
	if err != nil {
		return err
	}
	qs, err := round.Parse(r)
	if err != nil {
		return err
	}
	form, size := draftFields(values, len(qs))
	if size > maxDraftBytes {
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "This draft is too large to save.")
	}
	err = h.store.SaveDraft(ctx, call.ID, r.Seq, form)
	if errors.Is(err, store.ErrConflict) {
		return gone()
	}
	if err != nil {
		return err
	}
	if htmx {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, "/calls/"+call.ID)
}

// questionName matches the posted names of a round's questions: q<i>. or
// q<i>$ and what follows.
var questionName = regexp.MustCompile(`^q(\d+)[.$]`)

// draftFields keeps the posted fields that belong to the round's n
// questions, and nothing else (not the CSRF token), with their size.
func draftFields(values url.Values, n int) (url.Values, int) {
	out := url.Values{}
	size := 0
	for name, vs := range values {
		m := questionName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if i, err := strconv.Atoi(m[1]); err != nil || i >= n {
			continue
		}
		out[name] = vs
		size += len(name)
		for _, v := range vs {
			size += len(v)
		}
	}
	return out, size
}

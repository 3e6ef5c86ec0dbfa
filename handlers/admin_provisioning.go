package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// adminProvisioning lists the provisioning (SCIM) tokens.
func (h *Handler) adminProvisioning(c echo.Context) error {
	notice := ""
	if c.QueryParam("done") == "token-revoked" {
		notice = "Revoked " + c.QueryParam("token") + ": every instance refuses it now (401)."
	}
	return h.renderProvisioning(c, http.StatusOK, views.AdminProvisioningVM{Notice: notice})
}

func (h *Handler) renderProvisioning(c echo.Context, status int, vm views.AdminProvisioningVM) error {
	tokens, err := h.store.ProvisionTokens(c.Request().Context())
	if err != nil {
		return err
	}
	for _, t := range tokens {
		vm.Tokens = append(vm.Tokens, views.ProvisionTokenVM{Name: t.Name, Created: t.CreatedAt, LastUsed: t.LastUsedAt, Revoked: t.RevokedAt})
	}
	return render(c, status, views.AdminProvisioningPage(vm))
}

// adminProvisionTokenRevoke revokes a provisioning token, with its audit
// entry in the same transaction.
func (h *Handler) adminProvisionTokenRevoke(c echo.Context) error {
	name := c.FormValue("name")
	err := h.store.RevokeProvisionToken(c.Request().Context(), name, *h.userAudit(c, "", "", nil))
	var se *store.Error
	if errors.Is(err, store.ErrNotFound) && errors.As(err, &se) {
		return h.renderProvisioning(c, http.StatusNotFound, views.AdminProvisioningVM{Error: strings.TrimSuffix(se.Message, " (see web scim token list).") + "."})
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin/provisioning?"+url.Values{"done": {"token-revoked"}, "token": {name}}.Encode())
}

package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// sessNewToken holds a token just made, between the POST that made it and
// the page that shows it once.
const sessNewToken = "new_token"

// tokensShow lists the person's API tokens, and a token just made, once:
// reloading the page neither shows it again nor makes another.
func (h *Handler) tokensShow(c echo.Context) error {
	vm, err := h.tokensVM(c)
	if err != nil {
		return err
	}
	s := h.session(c)
	if secret, ok := s.Values[sessNewToken].(string); ok {
		delete(s.Values, sessNewToken)
		if err := s.Save(c.Request(), c.Response()); err != nil {
			return err
		}
		vm.NewSecret = secret
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusOK, views.TokensPage(*vm))
}

// tokenCreate makes a token and sends the person to see it, once.
func (h *Handler) tokenCreate(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if name == "" || len(name) > 100 {
		vm, err := h.tokensVM(c)
		if err != nil {
			return err
		}
		vm.Error = "Give the token a name of 1 to 100 characters, to tell it apart later."
		return render(c, http.StatusUnprocessableEntity, views.TokensPage(*vm))
	}
	_, secret, err := h.store.CreateToken(c.Request().Context(), user(c).ID, name)
	if err != nil {
		return err
	}
	h.log.InfoContext(c.Request().Context(), "token created", "user", user(c).Name, "token", name)
	h.audit(c, "token.created", name, nil)
	s := h.session(c)
	s.Values[sessNewToken] = secret
	if err := s.Save(c.Request(), c.Response()); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/tokens")
}

// tokenRevoke revokes one of the person's tokens.
func (h *Handler) tokenRevoke(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return store.ErrNotFound
	}
	if err := h.store.RevokeToken(c.Request().Context(), user(c).ID, id); err != nil {
		return err
	}
	h.audit(c, "token.revoked", c.Param("id"), nil)
	return c.Redirect(http.StatusSeeOther, "/tokens")
}

func (h *Handler) tokensVM(c echo.Context) (*views.TokensVM, error) {
	tokens, err := h.store.Tokens(c.Request().Context(), user(c).ID)
	if err != nil {
		return nil, err
	}
	vm := &views.TokensVM{}
	secret, err := h.store.WebhookSecret(c.Request().Context(), user(c).Name)
	if err != nil {
		return nil, err
	}
	vm.WebhookSecret = engine.FormatWebhookSecret(secret)
	c.Response().Header().Set("Cache-Control", "no-store")
	for _, t := range tokens {
		vm.Tokens = append(vm.Tokens, views.TokenVM{
			ID: t.ID, Name: t.Name, Prefix: t.Prefix, Created: t.CreatedAt,
			LastUsed: t.LastUsedAt, Revoked: t.RevokedAt != nil,
			RevokeHref: "/tokens/" + strconv.FormatInt(t.ID, 10) + "/revoke",
		})
	}
	return vm, nil
}

package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/sso"
	"github.com/mcp-rounds/rounds/store"
)

// checkSignOn asks the provider again about a person signed on through
// it, once OIDC_RECHECK has passed since it was last asked: the rights
// their groups give follow, from this request on. The request that takes
// the check on (one per account, across instances) waits for it; others
// meanwhile go on with the rights as they were. When the provider no
// longer vouches for the person, their sessions end and their tokens stop:
// the answer is store.ErrSignOnAgain, a kind of store.ErrNotFound. A
// provider that cannot be reached changes nothing until the next check.
func (h *Handler) checkSignOn(c echo.Context, u *store.User) (*store.User, error) {
	if h.auth.SSO == nil || u.SignOnCheckDue == nil || time.Now().Before(*u.SignOnCheckDue) {
		return u, nil
	}
	// The check goes on if the person goes away: it is theirs until the next.
	ctx := context.WithoutCancel(c.Request().Context())
	chk, ok, err := h.store.ClaimSignOnCheck(ctx, u.ID, h.signOnRecheck())
	if err != nil || !ok {
		return u, err
	}
	id, err := h.auth.SSO.Recheck(ctx, chk.Issuer, chk.Subject, sso.DecodeGrant(chk.Grant))
	if errors.Is(err, sso.ErrProvider) {
		h.log.WarnContext(ctx, "single sign-on: the provider cannot be reached to check a person again", "user", u.Name, "err", err)
		return u, nil
	}
	if err != nil {
		refused, rerr := h.store.SignOnRefused(ctx, chk)
		if rerr != nil || !refused {
			return u, rerr
		}
		h.log.InfoContext(ctx, "single sign-on: signed out, the provider no longer vouches for the person", "user", u.Name, "err", err)
		h.auditAs(c, "", "sign_in.ended", u.Name, map[string]any{"via": "single sign-on", "reason": err.Error()})
		return nil, store.ErrSignOnAgain
	}
	fresh, err := h.store.SignOnChecked(ctx, chk, store.SignOn{Issuer: id.Issuer, Subject: id.Subject, Email: id.Email,
		EmailVerified: id.EmailVerified, Groups: id.Teams, Admin: id.Admin, Grant: id.Grant.Encode()})
	if err != nil {
		return u, err
	}
	if fresh.IsAdmin != u.IsAdmin {
		action := map[bool]string{true: "user.admin_granted", false: "user.admin_revoked"}[fresh.IsAdmin]
		h.auditAs(c, "", action, u.Name, map[string]any{"via": "single sign-on", "groups": id.Groups})
	}
	return fresh, nil
}

// signOnRecheck is OIDC_RECHECK.
func (h *Handler) signOnRecheck() time.Duration {
	if h.auth.SignOnRecheck <= 0 {
		return sso.DefaultRecheck
	}
	return h.auth.SignOnRecheck
}

package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/apiv1"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// isAPI reports whether the request is for the JSON API.
func isAPI(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/api/")
}

type apiError struct {
	Error apiMessage `json:"error"`
}

type apiMessage = apiv1.Message

// The call as the API shows it (see apiv1.Call).
type (
	apiCall          = apiv1.Call
	apiRound         = apiv1.Round
	apiAuthorization = apiv1.Authorization
)

// apiCallOf is apiv1.NewCall with, for a call waiting on a sign-in, where to
// sign in.
func (h *Handler) apiCallOf(call *store.Call, rounds []store.Round) apiCall {
	out := apiv1.NewCall(call, rounds)
	if call.Status == store.CallAuthorizationRequired {
		out.Authorization = &apiAuthorization{Status: "required", URL: h.connectURL(call.ServerName, call.ID)}
	}
	return out
}

// writeJSON writes v without HTML-escaping, so server content comes back
// as sent.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := mcpclient.MarshalRaw(v)
	if err != nil {
		return err
	}
	return c.JSONBlob(status, append(b, '\n'))
}

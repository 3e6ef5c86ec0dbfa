package handlers

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// Messages for bytes Postgres cannot store in text.
const (
	msgBadAddress = "The address has bytes that are not text (a NUL character or bytes that are not UTF-8). Check the link and try again."
	msgBadUTF8    = "The request has bytes that are not valid UTF-8 text, so it was not taken. Send it as UTF-8."
)

// refuseUnstorable turns away requests carrying what Postgres refuses in
// text — a NUL character or bytes that are not UTF-8 — in the path, the
// query, a form or a JSON body (escaped as \u0000 too), with 400 or 422 and
// a sentence, before any handler stores them.
func refuseUnstorable(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !storableText(req.URL.Path) {
			return echo.NewHTTPError(http.StatusBadRequest, msgBadAddress)
		}
		if q, err := url.ParseQuery(req.URL.RawQuery); err != nil || !storableValues(q) {
			return echo.NewHTTPError(http.StatusBadRequest, msgBadAddress)
		}
		if req.Body == nil || req.Body == http.NoBody || req.URL.Path == "/demo/mcp" || isMCP(req.URL.Path) ||
			req.URL.Path == slackInteractions {
			return next(c)
		}
		mediaType, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
		if mediaType != echo.MIMEApplicationJSON && mediaType != echo.MIMEApplicationForm {
			return next(c)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return err // the body limit's 413, or a broken connection
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if !utf8.Valid(body) {
			return echo.NewHTTPError(http.StatusBadRequest, msgBadUTF8)
		}
		if mediaType == echo.MIMEApplicationJSON {
			if p := mcpclient.UnstorableEscape(body); p != "" {
				return echo.NewHTTPError(http.StatusUnprocessableEntity, unstorableMessage(p))
			}
			return next(c)
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read: "+err.Error())
		}
		for k, vs := range form {
			for _, s := range append(vs, k) {
				if !utf8.ValidString(s) {
					return echo.NewHTTPError(http.StatusBadRequest, msgBadUTF8)
				}
				if strings.IndexByte(s, 0) >= 0 {
					return echo.NewHTTPError(http.StatusUnprocessableEntity, unstorableMessage("a NUL character"))
				}
			}
		}
		return next(c)
	}
}

func unstorableMessage(problem string) string {
	return "The request has " + problem + ", which cannot be stored, so it was not taken. Remove it and send again."
}

func storableText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

func storableValues(v url.Values) bool {
	for k, vs := range v {
		if !storableText(k) {
			return false
		}
		for _, s := range vs {
			if !storableText(s) {
				return false
			}
		}
	}
	return true
}

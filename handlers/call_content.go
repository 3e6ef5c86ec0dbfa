package handlers

import (
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// callContent downloads the binary contents of a resource the call read:
// GET /calls/{id}/contents/{i}. It is always an attachment, never a page:
// the server's bytes are not rendered by the browser, whatever they claim
// to be.
func (h *Handler) callContent(c echo.Context) error {
	call, err := h.ownedCall(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	i, err := strconv.Atoi(c.Param("i"))
	if err != nil || i < 0 || call.Status != store.CallComplete || call.Method != mcpclient.MethodReadResource {
		return notFoundErr("content")
	}
	data, uri, mimeType, ok := round.Blob(call.Result, i)
	if !ok {
		return notFoundErr("content")
	}
	hdr := c.Response().Header()
	hdr.Set(echo.HeaderContentType, downloadType(mimeType))
	hdr.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": downloadName(uri, i)}))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	hdr.Set("Cache-Control", "private, no-store")
	return c.Blob(http.StatusOK, hdr.Get(echo.HeaderContentType), data)
}

// activeTypes are media types a browser may run as a page or script; they
// are sent as plain bytes.
var activeTypes = map[string]bool{
	"text/html": true, "application/xhtml+xml": true, "image/svg+xml": true, "text/xml": true, "application/xml": true,
	"text/javascript": true, "application/javascript": true, "application/ecmascript": true, "text/ecmascript": true,
	"application/x-javascript": true, "text/xsl": true, "application/xslt+xml": true, "multipart/x-mixed-replace": true,
}

// downloadType is the Content-Type of a download: the server's mimeType
// when it is a well-formed type/subtype, reduced to that (no parameters but
// a charset), else application/octet-stream, as it is for types a browser
// would run.
func downloadType(m string) string {
	const fallback = "application/octet-stream"
	mt, params, err := mime.ParseMediaType(m)
	if err != nil || strings.Count(mt, "/") != 1 || strings.HasPrefix(mt, "/") || strings.HasSuffix(mt, "/") ||
		activeTypes[mt] || strings.HasSuffix(mt, "+xml") {
		return fallback
	}
	out := map[string]string{}
	if cs := params["charset"]; cs != "" && strings.HasPrefix(mt, "text/") {
		out["charset"] = cs
	}
	if s := mime.FormatMediaType(mt, out); s != "" {
		return s
	}
	return fallback
}

// downloadName is the file name a download is saved as: the last segment
// of the resource's URI, if it is a plain name, else resource-{i}.
func downloadName(uri string, i int) string {
	name := ""
	if u, err := url.Parse(uri); err == nil {
		name = path.Base(u.Path)
		if u.Opaque != "" {
			name = path.Base(u.Opaque)
		}
	}
	clean := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, name)
	clean = strings.TrimLeft(clean, ".")
	if clean == "" || clean != name || len(clean) > 100 {
		return "resource-" + strconv.Itoa(i)
	}
	return clean
}

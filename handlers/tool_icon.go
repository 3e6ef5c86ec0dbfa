package handlers

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-rounds/rounds/store"
)

// A tool's icon is served by Rounds, never loaded by the browser from the
// server's address: the browser would tell the server who looks, and an
// SVG can carry script. Rounds takes an icon only from a data: URI or the
// MCP server's own origin (never elsewhere, so a server cannot make Rounds
// fetch from the inside of its network), without the server's
// credentials, of at most maxIcon bytes, and only when its bytes are PNG,
// JPEG, GIF or WebP.
const (
	maxIcon     = 256 << 10
	iconTimeout = 5 * time.Second
	iconKeep    = time.Hour
	maxIcons    = 512
)

// rasterTypes are the image types an icon may be, by their bytes.
var rasterTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// icons keeps the icons fetched, by server origin and source, for an hour.
type icons struct {
	mu sync.Mutex
	m  map[string]iconEntry
}

type iconEntry struct {
	data []byte // nil: none could be had
	at   time.Time
}

// toolIcon serves a tool's icon, or 404 when it has none Rounds will show.
func (h *Handler) toolIcon(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	tool, err := h.engine.Tool(ctx, signedIn(ctx), srv, c.Param("tool"))
	if err != nil {
		return err
	}
	data := h.icons.first(ctx, srv.URL, tool)
	if data == nil {
		return notFoundErr("icon")
	}
	c.Response().Header().Set("Cache-Control", "private, max-age=3600")
	c.Response().Header().Set("X-Content-Type-Options", "nosniff")
	return c.Blob(http.StatusOK, http.DetectContentType(data), data)
}

// iconCandidate says whether a tool lists an icon Rounds may serve: one
// from a data: URI or the server's own origin, and not declared SVG.
func iconCandidate(serverURL string, tool *mcp.Tool) bool {
	for _, ic := range tool.Icons {
		if usableSource(serverURL, ic) {
			return true
		}
	}
	return false
}

func usableSource(serverURL string, ic mcp.Icon) bool {
	if strings.Contains(strings.ToLower(ic.MIMEType), "svg") {
		return false
	}
	if strings.HasPrefix(ic.Source, "data:") {
		return !strings.Contains(strings.ToLower(strings.SplitN(ic.Source, ",", 2)[0]), "svg")
	}
	u, err1 := url.Parse(ic.Source)
	s, err2 := url.Parse(serverURL)
	return err1 == nil && err2 == nil && (u.Scheme == "http" || u.Scheme == "https") &&
		u.Scheme == s.Scheme && strings.EqualFold(u.Host, s.Host) && u.User == nil
}

// first returns the first of the tool's icons that is a raster image.
func (ic *icons) first(ctx context.Context, serverURL string, tool *mcp.Tool) []byte {
	for _, i := range tool.Icons {
		if !usableSource(serverURL, i) {
			continue
		}
		if data := ic.get(ctx, serverURL, i.Source); data != nil {
			return data
		}
	}
	return nil
}

func (ic *icons) get(ctx context.Context, serverURL, src string) []byte {
	key := serverURL + "\x00" + src
	ic.mu.Lock()
	e, ok := ic.m[key]
	ic.mu.Unlock()
	if ok && time.Since(e.at) < iconKeep {
		return e.data
	}
	data, err := fetchIcon(ctx, src)
	if err != nil || !rasterTypes[http.DetectContentType(data)] {
		data = nil
	}
	ic.mu.Lock()
	if len(ic.m) >= maxIcons {
		ic.m = map[string]iconEntry{}
	}
	ic.m[key] = iconEntry{data: data, at: time.Now()}
	ic.mu.Unlock()
	return data
}

// iconClient fetches icons: no redirects (they could leave the origin),
// no cookies, no credentials.
func iconClient() *http.Client {
	return &http.Client{
		Timeout:       iconTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func fetchIcon(ctx context.Context, src string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(src, "data:"); ok {
		meta, payload, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") || base64.StdEncoding.DecodedLen(len(payload)) > maxIcon {
			return nil, errors.New("not a base64 data URI of a small image")
		}
		return base64.StdEncoding.DecodeString(payload)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, err
	}
	resp, err := iconClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxIcon+1))
	if err != nil || len(data) > maxIcon {
		return nil, errors.New("the icon is too large")
	}
	return bytes.Clone(data), nil
}

// iconHref is where a tool's icon is served, or "" when it has none.
func iconHref(srv *store.Server, tool *mcp.Tool) string {
	if !iconCandidate(srv.URL, tool) {
		return ""
	}
	return "/servers/" + url.PathEscape(srv.Name) + "/tools/" + url.PathEscape(tool.Name) + "/icon"
}

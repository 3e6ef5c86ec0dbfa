package handlers

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/singleflight"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/store"
)

// A tool's icon is served by Rounds, never loaded by the browser from the
// server's address: the browser would tell the server who looks, and an
// SVG can carry script. Rounds takes an icon only from a data: URI or the
// MCP server's own origin (never elsewhere, so a server cannot make Rounds
// fetch from the inside of its network; a name must resolve to a public
// address, and that address is the one dialled), without the server's
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
// An icon is fetched from the address Rounds checked: the host's name is
// resolved once, the address checked, and that very address dialled (the
// request keeps the name, for Host and TLS), so a second DNS answer cannot
// send the fetch elsewhere. Concurrent misses for one icon share a fetch.
type icons struct {
	mu     sync.Mutex
	m      map[string]iconEntry
	flight singleflight.Group
	// allowPrivate lets a name resolve to a loopback, private or link-local
	// address (ICON_ALLOW_PRIVATE). A server named by its address (or as
	// localhost) is fetched from there whatever it is.
	allowPrivate bool
	// lookup resolves a host's name; dial connects to an address already
	// checked. Tests replace them.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
	// onMiss, when set, is told of each request that finds no icon kept
	// (a test's seam, to know its requests all missed).
	onMiss func()
}

type iconEntry struct {
	data []byte // nil: none could be had
	at   time.Time
}

// newIcons returns an empty icon cache that resolves and dials for real.
func newIcons(allowPrivate bool) *icons {
	dialer := &net.Dialer{Timeout: iconTimeout}
	return &icons{
		m: map[string]iconEntry{}, allowPrivate: allowPrivate, dial: dialer.DialContext,
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
	}
}

// toolIcon serves a tool's icon, or 404 when it has none Rounds will show.
func (h *Handler) toolIcon(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	tool, err := h.catalog.Tool(ctx, signedIn(ctx), srv, c.Param("tool"))
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

// kept returns the icon kept for key, if it is fresh.
func (ic *icons) kept(key string) ([]byte, bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	e, ok := ic.m[key]
	if !ok || time.Since(e.at) >= iconKeep {
		return nil, false
	}
	return e.data, true
}

func (ic *icons) get(ctx context.Context, serverURL, src string) []byte {
	key := serverURL + "\x00" + src
	if data, ok := ic.kept(key); ok {
		return data
	}
	if ic.onMiss != nil {
		ic.onMiss()
	}
	// One fetch for every request that missed meanwhile; it outlives the
	// request that started it, which may go away.
	v, _, _ := ic.flight.Do(key, func() (any, error) {
		if data, ok := ic.kept(key); ok {
			return data, nil // fetched while this request came
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), iconTimeout)
		defer cancel()
		data, err := ic.fetch(fctx, src)
		if err != nil || !rasterTypes[http.DetectContentType(data)] {
			data = nil
		}
		ic.mu.Lock()
		if len(ic.m) >= maxIcons {
			ic.m = map[string]iconEntry{}
		}
		ic.m[key] = iconEntry{data: data, at: time.Now()}
		ic.mu.Unlock()
		return data, nil
	})
	data, _ := v.([]byte)
	return data
}

// address resolves an icon's host once and returns the address to dial,
// checked: a name must resolve to a public address unless private ones
// are allowed.
func (ic *icons) address(ctx context.Context, host string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, nil // named by its address, as the server is
	}
	addrs, err := ic.lookup(ctx, host)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		a = a.Unmap()
		if engine.PublicIP(a) || ic.allowPrivate || (strings.EqualFold(host, "localhost") && a.IsLoopback()) {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s resolves to no public address", host)
}

// fetch reads an icon from a data: URI, or over HTTP from the address its
// host was checked at, with no redirects (they could leave the origin), no
// proxy, no cookies and no credentials.
func (ic *icons) fetch(ctx context.Context, src string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(src, "data:"); ok {
		meta, payload, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") || base64.StdEncoding.DecodedLen(len(payload)) > maxIcon {
			return nil, errors.New("not a base64 data URI of a small image")
		}
		return base64.StdEncoding.DecodeString(payload)
	}
	u, err := url.Parse(src)
	if err != nil {
		return nil, err
	}
	addr, err := ic.address(ctx, u.Hostname())
	if err != nil {
		return nil, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	target := net.JoinHostPort(addr.String(), port)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return ic.dial(ctx, network, target)
		},
		TLSHandshakeTimeout:   iconTimeout,
		ResponseHeaderTimeout: iconTimeout,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport:     tr,
		Timeout:       iconTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
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

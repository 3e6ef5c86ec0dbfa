package journeys

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestToolIcons: a tool's icon is served by Rounds, never by the server to
// the browser. Rounds takes a raster image from a data: URI or the
// server's own origin; an SVG, an icon elsewhere, or bytes that are not an
// image are not shown.
func TestToolIcons(t *testing.T) {
	t.Parallel()
	var pic bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	if err := png.Encode(&pic, img); err != nil {
		t.Fatal(err)
	}
	pngData := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic.Bytes())
	svgData := "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`))
	var origin atomic.Value // the fake server's own origin, once known
	var iconFetches atomic.Int32
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/own.png":
				iconFetches.Add(1)
				if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
					t.Errorf("the icon's request carried credentials")
				}
				w.Header().Set("Content-Type", "image/png")
				_, _ = w.Write(pic.Bytes())
				return
			case "/fake.png":
				w.Header().Set("Content-Type", "image/png")
				_, _ = w.Write([]byte("<html>not an image</html>"))
				return
			}
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if !bytes.Contains(body, []byte(`"tools/list"`)) {
				next.ServeHTTP(w, r)
				return
			}
			own := origin.Load().(string)
			tools := `{"name":"painted","icons":[{"src":"` + svgData + `","mimeType":"image/svg+xml"},{"src":"` + pngData + `"}],"inputSchema":{"type":"object"}},` +
				`{"name":"own_icon","icons":[{"src":"` + own + `/own.png"}],"inputSchema":{"type":"object"}},` +
				`{"name":"svg_only","icons":[{"src":"` + svgData + `"}],"inputSchema":{"type":"object"}},` +
				`{"name":"elsewhere","icons":[{"src":"http://127.0.0.2:9/icon.png"}],"inputSchema":{"type":"object"}},` +
				`{"name":"not_an_image","icons":[{"src":"` + own + `/fake.png"}],"inputSchema":{"type":"object"}},`
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			out := bytes.Replace(rec.Body.Bytes(), []byte(`"tools":[`), []byte(`"tools":[`+tools), 1)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(out)
		})
	}
	mcpURL := demoServer(t, wrap)
	origin.Store(strings.TrimSuffix(mcpURL, "/mcp"))
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + mcpURL}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	_, page := c.do("GET", inst.URL+"/servers/demo", "", "")
	for tool, shown := range map[string]bool{"painted": true, "own_icon": true, "svg_only": false, "elsewhere": false} {
		has := strings.Contains(string(page), `src="/servers/demo/tools/`+tool+`/icon"`)
		if has != shown {
			t.Errorf("%s's icon on the server page: %v, want %v", tool, has, shown)
		}
	}
	if strings.Contains(string(page), "data:image") || strings.Contains(string(page), "/own.png") {
		t.Error("the page points the browser at the server's own icons")
	}
	for tool, want := range map[string]int{"painted": 200, "own_icon": 200, "svg_only": 404, "elsewhere": 404, "not_an_image": 404} {
		req, _ := http.NewRequest("GET", inst.URL+"/servers/demo/tools/"+tool+"/icon", nil)
		status, body := c.do("GET", req.URL.String(), "", "")
		if status != want {
			t.Errorf("%s's icon: %d, want %d", tool, status, want)
		}
		if want == 200 && !bytes.Equal(body, pic.Bytes()) {
			t.Errorf("%s's icon is not the server's PNG", tool)
		}
	}
	before := iconFetches.Load()
	c.do("GET", inst.URL+"/servers/demo/tools/own_icon/icon", "", "")
	if iconFetches.Load() != before {
		t.Error("the icon was fetched again instead of kept")
	}
}

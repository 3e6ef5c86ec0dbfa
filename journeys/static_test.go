package journeys

import (
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestStaticFilesAndCompression: pages (error pages too) and static files
// go out gzipped to a browser that asks, small answers plain, the layout names the static files by the hash of
// their contents, and those names are cached for a year without asking
// again; a name whose hash is not the current one is not served.
func TestStaticFilesAndCompression(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	get := func(path string, gz bool) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", inst.URL+path, nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip") // set by hand, so Go does not unpack it for us
		}
		hc := &http.Client{Jar: c.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatalf("%s: gzip: %v", path, err)
			}
			r = zr
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp, string(b)
	}

	resp, home := get("/", true)
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("home: Content-Encoding %q, Vary %q; want gzip, varying by Accept-Encoding",
			resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
	}
	if _, plain := get("/", false); !strings.Contains(plain, "<html") {
		t.Error("home without gzip is not plain HTML")
	}
	hashed := regexp.MustCompile(`/static/(app|htmx\.min|favicon)\.[0-9a-f]{12}\.(css|js|svg)`).FindAllString(home, -1)
	if len(hashed) < 4 {
		t.Fatalf("home names %d static files by hash (%q), want the stylesheet, both scripts and the icon", len(hashed), hashed)
	}
	for _, unhashed := range []string{`"/static/app.css"`, `"/static/htmx.min.js"`, `"/static/app.js"`} {
		if strings.Contains(home, unhashed) {
			t.Errorf("home still names %s", unhashed)
		}
	}
	for _, path := range hashed {
		resp, body := get(path, true)
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("%s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q, want a year, immutable", path, cc)
		}
		if strings.HasSuffix(path, ".css") && resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s is not gzipped", path)
		}
	}
	resp, _ = get("/static/app.css", false)
	if cc := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || strings.Contains(cc, "immutable") {
		t.Errorf("/static/app.css: %d, Cache-Control %q; want 200, cached briefly", resp.StatusCode, cc)
	}
	for _, path := range []string{"/static/app.000000000000.css", "/static/", "/static/static.go"} {
		if resp, _ := get(path, false); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
	// A page answering an error is written while the encoder is open.
	resp, missing := get("/calls/00000000-0000-0000-0000-000000000000", true)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(missing, "</html>") {
		t.Errorf("a missing call's page: %d, Content-Encoding %q, %d bytes of page; want a whole 404 page, gzipped",
			resp.StatusCode, resp.Header.Get("Content-Encoding"), len(missing))
	}
	// A small answer goes as it is: compressing it costs more than it saves.
	if resp, body := get("/healthz", true); resp.Header.Get("Content-Encoding") != "" || len(body) == 0 {
		t.Errorf("/healthz: Content-Encoding %q, %q; want it plain", resp.Header.Get("Content-Encoding"), body)
	}
	resp, _ = get("/favicon.ico", false)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || !regexp.MustCompile(`^/static/favicon\.[0-9a-f]{12}\.svg$`).MatchString(loc) {
		t.Errorf("/favicon.ico: %d to %q, want a redirect to the hashed icon", resp.StatusCode, loc)
	}
}

package static_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/static"
)

// TestHashedNames: each file is served under a name that carries its
// content's hash, kept by browsers for a year; the plain name for five
// minutes; anything else is not found.
func TestHashedNames(t *testing.T) {
	h := static.Handler()
	get := func(path string) *http.Response {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", strings.TrimPrefix(path, "/static"), nil))
		return w.Result()
	}
	for _, name := range []string{"app.css", "app.js", "htmx.min.js", "favicon.svg"} {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(want)
		hashed := static.Path(name)
		if !strings.Contains(hashed, hex.EncodeToString(sum[:6])) {
			t.Errorf("%s is served as %s, without its content's hash", name, hashed)
		}
		resp := get(hashed)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != string(want) || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %d, %d bytes, Cache-Control %q", hashed, resp.StatusCode, len(body), resp.Header.Get("Cache-Control"))
		}
		if resp := get("/static/" + name); resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=300" {
			t.Errorf("/static/%s: %d, Cache-Control %q", name, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	if resp := get("/static/htmx.LICENSE"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a file not embedded: %d", resp.StatusCode)
	}
}

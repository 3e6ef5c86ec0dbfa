// Package static embeds the stylesheet, the scripts (the vendored htmx and
// our own) and the icon, and serves them under content-hashed names.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
)

//go:embed htmx.min.js app.css app.js favicon.svg
var files embed.FS

// names maps each file to its name with the first 12 hex digits of its
// SHA-256 before the extension (app.css → app.3f2a…9c.css), and back.
var names = sync.OnceValue(func() (m struct{ hashed, plain map[string]string }) {
	m.hashed, m.plain = map[string]string{}, map[string]string{}
	entries, _ := fs.ReadDir(files, ".")
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			continue
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(e.Name())
		h := strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:6]) + ext
		m.hashed[e.Name()] = h
		m.plain[h] = e.Name()
	}
	return m
})

// Path is the URL of an embedded file under its content-hashed name, which
// changes whenever the file does; an unknown name is returned as it is.
func Path(name string) string {
	if h, ok := names().hashed[name]; ok {
		return "/static/" + h
	}
	return "/static/" + name
}

// Handler serves the embedded files, with the /static/ prefix stripped. A
// hashed name never changes its contents, so browsers keep it for a year
// without asking again; the plain name (for anything that kept an old URL)
// is kept for five minutes.
func Handler() http.Handler {
	fsrv := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if plain, ok := names().plain[name]; ok {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + plain
			fsrv.ServeHTTP(w, r2)
			return
		}
		if _, ok := names().hashed[name]; !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("ETag", `"`+names().hashed[name]+`"`)
		fsrv.ServeHTTP(w, r)
	})
}

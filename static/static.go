// Package static embeds the stylesheet and the vendored htmx.
package static

import (
	"embed"
	"net/http"
)

//go:embed htmx.min.js app.css app.js
var files embed.FS

// Handler serves the embedded files. They change only with a new binary,
// so browsers may keep them for an hour.
func Handler() http.Handler {
	fs := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fs.ServeHTTP(w, r)
	})
}

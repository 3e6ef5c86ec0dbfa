package handlers

import "testing"

func TestDownloadType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"image/png":                  "image/png",
		"IMAGE/PNG":                  "image/png",
		"text/plain; charset=utf-8":  "text/plain; charset=utf-8",
		"application/json; foo=bar":  "application/json",
		"text/html":                  "application/octet-stream",
		"image/svg+xml":              "application/octet-stream",
		"application/rss+xml":        "application/octet-stream",
		"text/javascript":            "application/octet-stream",
		"":                           "application/octet-stream",
		"image/png\r\nX-Evil: 1":     "application/octet-stream",
		"nonsense":                   "application/octet-stream",
		"text/plain; charset=\"a\nb": "application/octet-stream",
	} {
		if got := downloadType(in); got != want {
			t.Errorf("downloadType(%q) = %q, want %q", in, got, want)
		}
	}
	for uri, want := range map[string]string{
		"demo://images/logo.png": "logo.png",
		"file:///a/b/../c.txt":   "c.txt",
		"test://static-binary":   "resource-3",
		"x://y/..":               "resource-3",
		"x://y/%22evil%22.png":   "resource-3",
		"urn:isbn:0451450523":    "resource-3",
	} {
		if got := downloadName(uri, 3); got != want {
			t.Errorf("downloadName(%q) = %q, want %q", uri, got, want)
		}
	}
}

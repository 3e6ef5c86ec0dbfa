package store_test

import (
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

// TestServerLocal: a server at a stdio: URL is local, by the name after
// the colon; one over HTTP is not, and has no local name.
func TestServerLocal(t *testing.T) {
	for _, tc := range []struct {
		url, name string
		local     bool
	}{
		{"stdio:notes", "notes", true},
		{"http://127.0.0.1:8090/mcp", "", false},
		{"https://mcp.test/stdio:notes", "", false},
	} {
		name, local := (&store.Server{URL: tc.url}).Local()
		if name != tc.name || local != tc.local {
			t.Errorf("Server{URL: %q}.Local() = %q, %v; want %q, %v", tc.url, name, local, tc.name, tc.local)
		}
		c := &store.Call{ServerURL: tc.url}
		if name, local := c.Server().Local(); name != tc.name || local != tc.local {
			t.Errorf("a call's server at %q: Local() = %q, %v; want %q, %v", tc.url, name, local, tc.name, tc.local)
		}
	}
}

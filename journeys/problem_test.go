package journeys

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestServerDownInWords: a server nobody answers at is said to be down in
// a sentence on home and on its page, with Go's error text only behind the
// "Technical detail" disclosure; a server answering 404 is said to have a
// wrong address.
func TestServerDownInWords(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	srv := missing.URL
	inst := startInstance(t, db, map[string]string{
		"MCP_SERVERS": "demo=" + demoServer(t, nil) + ",down=http://" + freeAddr(t) + "/mcp,nowhere=" + srv + "/mcp",
	}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	for _, tt := range []struct{ page, server, sentence, detail string }{
		{"/", "down", "Nothing answers at the server's address: it may be down or restarting.", "connection refused"},
		{"/servers/down", "down", "Nothing answers at the server's address", "connection refused"},
		{"/", "nowhere", "Nothing is served at the server's address: its URL may be wrong.", "Not Found"},
	} {
		doc := c.page(inst.URL + tt.page)
		box := doc.Find(`[data-testid="tools-error"]`)
		if tt.page == "/" {
			box = doc.Find(`[data-testid="server-` + tt.server + `"]`).Closest("section").Find(`[data-testid="tools-error"]`)
		}
		sentence := box.Find("p.error-text").Text()
		if !strings.Contains(sentence, tt.sentence) {
			t.Errorf("%s, server %s: the sentence is %q, want %q", tt.page, tt.server, sentence, tt.sentence)
		}
		for _, raw := range []string{"dial tcp", "Post \"", "rejected by transport", tt.detail} {
			if strings.Contains(sentence, raw) {
				t.Errorf("%s, server %s: the sentence shows Go's error text %q: %q", tt.page, tt.server, raw, sentence)
			}
		}
		if detail := box.Find(`details[data-testid="problem-detail"] pre`).Text(); !strings.Contains(detail, tt.detail) {
			t.Errorf("%s, server %s: the technical detail is %q, want it to hold %q", tt.page, tt.server, detail, tt.detail)
		}
	}
}

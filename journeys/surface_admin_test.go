package journeys

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcptest"
)

// TestAdminServerFeatures switches sampling and roots on from the admin
// page, and the server's next call is declared both and told the roots.
func TestAdminServerFeatures(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	everything := mcptest.Everything(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "everything=" + everything}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	call := c.start(inst.URL, `{"server":"everything","tool":"test_input_required_result_list_roots"}`)
	if done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone); done.Status != "failed" {
		t.Fatalf("with roots off: %s; want failed", done.Status)
	}

	form := url.Values{"url": {everything}, "features": {"1"}, "sampling": {"1"}, "roots": {"1"},
		"roots_list": {"file:///srv/a Alpha\r\nfile:///srv/../etc\r\n"}}
	status, body := c.post(inst.URL+"/admin/servers/everything", form)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "line 2") {
		t.Fatalf("a root climbing out: %d; want 422 naming line 2", status)
	}
	form.Set("roots_list", "file:///srv/a Alpha\r\n\r\nfile:///srv/b\r\n")
	if status, body := c.post(inst.URL+"/admin/servers/everything", form); status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", status, body)
	}
	_, page := c.do("GET", inst.URL+"/admin/servers/everything", "", "")
	for _, want := range []string{`name="sampling" value="1" checked`, `name="roots" value="1" checked`, "file:///srv/a Alpha\nfile:///srv/b\n"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("admin page lacks %q", want)
		}
	}

	call = c.start(inst.URL, `{"server":"everything","tool":"test_input_required_result_list_roots"}`)
	done := c.waitFor(inst.URL, call.ID, 10*time.Second, isDone)
	if got := resultText(t, done.Result); got != "Client exposed 2 root(s): file:///srv/a, file:///srv/b" {
		t.Errorf("status %s, result %q, error %+v", done.Status, got, done.Error)
	}
	call = c.start(inst.URL, `{"server":"everything","tool":"test_input_required_result_sampling"}`)
	if q := c.asked(inst.URL, call.ID, 1)["capital_question"]; q.Method != "sampling/createMessage" {
		t.Errorf("with sampling on: asked %+v", q)
	}

	// Posted without the features fieldset, the settings keep them.
	if status, _ := c.post(inst.URL+"/admin/servers/everything", url.Values{"url": {everything}}); status != http.StatusSeeOther {
		t.Fatal(status)
	}
	_, page = c.do("GET", inst.URL+"/servers/everything", "", "")
	if !strings.Contains(string(page), "Sampling: a reply from a language model") || !strings.Contains(string(page), "file:///srv/b") {
		t.Errorf("the server page does not show sampling and roots on")
	}
}

package journeys

import (
	"bytes"
	"net/http"
	"testing"
)

func TestAccountPage(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	if status, _ := c.do("GET", inst.URL+"/account", "", ""); status != http.StatusSeeOther {
		t.Fatalf("account page signed out: %d, want a redirect to sign in", status)
	}
	c.login(inst.URL, "admin", adminPassword)
	status, page := c.do("GET", inst.URL+"/account", "", "")
	if status != http.StatusOK {
		t.Fatalf("account page: %d", status)
	}
	for _, want := range []string{`data-testid="account-name">admin<`, "Administrator", `href="/account"`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("account page lacks %q", want)
		}
	}
}

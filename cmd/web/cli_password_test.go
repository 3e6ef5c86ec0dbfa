package main

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestUserPasswordCommand resets a lost admin password from the command
// line, the password on standard input: the old one stops working and the
// new one signs in; a short password or an unknown user is refused in words.
func TestUserPasswordCommand(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	run := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := command(context.Background(), args, strings.NewReader(stdin), &out, getenv)
		return out.String(), err
	}
	if _, err := run("short\n", "user", "password", "admin"); err == nil || !strings.Contains(err.Error(), "at least 8") {
		t.Errorf("a short password: %v, want it refused", err)
	}
	if _, err := run("a long enough password\n", "user", "password", "nobody"); err == nil || !strings.Contains(err.Error(), `no user named "nobody"`) {
		t.Errorf("an unknown user: %v", err)
	}
	if out, err := run("the new admin password\n", "user", "password", "admin"); err != nil || !strings.Contains(out, "set a new password for admin") {
		t.Fatalf("web user password admin: %q, %v", out, err)
	}
	c := newClient(t, db)
	_, page := c.do("GET", inst.URL+"/login", "", "")
	form := url.Values{"username": {"admin"}, "password": {adminPassword}, "csrf_token": {csrfFrom(page)}}
	if status, _ := c.do("POST", inst.URL+"/login", "application/x-www-form-urlencoded", form.Encode()); status == http.StatusSeeOther {
		t.Error("the old password still signs in")
	}
	c.login(inst.URL, "admin", "the new admin password")
}

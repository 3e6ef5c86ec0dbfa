package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/app"
)

// auditBy lists the audit log's "actor action target" lines of actions
// starting with prefix, oldest first.
func auditBy(t *testing.T, db, prefix string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `select actor || ' ' || action || ' ' || target from audit_log
		where starts_with(action, $1) order by id`, prefix)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestProvisioningTokens: token names are unique; web scim token list
// says when each was made and last used; a token revoked on the command
// line or on the admin page (a form with its CSRF token) gets 401 at once
// on both instances while the others go on. The audit log names the token
// behind each change. A person an admin disabled on the users page stays
// disabled against the provider's active: true, the page says "Disabled
// here", and the refusal is in the audit log.
func TestProvisioningTokens(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	a, b := startInstance(t, db, nil, nil), startInstance(t, db, nil, nil)
	okta := scimClient{t: t, token: lastLine(cli(t, db, "", "scim", "token", "create", "okta"))}
	entra := scimClient{t: t, token: lastLine(cli(t, db, "", "scim", "token", "create", "entra"))}
	spare := scimClient{t: t, token: lastLine(cli(t, db, "", "scim", "token", "create", "spare"))}
	getenv := func(k string) string { return map[string]string{"DATABASE_URL": db}[k] }
	err := app.Command(context.Background(), []string{"scim", "token", "create", "okta"}, strings.NewReader(""), &bytes.Buffer{}, getenv)
	if err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a second token named okta: %v, want refused", err)
	}

	dan := okta.must(201, "POST", a.URL+"/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
		"userName":"dan@example.com","active":true}`)
	danID, _ := dan["id"].(string)
	list := cli(t, db, "", "scim", "token", "list")
	for _, want := range []string{"okta", "entra", "spare"} {
		line := ""
		for _, l := range strings.Split(list, "\n") {
			if strings.HasPrefix(l, want+" ") {
				line = l
			}
		}
		if used := !strings.Contains(line, "never"); line == "" || used != (want == "okta") {
			t.Errorf("web scim token list says of %s %q; want it listed, used only if okta:\n%s", want, line, list)
		}
	}

	// Revoked on the command line: refused at once on both instances.
	cli(t, db, "", "scim", "token", "revoke", "okta")
	for _, base := range []string{a.URL, b.URL} {
		if status, _ := okta.do("GET", base+"/scim/v2/Users", ""); status != http.StatusUnauthorized {
			t.Errorf("okta on %s after web scim token revoke: %d, want 401", base, status)
		}
		entra.must(200, "GET", base+"/scim/v2/Users", "")
	}

	// Revoked on the admin page: a form, with its CSRF token.
	admin := newClient(t, db)
	admin.login(a.URL, "admin", adminPassword)
	page := admin.page(a.URL + "/admin/provisioning")
	if state := page.Find(`[data-testid="scim-token"][data-name="okta"] [data-testid="scim-token-state"]`).Text(); !strings.Contains(state, "Revoked") {
		t.Errorf("the admin page says okta is %q, want Revoked", state)
	}
	if page.Find(`[data-testid="scim-token"][data-name="entra"] form[action="/admin/provisioning/revoke"]`).Length() != 1 {
		t.Error("the admin page has no Revoke button for entra")
	}
	form := url.Values{"name": {"entra"}}
	if status, _ := admin.do("POST", a.URL+"/admin/provisioning/revoke", "application/x-www-form-urlencoded", form.Encode()); status != http.StatusForbidden {
		t.Errorf("revoking without the CSRF token: %d, want 403", status)
	}
	entra.must(200, "GET", b.URL+"/scim/v2/Users", "")
	if status, body := admin.post(a.URL+"/admin/provisioning/revoke", form); status != http.StatusSeeOther {
		t.Fatalf("revoking entra on the admin page: %d %s", status, body)
	}
	for _, base := range []string{a.URL, b.URL} {
		if status, _ := entra.do("GET", base+"/scim/v2/Users", ""); status != http.StatusUnauthorized {
			t.Errorf("entra on %s after the admin page revoked it: %d, want 401", base, status)
		}
	}

	// Disabled here, the provider cannot enable dan again.
	if status, body := admin.post(a.URL+"/admin/users/dan@example.com/disabled", url.Values{"disabled": {"true"}}); status != http.StatusSeeOther {
		t.Fatalf("disabling dan: %d %s", status, body)
	}
	if got := spare.must(200, "PUT", b.URL+"/scim/v2/Users/"+danID, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
		"userName":"dan@example.com","active":true}`); got["active"] != false {
		t.Errorf("the provider's active: true re-enabled dan: %v", got)
	}
	users := admin.page(b.URL + "/admin/users")
	if state := strings.TrimSpace(users.Find(`[data-testid="user-row"][data-name="dan@example.com"] [data-testid="user-state"]`).Text()); state != "Disabled here" {
		t.Errorf("the users page says dan is %q, want Disabled here", state)
	}

	want := map[string]bool{
		"scim:okta user.provisioned dan@example.com":           true,
		"scim:spare user.reactivation_refused dan@example.com": true,
		"admin scim.token_revoked entra":                       true,
		"command line scim.token_revoked okta":                 true,
	}
	for _, line := range append(auditBy(t, db, "user."), auditBy(t, db, "scim.")...) {
		delete(want, line)
	}
	if len(want) > 0 {
		t.Errorf("the audit log lacks %v; it has %v and %v", want, auditBy(t, db, "user."), auditBy(t, db, "scim."))
	}
}

// TestFailureGetsASentence: a failure of Rounds' own on a page (here the
// provisioning tokens' table is gone) answers 500 with a sentence, never
// the database's text, and is logged at ERROR with its cause, as SCIM's
// are.
func TestFailureGetsASentence(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	logs := &logSink{}
	inst := startInstance(t, db, nil, logs)
	admin := newClient(t, db)
	admin.login(inst.URL, "admin", adminPassword)
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `alter table scim_tokens rename to scim_tokens_away`); err != nil {
		t.Fatal(err)
	}
	status, body := admin.do("GET", inst.URL+"/admin/provisioning", "", "")
	if status != http.StatusInternalServerError || !strings.Contains(string(body), "Something went wrong on our side") {
		t.Errorf("the page without its table: %d, want 500 with a sentence", status)
	}
	for _, s := range []string{"SQLSTATE", "scim_tokens", "relation"} {
		if strings.Contains(string(body), s) {
			t.Errorf("the page has the database's text (%q)", s)
		}
	}
	var logged bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["level"] == "ERROR" && strings.Contains(fmt.Sprint(entry["err"]), "scim_tokens") {
			logged = true
		}
	}
	if !logged {
		t.Error("the 500 is not logged at ERROR with its cause")
	}
}

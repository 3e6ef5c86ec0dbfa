package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// scimClient speaks SCIM to an instance with a provisioning token, as an
// identity provider does.
type scimClient struct {
	t     *testing.T
	token string
}

func (s scimClient) do(method, url, body string) (int, map[string]any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/scim+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			s.t.Fatalf("%s %s: %d, not JSON: %s", method, url, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, out
}

// must does a request that must answer want, and returns the body.
func (s scimClient) must(want int, method, url, body string) map[string]any {
	s.t.Helper()
	status, out := s.do(method, url, body)
	if status != want {
		s.t.Fatalf("%s %s: %d %v, want %d", method, url, status, out, want)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestProvisioning runs the request sequences Okta and Microsoft Entra
// document against two instances: look a person up, create them, read them
// back, put them in a group, change the group's members and name, and
// deactivate them. Deactivating a person on one instance ends, at once and
// on the other instance too, their session and their API token, and hands
// their waiting rounds on: a round that escalated to them from team leads
// goes back to the team, one given to them directly to the admins' queue,
// each with an audit entry. Made active again, they sign in afresh: the old
// session and token stay ended.
func TestProvisioning(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	env := map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}
	a, b := startInstance(t, db, env, nil), startInstance(t, db, env, nil)
	okta := scimClient{t: t, token: lastLine(cli(t, db, "", "scim", "token", "create", "okta"))}
	entra := scimClient{t: t, token: lastLine(cli(t, db, "", "scim", "token", "create", "entra"))}

	if status, _ := (scimClient{t: t, token: "made-up"}).do("GET", a.URL+"/scim/v2/Users", ""); status != http.StatusUnauthorized {
		t.Errorf("a made-up token: %d, want 401", status)
	}

	// Okta: look ada up by userName, create her, read her back.
	q := "?" + url.Values{"filter": {`userName eq "ada@example.com"`}, "startIndex": {"1"}, "count": {"100"}}.Encode()
	if got := okta.must(200, "GET", a.URL+"/scim/v2/Users"+q, ""); got["totalResults"] != float64(0) {
		t.Errorf("before she is created, the lookup finds %v", got)
	}
	ada := okta.must(201, "POST", a.URL+"/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
		"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},
		"emails":[{"primary":true,"value":"ada@example.com","type":"work"}],"displayName":"Ada Lovelace",
		"locale":"en-US","externalId":"00u1ada","groups":[],"active":true}`)
	adaID, _ := ada["id"].(string)
	if got := okta.must(200, "GET", b.URL+"/scim/v2/Users"+q, ""); got["totalResults"] != float64(1) {
		t.Errorf("after she is created, the lookup on the other instance finds %v", got)
	}
	if got := okta.must(200, "GET", b.URL+"/scim/v2/Users/"+adaID, ""); got["userName"] != "ada@example.com" || got["active"] != true {
		t.Errorf("read back: %v", got)
	}
	okta.must(409, "POST", a.URL+"/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"ada@example.com"}`)

	// Entra: bob, with the enterprise extension.
	bob := entra.must(201, "POST", b.URL+"/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User",
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],"externalId":"0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
		"userName":"bob@contoso.example","active":true,"emails":[{"primary":true,"type":"work","value":"bob@contoso.example"}],
		"meta":{"resourceType":"User"},"name":{"formatted":"Bob Smith","familyName":"Smith","givenName":"Bob"},"roles":[]}`)
	bobID, _ := bob["id"].(string)

	// Okta's group, with ada; then bob in, ada out, and a new name.
	group := okta.must(201, "POST", a.URL+"/scim/v2/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],
		"displayName":"Rounds Leads","members":[{"value":"`+adaID+`","display":"ada@example.com"}]}`)
	groupID, _ := group["id"].(string)
	if out := cli(t, db, "", "team", "list"); !strings.Contains(out, "Rounds-Leads") || !strings.Contains(out, "ada@example.com") {
		t.Errorf("team list after the group was pushed: %q", out)
	}
	okta.must(200, "PATCH", a.URL+"/scim/v2/Groups/"+groupID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"add","path":"members","value":[{"value":"`+bobID+`","display":"bob@contoso.example"}]}]}`)
	okta.must(200, "PATCH", b.URL+"/scim/v2/Groups/"+groupID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"remove","path":"members[value eq \"`+adaID+`\"]"}]}`)
	got := okta.must(200, "PATCH", a.URL+"/scim/v2/Groups/"+groupID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"replace","value":{"id":"`+groupID+`","displayName":"Rounds Leads (EU)"}}]}`)
	if members := fmt.Sprint(got["members"]); got["displayName"] != "Rounds Leads (EU)" || !strings.Contains(members, bobID) || strings.Contains(members, "ada@") {
		t.Errorf("group after the patches: %v", got)
	}
	// Entra's group patches: add ada, remove bob, with value lists.
	entra.must(200, "PATCH", b.URL+"/scim/v2/Groups/"+groupID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"Add","path":"members","value":[{"$ref":null,"value":"`+adaID+`"}]}]}`)
	got = entra.must(200, "PATCH", b.URL+"/scim/v2/Groups/"+groupID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"Remove","path":"members","value":[{"$ref":null,"value":"`+bobID+`"}]}]}`)
	if members := fmt.Sprint(got["members"]); !strings.Contains(members, "ada@") || strings.Contains(members, "bob@") {
		t.Errorf("group after Entra's patches: %v", got)
	}

	// Ada at work: a password (break-glass, for this test), a session on
	// A, an API token, and two rounds waiting for her: one given to her,
	// one that escalated to her from team leads.
	cli(t, db, "a long password\n", "user", "password", "ada@example.com")
	cli(t, db, "", "team", "add", "leads")
	jar, _ := cookiejar.New(nil)
	adaWeb := &client{t: t, jar: jar}
	adaWeb.login(a.URL, "ada@example.com", "a long password")
	adaAPI := person(t, db, "ada@example.com")
	api := newClient(t, db)
	direct := api.start(a.URL, `{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/a"},"assignee":"ada@example.com"}`)
	escalated := api.start(a.URL, `{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/b"},"assignee":"team:leads",
		"escalate_after":"1s","escalate_to":"ada@example.com"}`)
	api.waitFor(a.URL, direct.ID, 20*time.Second, roundIs(1))
	api.waitFor(a.URL, escalated.ID, 20*time.Second, roundIs(1))
	waitAssignee(t, db, escalated.ID, "ada@example.com", 30*time.Second)
	if status, _ := adaAPI.do("GET", b.URL+"/api/v1/calls/"+direct.ID, "", ""); status != http.StatusOK {
		t.Fatalf("ada's token before: %d", status)
	}

	// Okta deactivates her, on B.
	got = okta.must(200, "PATCH", b.URL+"/scim/v2/Users/"+adaID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"replace","value":{"active":false}}]}`)
	if got["active"] != false {
		t.Errorf("after the deactivation: %v", got)
	}
	for _, base := range []string{a.URL, b.URL} {
		if status, _ := adaAPI.do("GET", base+"/api/v1/calls/"+direct.ID, "", ""); status != http.StatusUnauthorized {
			t.Errorf("ada's API token on %s after the deactivation: %d, want 401", base, status)
		}
		if status, _ := adaWeb.do("GET", base+"/inbox", "", ""); status != http.StatusSeeOther {
			t.Errorf("ada's session on %s after the deactivation: %d, want a redirect to sign in", base, status)
		}
	}
	// Made active again, she signs in afresh: the old session and token
	// stay ended.
	okta.must(200, "PATCH", a.URL+"/scim/v2/Users/"+adaID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"replace","value":{"active":true}}]}`)
	if status, _ := adaAPI.do("GET", b.URL+"/api/v1/calls/"+direct.ID, "", ""); status != http.StatusUnauthorized {
		t.Errorf("ada's old API token once she is active again: %d, want 401", status)
	}
	if status, _ := adaWeb.do("GET", a.URL+"/inbox", "", ""); status != http.StatusSeeOther {
		t.Errorf("ada's old session once she is active again: %d, want a redirect to sign in", status)
	}
	if got := assigneeOf(t, db, direct.ID); got != "team:admins" {
		t.Errorf("the round given to ada went to %q, want the admins' queue (team:admins)", got)
	}
	if got := assigneeOf(t, db, escalated.ID); got != "team:leads" {
		t.Errorf("the round that escalated to ada went to %q, want back to team:leads", got)
	}
	for _, id := range []string{direct.ID, escalated.ID} {
		if n := auditCounts(t, db, id)["call.handed_over"]; n != 1 {
			t.Errorf("call %s has %d call.handed_over audit entries, want 1", id, n)
		}
	}
	// The admin, in the admins' queue, finds the round in the inbox.
	api.login(a.URL, "admin", adminPassword)
	if inbox := api.page(a.URL + "/inbox").Find(`a[href="/calls/` + direct.ID + `"]`); inbox.Length() == 0 {
		t.Error("the admin's inbox does not list the round handed to the admins' queue")
	}

	// Entra deactivates bob (a boolean, path form), then deletes him.
	got = entra.must(200, "PATCH", a.URL+"/scim/v2/Users/"+bobID, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"Replace","path":"active","value":false}]}`)
	if got["active"] != false {
		t.Errorf("bob after Entra's deactivation: %v", got)
	}
	entra.must(204, "DELETE", b.URL+"/scim/v2/Users/"+bobID, "")
	entra.must(404, "GET", a.URL+"/scim/v2/Users/"+bobID, "")
}

func assigneeOf(t *testing.T, db, callID string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var a *string
	if err := conn.QueryRow(context.Background(), `select assignee from calls where id = $1`, callID).Scan(&a); err != nil {
		t.Fatal(err)
	}
	if a == nil {
		return ""
	}
	return *a
}

func waitAssignee(t *testing.T, db, callID, want string, limit time.Duration) {
	t.Helper()
	eventually(t, limit, func() error {
		if got := assigneeOf(t, db, callID); got != want {
			return fmt.Errorf("call %s is assigned to %q, not %s", callID, got, want)
		}
		return nil
	})
}

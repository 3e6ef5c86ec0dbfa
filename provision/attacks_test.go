package provision_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/store"
)

const (
	userSchemas  = `"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"]`
	groupSchemas = `"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"]`
)

// TestPasswordsNeverKept: a provider that syncs passwords (Okta's "Sync
// password") sends one on create and on every change, by PUT and by
// PATCH. None is kept or given back, in any list, filtered or not, and a
// filter cannot probe for it; the rest of what it sent is kept.
func TestPasswordsNeverKept(t *testing.T) {
	t.Parallel()
	s := start(t, nil, nil)
	base := s.srv.URL + "/scim/v2"
	const secret = "Synced-Pa55word"
	var answers [][]byte
	send := func(want int, method, path, body string) []byte {
		t.Helper()
		status, b := callRaw(t, s.token, method, base+path, body)
		if status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, status, b, want)
		}
		answers = append(answers, b)
		return b
	}
	created := send(201, "POST", "/Users", `{`+userSchemas+`,"userName":"pat@example.com","externalId":"00upat",
		"password":"`+secret+`-1","active":true,"emails":[{"value":"pat@example.com","primary":true}],
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Ops"}}`)
	var u map[string]any
	_ = json.Unmarshal(created, &u)
	id, _ := u["id"].(string)
	send(200, "PUT", "/Users/"+id, `{`+userSchemas+`,"userName":"pat@example.com","externalId":"00upat","password":"`+secret+`-2",
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Ops"}}`)
	send(200, "PATCH", "/Users/"+id, `{`+patchOp+`,"Operations":[{"op":"replace","path":"password","value":"`+secret+`-3"}]}`)
	send(200, "PATCH", "/Users/"+id, `{`+patchOp+`,"Operations":[{"op":"replace","value":{"password":"`+secret+`-4"}}]}`)
	send(200, "PATCH", "/Users/"+id, `{`+patchOp+`,"Operations":[{"op":"replace","value":{"Password":"`+secret+`-5"}}]}`)

	lookup := func(filter string) string { return "/Users?" + url.Values{"filter": {filter}}.Encode() }
	send(200, "GET", "/Users", "")
	send(200, "GET", "/Users/"+id, "")
	send(200, "GET", lookup(`userName eq "pat@example.com"`), "")
	send(200, "GET", lookup(`externalId eq "00upat"`), "")
	send(200, "GET", lookup(`userName sw "pat"`), "")
	for i, b := range answers {
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(bytes.ToLower(b), []byte(`"password"`)) {
			t.Errorf("answer %d gives the password back: %s", i, b)
		}
	}
	if last := answers[len(answers)-1]; !bytes.Contains(last, []byte(`"department":"Ops"`)) {
		t.Errorf("what else the provider sent was not kept: %s", last)
	}
	for n := 1; n <= 5; n++ {
		probe := fmt.Sprintf(`password eq "%s-%d"`, secret, n)
		if status, out := call(t, s.token, "GET", base+lookup(probe), ""); status == 200 && out["totalResults"] != float64(0) {
			t.Errorf("the filter %s finds %v", probe, out["totalResults"])
		}
	}
	var kept string
	if err := s.pool.QueryRow(context.Background(), `select attributes::text from scim_users`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(kept, secret) || strings.Contains(strings.ToLower(kept), `"password"`) {
		t.Errorf("scim_users.attributes keeps the password: %s", kept)
	}
}

// TestGroupsTakeNoTeamOfRounds: a provider's group may not take over a
// team made in Rounds (by its name, in any case, nor by its id), nor the
// admins' queue, nor bring into a team an account it did not provision.
func TestGroupsTakeNoTeamOfRounds(t *testing.T) {
	t.Parallel()
	s := start(t, nil, nil)
	ctx := context.Background()
	base := s.srv.URL + "/scim/v2"
	if _, err := s.st.CreateTeam(ctx, "finance"); err != nil {
		t.Fatal(err)
	}
	carol, err := s.st.CreateUser(ctx, "carol", "a long password", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.st.AddTeamMember(ctx, "finance", "carol"); err != nil {
		t.Fatal(err)
	}
	_, ada := call(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"ada@example.com"}`)
	adaID, _ := ada["id"].(string)
	carolID := fmt.Sprint(carol.ID)
	members := func(team string) []string {
		teams, err := s.st.Teams(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tm := range teams {
			if tm.Name == team {
				return tm.Members
			}
		}
		return nil
	}
	teamID := func(team string) string {
		teams, _ := s.st.Teams(ctx)
		for _, tm := range teams {
			if tm.Name == team {
				return fmt.Sprint(tm.ID)
			}
		}
		t.Fatalf("no team %s", team)
		return ""
	}

	t.Run("ErrNameOfATeamMadeHere", func(t *testing.T) {
		for _, name := range []string{"finance", "Finance"} {
			status, out := call(t, s.token, "POST", base+"/Groups", `{`+groupSchemas+`,"displayName":"`+name+`",
				"members":[{"value":"`+adaID+`"}]}`)
			if status != 409 || out["scimType"] != "uniqueness" {
				t.Errorf("POST /Groups %s: %d %v, want 409 uniqueness", name, status, out)
			}
		}
		if got := members("finance"); !slices.Equal(got, []string{"carol"}) {
			t.Errorf("finance's members are %v, want carol alone", got)
		}
	})
	t.Run("ErrTeamMadeHereByID", func(t *testing.T) {
		id := teamID("finance")
		for _, req := range [][3]string{
			{"PATCH", "/Groups/" + id, `{` + patchOp + `,"Operations":[{"op":"add","path":"members","value":[{"value":"` + adaID + `"}]}]}`},
			{"PUT", "/Groups/" + id, `{` + groupSchemas + `,"displayName":"finance","members":[]}`},
			{"DELETE", "/Groups/" + id, ""},
		} {
			if status, out := call(t, s.token, req[0], base+req[1], req[2]); status != 404 {
				t.Errorf("%s %s: %d %v, want 404", req[0], req[1], status, out)
			}
		}
		if got := members("finance"); !slices.Equal(got, []string{"carol"}) {
			t.Errorf("finance's members are %v, want carol alone", got)
		}
	})
	t.Run("ErrAdmins", func(t *testing.T) {
		status, out := call(t, s.token, "POST", base+"/Groups", `{`+groupSchemas+`,"displayName":"admins",
			"members":[{"value":"`+carolID+`"}]}`)
		if status != 409 || out["scimType"] != "uniqueness" {
			t.Errorf("POST /Groups admins: %d %v, want 409 uniqueness", status, out)
		}
		if got := members("admins"); slices.Contains(got, "carol") {
			t.Errorf("carol is in the admins' queue: %v", got)
		}
	})
	t.Run("ErrMemberNotProvisioned", func(t *testing.T) {
		status, out := call(t, s.token, "POST", base+"/Groups", `{`+groupSchemas+`,"displayName":"ops",
			"members":[{"value":"`+adaID+`"},{"value":"`+carolID+`"}]}`)
		if status != 400 || out["scimType"] != "invalidValue" {
			t.Errorf("a group with carol: %d %v, want 400 invalidValue", status, out)
		}
		status, g := call(t, s.token, "POST", base+"/Groups", `{`+groupSchemas+`,"displayName":"ops","members":[{"value":"`+adaID+`"}]}`)
		if status != 201 {
			t.Fatalf("a group with ada: %d %v", status, g)
		}
		gid, _ := g["id"].(string)
		for _, req := range [][3]string{
			{"PATCH", "/Groups/" + gid, `{` + patchOp + `,"Operations":[{"op":"add","path":"members","value":[{"value":"` + carolID + `"}]}]}`},
			{"PUT", "/Groups/" + gid, `{` + groupSchemas + `,"displayName":"ops","members":[{"value":"` + carolID + `"}]}`},
		} {
			if status, out := call(t, s.token, req[0], base+req[1], req[2]); status != 400 || out["scimType"] != "invalidValue" {
				t.Errorf("%s with carol: %d %v, want 400 invalidValue", req[0], status, out)
			}
		}
		if got := members("ops"); !slices.Equal(got, []string{"ada@example.com"}) {
			t.Errorf("ops' members are %v, want ada alone", got)
		}
	})
}

// TestDisableHereHolds: an admin disabled a provisioned person in Rounds.
// A PUT that does not say active leaves them disabled, and so does the
// provider's active: true, refused with an audit entry naming the token,
// until an admin enables them; a deactivation the provider made, it may
// lift.
func TestDisableHereHolds(t *testing.T) {
	t.Parallel()
	s := start(t, nil, nil)
	ctx := context.Background()
	base := s.srv.URL + "/scim/v2"
	_, u := call(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"dan@example.com","active":true}`)
	id, _ := u["id"].(string)
	disabled := func() bool {
		acct, err := s.st.UserByName(ctx, "dan@example.com")
		if err != nil {
			t.Fatal(err)
		}
		return acct.Disabled
	}
	step := func(what, method, body string, wantActive bool) {
		t.Helper()
		status, out := call(t, s.token, method, base+"/Users/"+id, body)
		if status != 200 || out["active"] != wantActive || disabled() == wantActive {
			t.Errorf("%s: %d active=%v, disabled=%v; want active=%v", what, status, out["active"], disabled(), wantActive)
		}
	}
	if err := s.st.SetUserDisabled(ctx, "dan@example.com", true); err != nil { // the users page and web user disable
		t.Fatal(err)
	}
	step("a PUT without active", "PUT", `{`+userSchemas+`,"userName":"dan@example.com","name":{"givenName":"Dan"}}`, false)
	step("a PUT with active: true", "PUT", `{`+userSchemas+`,"userName":"dan@example.com","active":true}`, false)
	step("a PATCH of active", "PATCH", `{`+patchOp+`,"Operations":[{"op":"replace","path":"active","value":true}]}`, false)
	step("a PATCH of the name", "PATCH", `{`+patchOp+`,"Operations":[{"op":"replace","value":{"displayName":"Dan"}}]}`, false)
	refused, err := s.st.AuditLog(ctx, store.AuditFilter{Action: "user.reactivation_refused"})
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 2 || refused[0].Target != "dan@example.com" || refused[0].Actor != "scim:test" {
		t.Errorf("refused reactivations in the audit log: %+v; want 2, for dan, by scim:test", refused)
	}

	if err := s.st.SetUserDisabled(ctx, "dan@example.com", false); err != nil { // an admin lifts it
		t.Fatal(err)
	}
	step("the provider's deactivation", "PATCH", `{`+patchOp+`,"Operations":[{"op":"replace","path":"active","value":false}]}`, false)
	step("a PUT without active after it", "PUT", `{`+userSchemas+`,"userName":"dan@example.com"}`, false)
	step("the provider's reactivation", "PATCH", `{`+patchOp+`,"Operations":[{"op":"replace","path":"active","value":true}]}`, true)
}

// lockedBuffer is a log the server writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

// dbText is what of Postgres' errors must never reach a provider.
var dbText = []string{"SQLSTATE", "scim_users", "index", "relation", "ERROR:", "pgx", "duplicate key"}

// TestBadInputGetsASentence: what is too long, too much or taken gets a
// 400 or 409 that says so, and a failure of ours a 500 with a sentence;
// never the database's text, which goes to the log at ERROR.
func TestBadInputGetsASentence(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	s := start(t, nil, logs)
	base := s.srv.URL + "/scim/v2"
	check := func(what string, status int, body []byte, wantStatus int, wantType string) {
		t.Helper()
		var out map[string]any
		_ = json.Unmarshal(body, &out)
		scimType, _ := out["scimType"].(string)
		if detail, _ := out["detail"].(string); status != wantStatus || scimType != wantType || detail == "" {
			t.Errorf("%s: %d %s, want %d %s with a sentence", what, status, body, wantStatus, wantType)
		}
		for _, s := range dbText {
			if bytes.Contains(body, []byte(s)) {
				t.Errorf("%s: the answer has the database's text (%q): %s", what, s, body)
			}
		}
	}
	// Letters Postgres cannot compress below its index's row limit.
	rnd := rand.New(rand.NewPCG(1, 2))
	long := strings.Map(func(rune) rune { return rune('a' + rnd.IntN(26)) }, strings.Repeat(" ", 3500))
	status, body := callRaw(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"`+long+`"}`)
	check("a 3,500-character userName", status, body, 400, "invalidValue")
	status, body = callRaw(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"e@example.com","externalId":"`+long+`"}`)
	check("a 3,500-character externalId", status, body, 400, "invalidValue")
	status, body = callRaw(t, s.token, "POST", base+"/Groups", `{`+groupSchemas+`,"displayName":"`+long+`"}`)
	check("a 3,500-character displayName", status, body, 400, "invalidValue")
	var addresses []string
	for range 20 {
		addresses = append(addresses, `{"formatted":"`+strings.Repeat("x", 4000)+`"}`)
	}
	status, body = callRaw(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"f@example.com","addresses":[`+strings.Join(addresses, ",")+`]}`)
	check("80 KB of addresses", status, body, 400, "invalidValue")

	// externalId names one person.
	if status, out := call(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"g@example.com","externalId":"00u1"}`); status != 201 {
		t.Fatalf("g: %d %v", status, out)
	}
	status, body = callRaw(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"h@example.com","externalId":"00u1"}`)
	check("h with g's externalId", status, body, 409, "uniqueness")
	_, h := call(t, s.token, "POST", base+"/Users", `{`+userSchemas+`,"userName":"h@example.com","externalId":"00u2"}`)
	status, body = callRaw(t, s.token, "PUT", base+"/Users/"+fmt.Sprint(h["id"]), `{`+userSchemas+`,"userName":"h@example.com","externalId":"00u1"}`)
	check("h changed to g's externalId", status, body, 409, "uniqueness")

	// A failure of ours.
	if _, err := s.pool.Exec(context.Background(), `alter table scim_users rename to scim_users_away`); err != nil {
		t.Fatal(err)
	}
	status, body = callRaw(t, s.token, "GET", base+"/Users", "")
	check("a list when the table is gone", status, body, 500, "")
	var logged bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["level"] == "ERROR" && strings.Contains(fmt.Sprint(entry["err"]), "scim_users") {
			logged = true
		}
	}
	if !logged {
		t.Errorf("the 500 is not logged at ERROR with its cause:\n%s", logs.String())
	}
}

// rowCounter counts the rows each statement on scim_users returns.
type rowCounter struct {
	mu   sync.Mutex
	on   bool
	rows []int64
}

type sqlKey struct{}

func (c *rowCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, data.SQL)
}

func (c *rowCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on && strings.Contains(sql, "scim_users") && strings.HasPrefix(data.CommandTag.String(), "SELECT") {
		c.rows = append(c.rows, data.CommandTag.RowsAffected())
	}
}

func (c *rowCounter) count(on bool) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = on
	rows := c.rows
	c.rows = nil
	return rows
}

// TestLookupReadsOneRow: the lookup a provider makes before every create,
// userName eq (in any case) or externalId eq, gets from Postgres the one
// row it finds, not every person to be filtered here.
func TestLookupReadsOneRow(t *testing.T) {
	t.Parallel()
	counter := &rowCounter{}
	s := start(t, counter, nil)
	base := s.srv.URL + "/scim/v2"
	for i := range 25 {
		if status, out := call(t, s.token, "POST", base+"/Users", fmt.Sprintf(`{%s,"userName":"person-%d@example.com","externalId":"00u%d"}`,
			userSchemas, i, i)); status != 201 {
			t.Fatalf("person %d: %d %v", i, status, out)
		}
	}
	for _, filter := range []string{`userName eq "Person-17@Example.com"`, `externalId eq "00u17"`} {
		counter.count(true)
		status, out := call(t, s.token, "GET", base+"/Users?"+url.Values{"filter": {filter}}.Encode(), "")
		rows := counter.count(false)
		found, _ := out["Resources"].([]any)
		if status != 200 || out["totalResults"] != float64(1) || len(found) != 1 ||
			found[0].(map[string]any)["userName"] != "person-17@example.com" {
			t.Errorf("%s: %d %v, want person-17 alone", filter, status, out)
		}
		if len(rows) == 0 || slices.Max(rows) > 1 {
			t.Errorf("%s: the statements on scim_users returned %v rows; want 1 at most", filter, rows)
		}
	}
}

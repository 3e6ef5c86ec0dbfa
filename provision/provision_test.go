package provision_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/provision"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

func newServer(t *testing.T) (*httptest.Server, *store.Store, string) {
	t.Helper()
	s := start(t, nil, nil)
	return s.srv, s.st, s.token
}

// service is a SCIM service over a database of its own.
type service struct {
	srv   *httptest.Server
	st    *store.Store
	pool  *pgxpool.Pool
	token string
}

// start serves SCIM over a fresh database, through a pool traced by
// tracer when given, logging JSON to a buffer, with a token named test.
func start(t *testing.T, tracer pgx.QueryTracer, logs io.Writer) *service {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := store.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	if logs == nil {
		logs = io.Discard
	}
	h, err := provision.Handler(st, "test", slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	token, err := st.CreateProvisionToken(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return &service{srv: srv, st: st, pool: pool, token: token}
}

func call(t *testing.T, token, method, url, body string) (int, map[string]any) {
	t.Helper()
	status, b := callRaw(t, token, method, url, body)
	out := map[string]any{}
	_ = json.Unmarshal(b, &out)
	return status, out
}

// callRaw makes a SCIM request and returns the body as sent.
func callRaw(t *testing.T, token, method, url, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/scim+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

const patchOp = `"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"]`

func TestUsers(t *testing.T) {
	t.Parallel()
	srv, st, token := newServer(t)
	base := srv.URL + "/scim/v2"

	t.Run("ErrNoToken", func(t *testing.T) {
		if status, _ := call(t, "", "GET", base+"/Users", ""); status != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", status)
		}
	})

	status, u := call(t, token, "POST", base+"/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
		"userName":"Grace Hopper","emails":[{"value":"g@example.com"},{"value":"grace@example.com","primary":true}]}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, u)
	}
	id, _ := u["id"].(string)
	acct, err := st.UserByName(context.Background(), "Grace-Hopper")
	if err != nil || acct.Disabled {
		t.Fatalf("the account made for her: %+v, %v", acct, err)
	}
	contact, _ := st.Contact(context.Background(), "Grace-Hopper")
	if contact.Email != "grace@example.com" {
		t.Errorf("e-mail = %q, want the primary one", contact.Email)
	}

	t.Run("FilterByUserName", func(t *testing.T) {
		_, list := call(t, token, "GET", base+`/Users?filter=userName+eq+%22Grace%20Hopper%22`, "")
		if list["totalResults"] != float64(1) {
			t.Errorf("filter found %v", list)
		}
		_, list = call(t, token, "GET", base+`/Users?filter=userName+eq+%22someone%22`, "")
		if list["totalResults"] != float64(0) {
			t.Errorf("filter for someone else found %v", list)
		}
	})

	t.Run("DeactivateAsAString", func(t *testing.T) {
		// Entra has sent booleans as strings.
		status, out := call(t, token, "PATCH", base+"/Users/"+id, `{`+patchOp+`,"Operations":[{"op":"Replace","path":"active","value":"False"}]}`)
		if status != http.StatusOK || out["active"] != false {
			t.Fatalf("patch: %d %v", status, out)
		}
		acct, _ := st.UserByName(context.Background(), "Grace-Hopper")
		if !acct.Disabled {
			t.Error("the account is still enabled")
		}
	})

	t.Run("ErrUnknown", func(t *testing.T) {
		if status, _ := call(t, token, "GET", base+"/Users/999999", ""); status != http.StatusNotFound {
			t.Errorf("status %d, want 404", status)
		}
	})
}

func TestGroupPatches(t *testing.T) {
	t.Parallel()
	srv, st, token := newServer(t)
	base := srv.URL + "/scim/v2"
	var ids []string
	for _, name := range []string{"a@example.com", "b@example.com"} {
		_, u := call(t, token, "POST", base+"/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"`+name+`"}`)
		ids = append(ids, u["id"].(string))
	}
	status, g := call(t, token, "POST", base+"/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"Ops @ EU"}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, g)
	}
	gid := g["id"].(string)
	members := func() string {
		teams, _ := st.Teams(context.Background())
		for _, tm := range teams {
			if tm.Name == "Ops---EU" {
				return strings.Join(tm.Members, ",")
			}
		}
		return "no team Ops---EU"
	}
	for _, step := range []struct{ name, ops, want string }{
		{"AddList", `[{"op":"add","path":"members","value":[{"value":"` + ids[0] + `"},{"value":"` + ids[1] + `"}]}]`, "a@example.com,b@example.com"},
		{"RemoveByFilter", `[{"op":"remove","path":"members[value eq \"` + ids[0] + `\"]"}]`, "b@example.com"},
		{"ReplaceAll", `[{"op":"replace","path":"members","value":[{"value":"` + ids[0] + `"}]}]`, "a@example.com"},
		{"RemoveEvery", `[{"op":"remove","path":"members"}]`, ""},
	} {
		t.Run(step.name, func(t *testing.T) {
			if status, out := call(t, token, "PATCH", base+"/Groups/"+gid, `{`+patchOp+`,"Operations":`+step.ops+`}`); status != http.StatusOK {
				t.Fatalf("patch: %d %v", status, out)
			}
			if got := members(); got != step.want {
				t.Errorf("members = %q, want %q", got, step.want)
			}
		})
	}
}

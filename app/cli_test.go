package app

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestUserPasswordCommand resets a lost admin password from the command
// line, the password on standard input: the old one stops working and the
// new one signs in; a short password or an unknown user is refused in words.
func TestUserPasswordCommand(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	base := startApp(t, db)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	run := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := Command(context.Background(), args, strings.NewReader(stdin), &out, getenv)
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
	c := newSession(t)
	_, page := c.do("GET", base+"/login", nil)
	form := url.Values{"username": {"admin"}, "password": {adminPassword}, "csrf_token": {csrfFrom(page)}}
	if status, _ := c.do("POST", base+"/login", form); status == http.StatusSeeOther {
		t.Error("the old password still signs in")
	}
	c.login(base, "admin", "the new admin password")
}

func TestUserCommands(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	run := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := Command(context.Background(), args, strings.NewReader(stdin), &out, getenv)
		return out.String(), err
	}
	if _, err := run("long enough password\n", "user", "add", "--admin", "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("another password\n", "user", "add", "ops"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("adding a taken name: err = %v", err)
	}
	if _, err := run("short\n", "user", "add", "newbie"); err == nil || !strings.Contains(err.Error(), "at least 8") {
		t.Errorf("short password: err = %v", err)
	}
	if _, err := run("", "user", "disable", "ops"); err != nil {
		t.Fatal(err)
	}
	list, err := run("", "user", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ops\s+true\s+true\s`).MatchString(list) {
		t.Errorf("user list:\n%s", list)
	}
	if strings.Contains(list, "newbie") {
		t.Error("a refused user was added")
	}
	if _, err := run("", "token", "create", "ops"); err == nil {
		t.Error("a disabled user got a token")
	}
}

// TestUserPasswordBreakGlass: a setting the server would refuse (a
// duration that is not one, sign-on at a plain-http provider) does not
// stand in the way of the command meant to put things right: web user
// password reads only where the database is.
func TestUserPasswordBreakGlass(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": db}
	getenv := func(k string) string { return env[k] }
	run := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := Command(context.Background(), args, strings.NewReader(stdin), &out, getenv)
		return out.String(), err
	}
	if _, err := run("the first admin password\n", "user", "add", "--admin", "admin"); err != nil {
		t.Fatal(err)
	}
	env["ROUND_TTL"], env["OIDC_ISSUER"] = "bogus", "http://example.com"
	if _, err := LoadConfig(getenv); err == nil {
		t.Fatal("LoadConfig took ROUND_TTL=bogus and a plain-http OIDC_ISSUER; the test means nothing")
	}
	out, err := run("the break-glass password\n", "user", "password", "admin")
	if err != nil || !strings.Contains(out, "set a new password for admin") {
		t.Fatalf("web user password admin with a wrong setting elsewhere: %q, %v", out, err)
	}
	st, closeDB, err := openStore(context.Background(), databaseConfig(getenv))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	if _, err := st.Authenticate(context.Background(), "admin", "the break-glass password"); err != nil {
		t.Errorf("the new password does not sign in: %v", err)
	}
	// A wrong CREDENTIALS_KEY is still refused where credentials are stored.
	env["CREDENTIALS_KEY"] = "short"
	args := []string{"server", "add", "issues", "https://mcp.example/mcp", "--header", "Authorization: Bearer x"}
	if _, err := run("", args...); err == nil || !strings.Contains(err.Error(), "CREDENTIALS_KEY") {
		t.Errorf("server add --header with a wrong CREDENTIALS_KEY: %v, want it refused", err)
	}
	if _, err := st.ServerByName(context.Background(), "issues"); err == nil {
		t.Error("server add registered the server though its credentials could not be stored")
	}
}

// TestServerAddHeaderFromStdin: "web server add --header -" takes the
// credential from standard input, so it is never in the command line.
func TestServerAddHeaderFromStdin(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	args := []string{"server", "add", "issues", "https://mcp.example/mcp", "--header", "-"}
	if err := Command(context.Background(), args, strings.NewReader("Authorization: Bearer from-stdin\n"), io.Discard, getenv); err != nil {
		t.Fatal(err)
	}
	st, closeDB, err := openStore(context.Background(), databaseConfig(getenv))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	if err := useCredentialsKey(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	srv, err := st.ServerByName(context.Background(), "issues")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := st.ServerHeader(srv); err != nil || h.Get("Authorization") != "Bearer from-stdin" {
		t.Errorf("the stored header: %v, %v", h, err)
	}
}

// adminPassword is the first admin's password in tests.
const adminPassword = "correct horse battery staple"

// startApp starts an instance over db, with the demo MCP server, and stops
// it when the test ends. It returns the instance's URL.
func startApp(t *testing.T, db string) string {
	t.Helper()
	mcp := httptest.NewServer(demo.Handler(demo.Options{Secret: []byte("test secret")}))
	t.Cleanup(mcp.Close)
	env := map[string]string{"DATABASE_URL": db, "ADMIN_PASSWORD": adminPassword, "LISTEN_ADDR": "127.0.0.1:0",
		"MCP_SERVERS": "demo=" + mcp.URL + "/mcp"}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return "http://" + a.Addr()
}

// session is a person's browser as the pages see it: cookies, forms, no
// redirects followed.
type session struct {
	t    *testing.T
	http *http.Client
}

func newSession(t *testing.T) *session {
	jar, _ := cookiejar.New(nil)
	return &session{t: t, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a GET, or a POST of form when it is not nil.
func (s *session) do(method, url string, form url.Values) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// login signs in through the sign-in form.
func (s *session) login(base, name, password string) {
	s.t.Helper()
	_, page := s.do("GET", base+"/login", nil)
	form := url.Values{"username": {name}, "password": {password}, "csrf_token": {csrfFrom(page)}, "next": {"/"}}
	if status, body := s.do("POST", base+"/login", form); status != http.StatusSeeOther {
		s.t.Fatalf("sign in as %s: %d %s", name, status, body)
	}
	if _, home := s.do("GET", base+"/", nil); csrfFrom(home) == "" {
		s.t.Fatal("no CSRF token on the home page after signing in")
	}
}

// csrfFrom finds the CSRF token in a page.
func csrfFrom(page []byte) string {
	const marker = `name="csrf_token" value="`
	i := bytes.Index(page, []byte(marker))
	if i < 0 {
		return ""
	}
	rest := page[i+len(marker):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

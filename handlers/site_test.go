package handlers_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"github.com/mcp-rounds/rounds/catalog"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/handlers"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// site is one instance put together as app.Start does, over a fresh
// database, with the demo MCP server registered as "demo".
type site struct {
	URL   string
	store *store.Store
}

// newSite starts a site for the test, with two people: admin, and mallory,
// who is not an admin.
func newSite(t *testing.T) *site {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	pool := storetest.NewPool(t)
	notifier := store.NewNotifier(pool, log, engine.RiverTopics()...)
	nctx, stopNotifier := context.WithCancel(ctx)
	t.Cleanup(stopNotifier)
	go notifier.Run(nctx)
	st, err := store.New(pool, store.Options{Notifier: notifier})
	if err != nil {
		t.Fatal(err)
	}
	mcp := httptest.NewServer(demo.Handler(demo.Options{Secret: []byte("handlers test secret")}))
	t.Cleanup(mcp.Close)
	if _, err := st.UpsertServer(ctx, "demo", mcp.URL+"/mcp"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateFirstAdmin(ctx, "admin", password); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "mallory", password, false); err != nil {
		t.Fatal(err)
	}
	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 10 * time.Second})
	eng, err := engine.New(pool, st, mc, engine.Config{
		InstanceID:   "handlers-test",
		Notifier:     notifier,
		Capabilities: mcpclient.Capabilities{FormElicitation: true, URLElicitation: true},
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Stop(ctx)
	})
	cat := catalog.New(catalog.Options{Store: st, MCP: mc, Capabilities: eng.Config().Capabilities,
		Token: eng.AccessToken, Refused: eng.TurnedDown, Log: log})
	h := handlers.New(handlers.Options{Store: st, Engine: eng, Catalog: cat, Logger: log, Notifier: notifier,
		Settings: handlers.Settings{InstanceID: "handlers-test", RoundTTL: time.Hour, Retention: time.Hour,
			Capabilities: eng.Config().Capabilities},
		Auth: handlers.AuthOptions{SessionKeys: [][]byte{randomKey(), randomKey()}, SessionTTL: time.Hour},
	})
	srv := httptest.NewServer(h.Routes())
	t.Cleanup(func() {
		h.Drain()
		srv.Close()
	})
	return &site{URL: srv.URL, store: st}
}

// password is every test person's password.
const password = "a long enough password"

func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// person is someone using the site: a browser's cookies and CSRF token
// for the pages, and an API token for the API.
type person struct {
	t     *testing.T
	site  *site
	jar   http.CookieJar
	csrf  string
	token string
}

// signIn signs name in through the sign-in form, and gives them an API
// token.
func (s *site) signIn(t *testing.T, name string) *person {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	p := &person{t: t, site: s, jar: jar}
	_, page := p.do("GET", "/login", nil, "")
	form := url.Values{"username": {name}, "password": {password}, "next": {"/"}, "csrf_token": {csrfFrom(t, page)}}
	if status, body := p.do("POST", "/login", nil, form.Encode()); status != http.StatusSeeOther {
		t.Fatalf("signing in as %s: %d %s", name, status, body)
	}
	_, home := p.do("GET", "/", nil, "")
	p.csrf = csrfFrom(t, home)
	u, err := s.store.UserByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, p.token, err = s.store.CreateToken(context.Background(), u.ID, "tests"); err != nil {
		t.Fatal(err)
	}
	return p
}

func csrfFrom(t *testing.T, page []byte) string {
	t.Helper()
	doc := parse(t, page)
	token, ok := doc.Find(`input[name="csrf_token"]`).First().Attr("value")
	if !ok {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	return token
}

func parse(t *testing.T, page []byte) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// do sends a request as the person: with their token to the API, with
// their cookies to the pages, following no redirect. A body for the pages
// is a form; for the API, JSON.
func (p *person) do(method, path string, header http.Header, body string) (int, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.site.URL+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if strings.HasPrefix(path, "/api/") {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+p.token)
	} else if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	client := &http.Client{Jar: p.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// post posts a form from one of the site's pages, with the CSRF token.
func (p *person) post(path string, form url.Values, header http.Header) (int, []byte) {
	p.t.Helper()
	form.Set("csrf_token", p.csrf)
	return p.do("POST", path, header, form.Encode())
}

// apiCall is a call as the API shows it.
type apiCall struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Round  *struct {
		Seq int `json:"seq"`
	} `json:"round"`
}

// startCall starts the demo's tool through the API and waits until its
// first round asks.
func (p *person) startCall(tool string) string {
	p.t.Helper()
	status, body := p.do("POST", "/api/v1/calls?wait=10s", nil, `{"server":"demo","tool":"`+tool+`","arguments":{}}`)
	if status != http.StatusCreated {
		p.t.Fatalf("starting %s: %d %s", tool, status, body)
	}
	var call apiCall
	if err := json.Unmarshal(body, &call); err != nil {
		p.t.Fatal(err)
	}
	p.waitForRound(call.ID, 1)
	return call.ID
}

// waitForRound waits until the call asks round seq.
func (p *person) waitForRound(id string, seq int) apiCall {
	p.t.Helper()
	var call apiCall
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		status, body := p.do("GET", "/api/v1/calls/"+id+"?wait=2s&after_seq="+strconv.Itoa(seq-1), nil, "")
		if status != http.StatusOK {
			p.t.Fatalf("reading call %s: %d %s", id, status, body)
		}
		call = apiCall{}
		if err := json.Unmarshal(body, &call); err != nil {
			p.t.Fatal(err)
		}
		if call.Status == store.CallInputRequired && call.Round != nil && call.Round.Seq == seq {
			return call
		}
	}
	p.t.Fatalf("call %s is %s, not asking round %d", id, call.Status, seq)
	return call
}

// apiMessage reads the message of an API error.
func apiMessage(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("an API error that is not JSON: %s", body)
	}
	return e.Error.Message
}

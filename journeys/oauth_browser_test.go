package journeys

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/demo"
	"github.com/mcp-rounds/rounds/mcptest"
)

// TestBrowserConnections walks the sign-in pages in headless Chromium, at
// laptop and phone widths, with axe-core finding no violation on any of
// Rounds' pages: a call to a server that wants a sign-in waits with
// "Connect to secure"; the person signs in at the authorization server's
// own page, comes back to the other instance, and the call goes on by
// itself. The server page then says connected, with Disconnect; the
// account page lists the connection; the admin's Connections page shows
// who is connected, and Revoke ends it.
func TestBrowserConnections(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	as := mcptest.NewAuthServer(t)
	as.Set(func(as *mcptest.AuthServer) { as.Consent = true })
	mcpURL := mcptest.Protect(t, as, demo.Handler(demo.Options{Secret: []byte("test secret, shared by every instance")}), "mcp:tools")
	db := newDatabase(t)
	addrA := freeLoopback(t)
	env := map[string]string{"MCP_SERVERS": "secure=" + mcpURL, "PUBLIC_URL": "http://" + addrA}
	a := startInstance(t, db, map[string]string{"MCP_SERVERS": env["MCP_SERVERS"], "PUBLIC_URL": env["PUBLIC_URL"], "LISTEN_ADDR": addrA}, nil)
	b := startInstance(t, db, env, nil)
	api := newClient(t, db)

	for _, width := range []int64{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			j := newJourney(t, browser, true)
			j.emulate(width, "UTC")
			j.signIn(b.URL)
			call := api.start(b.URL, `{"server":"secure","tool":"book_flight"}`)
			api.waitFor(b.URL, call.ID, 10*time.Second, func(x apiCall) bool { return x.Status == "authorization_required" })

			j.do("open the waiting call on B", chromedp.Navigate(b.URL+"/calls/"+call.ID),
				chromedp.WaitVisible(chromedp.CSS(`a[data-testid="connect"]`)))
			if got := j.text(`a[data-testid="connect"]`); got != "Connect to secure" {
				t.Errorf("the button says %q", got)
			}
			j.axeZero("the call waiting for a sign-in")

			j.do("sign in at the authorization server",
				chromedp.Click(chromedp.CSS(`a[data-testid="connect"]`)),
				chromedp.WaitVisible(chromedp.ID("username")),
			)
			if loc := evaluate[string](j, "where", `location.origin`); loc != as.URL {
				t.Fatalf("the sign-in page is at %s, want the authorization server %s", loc, as.URL)
			}
			j.do("allow",
				chromedp.SendKeys(chromedp.ID("username"), "admin"),
				chromedp.Click(chromedp.ID("allow")),
			)
			// Back on instance A (PUBLIC_URL), the call asks its first round
			// without anyone touching it.
			j.eventually("the call goes on by itself", `document.querySelector('form[data-testid="round-form"][data-seq="1"]')`, "", 20*time.Second)
			if loc := evaluate[string](j, "where", `location.href`); loc != a.URL+"/calls/"+call.ID {
				t.Errorf("back at %s, want the call on the other instance", loc)
			}
			j.axeZero("the call going on")

			j.do("open the server page", chromedp.Navigate(a.URL+"/servers/secure"),
				chromedp.WaitVisible(chromedp.CSS(`button[data-testid="disconnect"]`)))
			if got := j.text(`[data-testid="connection-status"]`); !strings.Contains(got, "You are connected") {
				t.Errorf("server page says %q", got)
			}
			j.axeZero("the server page, connected")

			j.do("open the account page", chromedp.Navigate(a.URL+"/account"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-connections"] [data-testid="connection-row"]`)))
			if got := j.text(`[data-testid="account-connections"]`); !strings.Contains(got, "secure") || !strings.Contains(got, as.URL) {
				t.Errorf("account page lists %q", got)
			}
			j.axeZero("the account page")

			j.do("open the connections", chromedp.Navigate(a.URL+"/admin/connections"),
				chromedp.WaitVisible(chromedp.CSS(`table[data-testid="connections"] [data-testid="connection-row"]`)))
			if got := j.text(`table[data-testid="connections"]`); !strings.Contains(got, "secure") || !strings.Contains(got, "admin") {
				t.Errorf("connections page lists %q", got)
			}
			j.axeZero("the admin's connections")
			j.do("revoke", chromedp.Click(chromedp.CSS(`button[data-testid="revoke"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="no-connections"]`)))
			j.axeZero("the connections after revoking")
			if got := api.serverAuth(b.URL, "secure"); got != "required" {
				t.Errorf("after revoking: %q, want required", got)
			}
		})
	}
}

package journeys

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"
)

// TestBrowserOAuthConsent: in headless Chromium at laptop (JavaScript on)
// and phone (off) widths, an agent that registered itself sends a person
// who is not signed in to Rounds; they sign in with their password, read
// the consent page (the agent's name as plain text, marked unverified, the
// server it asks for), allow, and are sent back to the agent with a code.
// Their account page then lists the agent with its server, and Disconnect
// takes it off and revokes its token. axe-core finds nothing on either page.
func TestBrowserOAuthConsent(t *testing.T) {
	t.Parallel()
	chrome := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	cb := newAgentCallback(t)
	_, reg := register(t, inst.URL, map[string]any{"client_name": "Claude <i>Code</i>",
		"redirect_uris": []string{cb.redirectURI()}})
	agent := newOAuthAgent(inst.URL, reg["client_id"].(string), cb)

	for _, width := range []int64{1280, 390} {
		t.Run(map[int64]string{1280: "laptop", 390: "phone"}[width], func(t *testing.T) {
			j := newJourneyFor(t, chrome, width == 1280, 2*time.Minute)
			j.emulate(width, "Europe/Lisbon")
			verifier := oauth2.GenerateVerifier()
			j.do("the agent sends the person to Rounds, who signs in",
				chromedp.Navigate(agent.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), resourceOf(inst.URL, "demo"))),
				chromedp.WaitVisible(chromedp.ID("username")),
				chromedp.SendKeys(chromedp.ID("username"), "admin"),
				chromedp.SendKeys(chromedp.ID("password"), adminPassword),
				chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="consent"]`)),
			)
			if got := j.text(`[data-testid="consent-client-name"]`); got != "Claude <i>Code</i>" {
				t.Errorf("the consent page names the agent %q, want its name as text", got)
			}
			if got := j.text(`[data-testid="consent-servers"]`); strings.TrimSpace(got) != "demo" {
				t.Errorf("the consent page lists servers %q", got)
			}
			if !strings.Contains(j.text(`[data-testid="consent-unverified"]`), "registered itself") {
				t.Error("the consent page does not say the agent is unverified")
			}
			j.fits("the consent page", width)
			j.axeZero("the consent page")
			j.do("allow", chromedp.Click(chromedp.CSS(`button[data-testid="consent-allow"]`)))
			j.eventually("back at the agent", `location.href.startsWith(`+jsString(cb.URL)+`)`, "", 30*time.Second)
			tok, err := agent.conf.Exchange(context.Background(), cb.query().Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if _, err := inst.AuthServer().Verify(context.Background(), tok.AccessToken); err != nil {
				t.Fatalf("verify: %v", err)
			}

			j.do("open the account page", chromedp.Navigate(inst.URL+"/account"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="agent"]`)))
			if got := j.text(`[data-testid="agent-name"]`); got != "Claude <i>Code</i>" {
				t.Errorf("connected agents name %q", got)
			}
			if got := j.text(`[data-testid="agent-servers"]`); got != "demo" {
				t.Errorf("connected agent's servers %q", got)
			}
			j.fits("the connected agents", width)
			j.axeZero("the account page with a connected agent")
			j.do("disconnect", chromedp.Click(chromedp.CSS(`button[data-testid="agent-disconnect"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="agents-none"]`)))
			if _, err := inst.AuthServer().Verify(context.Background(), tok.AccessToken); err == nil {
				t.Error("the token of a disconnected agent still verifies")
			}
		})
	}
}

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserTeamRound: an admin makes a team on the admin pages and starts
// a call for it from the tool form; ada, a member, finds it in her inbox on
// a phone without JavaScript and answers; bob, the other member, then sees
// that ada answered; carol, outside the team, gets the page of a call that
// does not exist. Ada also sets her e-mail address on her account page.
func TestBrowserTeamRound(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	mb := newMailbox(t)
	inst := startInstance(t, db, reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}), nil)
	for _, name := range []string{"ada", "bob", "carol"} {
		cli(t, db, "a long password\n", "user", "add", name)
	}

	admin := newTab(t, browser, true)
	slowDo(admin, "sign in as admin", chromedp.Navigate(inst.URL+"/login"),
		chromedp.SendKeys(chromedp.ID("username"), "admin"),
		chromedp.SendKeys(chromedp.ID("password"), adminPassword),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
		chromedp.WaitNotPresent(chromedp.ID("password")))
	slowDo(admin, "add a team", chromedp.Navigate(inst.URL+"/admin/teams"),
		chromedp.SendKeys(chromedp.ID("team-name"), "approvers"),
		chromedp.Click(chromedp.CSS(`form[data-testid="team-add"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`section[data-testid="team"][data-name="approvers"]`)))
	for _, who := range []string{"ada", "bob"} {
		slowDo(admin, "add "+who, chromedp.SendKeys(chromedp.ID("member-approvers"), who),
			chromedp.Click(chromedp.CSS(`form[data-testid="team-member-add"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`section[data-testid="team"] li[data-testid="team-member"]`)))
	}
	if got := admin.text(`section[data-testid="team"][data-name="approvers"] ul`); !strings.Contains(got, "ada") || !strings.Contains(got, "bob") {
		t.Fatalf("members listed: %q", got)
	}
	slowDo(admin, "start a call for the team", chromedp.Navigate(inst.URL+"/servers/demo/tools/confirm_delete"),
		chromedp.SendKeys(chromedp.CSS(`input[name="arg.path"]`), "/srv/report.txt"),
		chromedp.SendKeys(chromedp.ID("call-assignee"), "team:approvers"),
		chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)))
	callURL, err := chromedp.Run(admin.ctx, chromedp.Location())
	if err != nil || !strings.Contains(callURL, "/calls/") {
		t.Fatalf("the call's page is at %q: %v", callURL, err)
	}
	if got := admin.text(`[data-testid="call-assignee"]`); !strings.Contains(got, "team approvers") {
		t.Errorf("the caller's page says %q", got)
	}

	ada := newTab(t, browser, false)
	slowDo(ada, "use a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	slowDo(ada, "sign in as ada", chromedp.Navigate(inst.URL+"/login"),
		chromedp.SendKeys(chromedp.ID("username"), "ada"),
		chromedp.SendKeys(chromedp.ID("password"), "a long password"),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
		chromedp.WaitNotPresent(chromedp.ID("password")))
	slowDo(ada, "open the inbox", chromedp.Navigate(inst.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="inbox-item"]`)))
	if got := ada.text(`[data-testid="inbox-for"]`); !strings.Contains(got, "For team approvers") || !strings.Contains(got, "Started by admin") {
		t.Errorf("the inbox says %q", got)
	}
	fitsPhone(t, ada, "inbox")
	slowDo(ada, "answer", chromedp.Click(chromedp.CSS(`[data-testid="inbox-item"] a.button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)))
	fitsPhone(t, ada, "call page")
	slowDo(ada, "confirm", chromedp.Click(chromedp.CSS(`input[name="q0.confirm"]`)),
		chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="answered-by"]`)))

	bob := newTab(t, browser, true)
	slowDo(bob, "sign in as bob", chromedp.Navigate(inst.URL+"/login"),
		chromedp.SendKeys(chromedp.ID("username"), "bob"),
		chromedp.SendKeys(chromedp.ID("password"), "a long password"),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
		chromedp.WaitNotPresent(chromedp.ID("password")))
	slowDo(bob, "open the call", chromedp.Navigate(inst.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="inbox-empty"]`)),
		chromedp.Navigate(callURL), chromedp.WaitVisible(chromedp.CSS(`[data-testid="answered-by"]`)))
	if got := bob.text(`[data-testid="answered-by"]`); got != "ada" {
		t.Errorf("bob sees the round answered by %q", got)
	}

	carol := newTab(t, browser, true)
	slowDo(carol, "sign in as carol", chromedp.Navigate(inst.URL+"/login"),
		chromedp.SendKeys(chromedp.ID("username"), "carol"),
		chromedp.SendKeys(chromedp.ID("password"), "a long password"),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
		chromedp.WaitNotPresent(chromedp.ID("password")))
	slowDo(carol, "open the call", chromedp.Navigate(callURL), chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-message"]`)))
	if got := carol.text(`h1`); !strings.Contains(got, "Not Found") {
		t.Errorf("carol, outside the team, sees %q", got)
	}

	slowDo(ada, "set an address", chromedp.Navigate(inst.URL+"/account"),
		chromedp.SendKeys(chromedp.ID("account-email"), "ada@example.com"),
		chromedp.Click(chromedp.CSS(`[data-testid="account-mail-rounds"]`)),
		chromedp.Click(chromedp.CSS(`form[data-testid="account-mail-form"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-flash"]`)))
	fitsPhone(t, ada, "account page")
	if got := ada.attr(`#account-email`, "value"); got != "ada@example.com" {
		t.Errorf("the address kept is %q", got)
	}
	if ada.hasAttr(`[data-testid="account-mail-rounds"]`, "checked") {
		t.Error("round mail is still on after ada switched it off")
	}
}

// slowDo is tab.do with more time per step: this journey runs four
// people's tabs on a busy machine.
func slowDo(tb *tab, what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 4*stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v\n%s", what, err, tb.page())
	}
}

// fitsPhone checks that the page needs no sideways scrolling.
func fitsPhone(t *testing.T, tb *tab, what string) {
	t.Helper()
	wide, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil {
		t.Fatal(err)
	}
	if wide {
		t.Errorf("the %s is wider than the phone's screen", what)
	}
}

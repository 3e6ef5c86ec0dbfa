package journeys

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// signInAs signs the journey's person in with a name and password.
func (j *journey) signInAs(base, name, password string) {
	j.t.Helper()
	j.do("sign in as "+name,
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys(chromedp.ID("username"), name),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
		chromedp.WaitVisible(chromedp.CSS(`header .who`)),
	)
}

// eventually waits until a JavaScript condition holds on the page, asking
// again across page loads (a form's redirect, a reload). With reload set,
// it opens that address again before each look, for a part of a page that
// does not update itself.
func (j *journey) eventually(what, condition, reload string, limit time.Duration) {
	j.t.Helper()
	err := poll(limit, func() error {
		ctx, cancel := context.WithTimeout(j.ctx, 10*time.Second)
		defer cancel()
		if reload != "" {
			_ = chromedp.Do(ctx, chromedp.Navigate(reload))
		}
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { try { return !!(`+condition+`) } catch (e) { return false } })()`))
		if err == nil && !ok {
			err = errors.New("the condition does not hold")
		}
		return err
	})
	if err != nil {
		j.t.Fatalf("%s: not so within %s (last error %v)\n%s", what, limit, err, j.page())
	}
}

// axeZero runs axe-core on the page and fails the test on any violation,
// whatever its impact, minor ones included.
func (j *journey) axeZero(what string) {
	j.t.Helper()
	if !j.js {
		j.scripts(true)
		defer j.scripts(false)
	}
	evaluate[chromedp.Void](j, "load axe-core", axeSource+";undefined")
	violations, err := chromedp.Run(j.ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.map(v => ({id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary)})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		j.t.Fatalf("run axe-core on %s: %v", what, err)
	}
	for _, v := range violations {
		j.t.Errorf("axe-core on %s: %s (%s): %s\n  %s", what, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n  "))
	}
}

// TestBrowserReachingPeople walks through who answers a call, at laptop
// and phone widths, in headless Chromium with axe-core on every page (no
// violation of any impact): an
// admin makes a team and adds two people on the Teams page; starts a call
// from the tool form for the team; a member finds it in her inbox, answers
// it, and the caller's page says she did. An admin reassigns a waiting
// call on its admin page, the new assignee is mailed and answers, and the
// call's owner reads the webhook delivery log (which the assignee does not
// see). Last, the member sets a new address on her account page and
// switches round mail off: the next team round mails only the other member.
func TestBrowserReachingPeople(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	mb := newMailbox(t)
	rc := newReceiver(t)
	inst := startInstance(t, db, reachEnv(mb, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}), nil)
	api := newClient(t, db)
	rc.secret = api.webhookSecret(inst.URL)

	for _, width := range []int64{1280, 390} {
		t.Run(map[int64]string{1280: "Laptop", 390: "Phone"}[width], func(t *testing.T) {
			n := strconv.Itoa(int(width))
			team, ada, bob := "approvers-"+n, "ada-"+n, "bob-"+n
			for _, name := range []string{ada, bob} {
				cli(t, db, "a long password\n", "user", "add", "--email", name+"@example.com", name)
			}

			admin := newJourneyFor(t, browser, true, 5*time.Minute)
			admin.emulate(width, "America/Los_Angeles")
			admin.signIn(inst.URL)

			// The Teams page: make the team, add both people.
			teamCard := `section[data-testid="team"][data-name="` + team + `"]`
			admin.do("make a team",
				chromedp.Navigate(inst.URL+"/admin/teams"),
				chromedp.SendKeys(chromedp.ID("team-name"), team),
				chromedp.Click(chromedp.CSS(`form[data-testid="team-add"] button[type="submit"]`)),
				chromedp.WaitVisible(chromedp.CSS(teamCard)),
			)
			for _, member := range []string{ada, bob} {
				admin.do("add "+member+" to the team",
					chromedp.SendKeys(chromedp.CSS(teamCard+` form[data-testid="team-member-add"] input[name="user"]`), member),
					chromedp.Click(chromedp.CSS(teamCard+` form[data-testid="team-member-add"] button[type="submit"]`)),
				)
				admin.eventually("the team lists "+member, `[...document.querySelectorAll('`+teamCard+` [data-testid="team-member"]')].some(li => li.textContent.trim().startsWith("`+member+`"))`, "", 30*time.Second)
			}
			admin.axeZero("the Teams page")
			if out := cli(t, db, "", "team", "list"); !strings.Contains(out, team) || !strings.Contains(out, ada) || !strings.Contains(out, bob) {
				t.Errorf("web team list says %q, want %s with %s and %s", out, team, ada, bob)
			}

			// The tool form names the team; the call page says whom it waits for.
			path := "/tmp/report-" + n + ".txt"
			admin.do("start a call for the team",
				chromedp.Navigate(inst.URL+"/servers/demo/tools/confirm_delete"),
				chromedp.SendKeys(chromedp.CSS(`form input[name$="path"]`), path),
				chromedp.SendKeys(chromedp.ID("call-assignee"), "team:"+team),
				chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="call-assignee"]`)),
			)
			if got := admin.text(`[data-testid="call-assignee"]`); !strings.Contains(got, "team "+team) || !strings.Contains(got, "started by admin") {
				t.Errorf("the call page says %q, want it answered by team %s and started by admin", got, team)
			}
			admin.axeZero("the call page, waiting for the team")
			callURL := evaluate[string](admin, "read the address", `location.href`)
			callID := callURL[strings.LastIndex(callURL, "/")+1:]
			mb.waitMail(t, ada+"@example.com", "asks you", 1, 30*time.Second)
			mb.waitMail(t, bob+"@example.com", "asks you", 1, 30*time.Second)

			// A member finds the round in her inbox and answers it.
			member := newJourneyFor(t, browser, true, 5*time.Minute)
			member.emulate(width, "America/Los_Angeles")
			member.signInAs(inst.URL, ada, "a long password")
			link := `a[href="/calls/` + callID + `"]`
			member.eventually("the round in ada's inbox", `document.querySelector('`+link+`')`, inst.URL+"/inbox", 30*time.Second)
			member.axeZero("the member's inbox")
			member.do("open the round and answer it",
				chromedp.Click(chromedp.CSS(link)),
				chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)),
				chromedp.Click(chromedp.CSS(`form[data-testid="round-form"] input[type="checkbox"]`)),
				chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)),
			)
			if got := member.text(`[data-testid="result-text"]`); !strings.Contains(got, "Deleted "+path) {
				t.Errorf("result = %q, want Deleted %s", got, path)
			}
			member.axeZero("the call the member answered")

			// The caller sees who answered.
			admin.eventually("the caller's page names who answered",
				`document.querySelector('[data-testid="answered-by"]').textContent.trim() === "`+ada+`"`, callURL, 30*time.Second)

			// An admin reassigns a waiting call (started through the API, with
			// a webhook) on its admin page; the new assignee is mailed.
			status, body := api.do("POST", inst.URL+"/api/v1/calls", "application/json",
				`{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/b.txt"},"assignee":"`+ada+`","webhook_url":"`+rc.URL+`"}`)
			if status != http.StatusCreated {
				t.Fatalf("start: %d %s", status, body)
			}
			var call apiCall
			_ = json.Unmarshal(body, &call)
			api.waitFor(inst.URL, call.ID, 30*time.Second, roundIs(1))
			admin.do("reassign the round",
				chromedp.Navigate(inst.URL+"/admin/calls/"+call.ID),
				chromedp.SendKeys(chromedp.ID("reassign-to"), bob),
				chromedp.Click(chromedp.CSS(`form[data-testid="reassign"] button[type="submit"]`)),
			)
			admin.eventually("the admin page names the new assignee",
				`document.querySelector('[data-testid="admin-assignee"]').textContent.trim() === "`+bob+`"`, "", 30*time.Second)
			admin.axeZero("the admin's call page after reassigning")
			mb.waitMail(t, bob+"@example.com", "asks you", 2, 30*time.Second)
			bobAPI := person(t, db, bob)
			if status, body := bobAPI.answer(inst.URL, call.ID, 1, `{"confirm":{"action":"accept","content":{"confirm":false}}}`); status != http.StatusAccepted {
				t.Fatalf("bob answers the reassigned round: %d %s", status, body)
			}
			api.waitFor(inst.URL, call.ID, 30*time.Second, isDone)

			// The owner reads the delivery log: both events, delivered.
			admin.eventually("the delivery log shows both events delivered", `(() => {
				const rows = [...document.querySelectorAll('[data-testid="delivery"]')];
				return rows.length === 2 && rows.every(r => r.textContent.includes("Delivered")) &&
					rows[0].dataset.type === "round.waiting" && rows[1].dataset.type === "call.finished";
			})()`, inst.URL+"/calls/"+call.ID, 60*time.Second)
			admin.axeZero("the call page with its delivery log")
			evs := rc.waitEvents(t, 1, time.Second)
			ids := evaluate[[]string](admin, "read the ids", `[...document.querySelectorAll('[data-testid="delivery"] td:nth-child(2)')].map(td => td.textContent.trim())`)
			var found int
			for _, ev := range evs {
				for _, id := range ids {
					if ev.ID == id {
						found++
					}
				}
			}
			if found != 2 {
				t.Errorf("the log's ids %v are not the ones the receiver got", ids)
			}
			// The assignee may see the call, not where its events go.
			bobAPI.jar, _ = cookiejar.New(nil)
			bobAPI.login(inst.URL, bob, "a long password")
			page := bobAPI.page(inst.URL + "/calls/" + call.ID)
			if page.Find(`[data-testid="deliveries"]`).Length() != 0 || strings.Contains(page.Text(), rc.URL) {
				t.Errorf("the assignee sees the webhook delivery log")
			}

			// The member's account page: a new address, round mail off.
			newAddr := "ada.new-" + n + "@example.com"
			member.do("set the address and switch round mail off",
				chromedp.Navigate(inst.URL+"/account"),
				chromedp.WaitVisible(chromedp.ID("account-email")),
			)
			member.axeZero("the account page")
			if !evaluate[bool](member, "read the box", `document.querySelector('[data-testid="account-mail-rounds"]').checked`) {
				t.Fatalf("round mail is off before it was switched off")
			}
			member.do("change the e-mail settings",
				chromedp.SetValue(chromedp.ID("account-email"), newAddr),
				chromedp.Click(chromedp.CSS(`[data-testid="account-mail-rounds"]`)),
				chromedp.Click(chromedp.CSS(`form[data-testid="account-mail-form"] button[type="submit"]`)),
			)
			member.eventually("the account page shows the saved settings", `location.search === "?done=mail" &&
				document.querySelector('#account-email').value === "`+newAddr+`" &&
				!document.querySelector('[data-testid="account-mail-rounds"]').checked &&
				document.body.textContent.includes("Your e-mail settings are saved.")`, "", 30*time.Second)
			member.axeZero("the account page after saving")
			// What she notices: the team's next round mails bob, not her.
			bobBefore, adaBefore := len(mb.to(bob+"@example.com")), len(mb.to(ada+"@example.com"))
			status, body = api.do("POST", inst.URL+"/api/v1/calls", "application/json",
				`{"server":"demo","tool":"confirm_delete","arguments":{"path":"/tmp/c.txt"},"assignee":"team:`+team+`"}`)
			if status != http.StatusCreated {
				t.Fatalf("start: %d %s", status, body)
			}
			mb.waitMail(t, bob+"@example.com", "asks you", bobBefore+1, 30*time.Second)
			// Both mails would be enqueued in one transaction: once every
			// mail due has gone, hers would have too.
			jobsRun(t, db, "round_mail", "")
			if got := len(mb.to(ada+"@example.com")) - adaBefore + len(mb.to(newAddr)); got != 0 {
				t.Errorf("ada got %d mails after switching round mail off", got)
			}
		})
	}
}

package journeys

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserApprovalRules drives a server's approval rules on its admin
// page in Chromium, at laptop width with JavaScript and at phone width
// without. The servers file's rules for "bank" show read-only, with the
// sentence that the file sets them, and can be tried: a large transfer by
// a finance member asks two of finance. On a server of its own, a rule
// with bad CEL is refused beside the box with CEL's reason and what was
// typed kept; a good rule is tried before it is saved (a small transfer by
// a finance member, whose teams come from the account, asks nobody; the
// same by someone in no team asks; one without an amount asks, saying the
// condition could not be evaluated), and trying saves nothing. Saved, the
// rule is listed and the audit log has it. Both pages say whom the rules
// ask who has no account or team. A save of the file's rules
// forged past the read-only page gets 409. axe-core finds nothing.
func TestBrowserApprovalRules(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	db := newDatabase(t)
	demo := strconv.Quote(demoServer(t, nil))
	file := filepath.Join(t.TempDir(), "servers.json")
	err := os.WriteFile(file, []byte(`{"mcpServers": {
  "bank": {"url": `+demo+`, "approvals": [
    {"tools": ["transfer"], "when": "args.amount > 1000 || !(\"finance\" in caller.teams)", "ask": "team:finance", "needs": 2},
    {"tools": "destructive", "ask": "team:ops"}]},
  "shop-1280": {"url": `+demo+`},
  "shop-390": {"url": `+demo+`}
}}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS_FILE": file}, nil)
	cli(t, db, "long enough password\n", "user", "add", "bo")
	cli(t, db, "", "team", "add", "finance")
	cli(t, db, "", "team", "member", "add", "finance", "bo")

	// A save forged past the read-only page is refused, and changes nothing.
	admin := newClient(t, db)
	admin.login(inst.URL, "admin", adminPassword)
	status, page := admin.post(inst.URL+"/admin/servers/bank/approvals", url.Values{"op": {"save"}, "rules": {"[]"}})
	if status != http.StatusConflict || !bytes.Contains(page, []byte("change them there")) {
		t.Errorf("saving the file's rules from the page: %d, want 409 saying the file sets them", status)
	}
	var rules string
	queryRow(t, db, `select coalesce(approvals::text, '') from servers where name = 'bank'`, nil, &rules)
	if !strings.Contains(rules, "destructive") {
		t.Errorf("after the refused save the bank's rules are %q", rules)
	}

	for _, width := range []int64{1280, 390} {
		t.Run(strconv.Itoa(int(width)), func(t *testing.T) {
			j := newJourneyFor(t, browser, width == 1280, 3*time.Minute)
			j.emulate(width, "Europe/Paris")
			j.signIn(inst.URL)
			form := `form[data-testid="server-approvals"]`
			try := func(what, tool, args, caller string) {
				t.Helper()
				// The page before has a result too: wait for the one the
				// form's answer brings, on a page not marked as the old one.
				evaluate[chromedp.Void](j, "mark the page", `document.body.dataset.before = "1"`)
				j.do(what, chromedp.SetValue(chromedp.ID("try-tool"), tool),
					chromedp.SetValue(chromedp.ID("try-args"), args),
					chromedp.SetValue(chromedp.ID("try-caller"), caller),
					chromedp.Click(chromedp.CSS(form+` button[data-testid="try-rule"]`)),
					chromedp.WaitVisible(chromedp.CSS(`body:not([data-before]) :is([data-testid="try-result"], [data-testid="try-error"])`)))
			}

			j.do("open the bank", chromedp.Navigate(inst.URL+"/admin/servers/bank"), chromedp.WaitVisible(chromedp.CSS(form)))
			if got := j.text(`[data-testid="approvals-from-file"]`); !strings.Contains(got, "servers file") {
				t.Errorf("the bank's rules say %q, want that the servers file sets them", got)
			}
			if got := j.text(`[data-testid="approval-rules"]`); !strings.Contains(got, `args.amount > 1000 || !("finance" in caller.teams)`) ||
				!strings.Contains(got, "2 of team:finance") || !strings.Contains(got, "every destructive tool") {
				t.Errorf("the bank's rules read %q", got)
			}
			if got := j.text(`[data-testid="approvals-unanswerable"]`); !strings.Contains(got, "Nobody answers yet to team:ops") {
				t.Errorf("the bank's rules ask a team that does not exist, and the page says %q", got)
			}
			if n := evaluate[int](j, "count the editing controls", `document.querySelectorAll('#approvals-rules, [data-testid="approvals-save"]').length`); n != 0 {
				t.Errorf("the file's rules have %d editing controls, want none", n)
			}
			try("try a large transfer at the bank", "transfer", `{"amount": 5000}`, "bo")
			if got := j.text(`[data-testid="try-result"]`); !strings.Contains(got, "Rule 1 applies: it would ask 2 of team:finance.") ||
				!strings.Contains(got, "bo's teams, from their account: finance.") {
				t.Errorf("trying a large transfer says %q", got)
			}
			j.fits("the bank's page", width)
			j.axeZero("a server whose rules come from the servers file, tried")

			shop := inst.URL + "/admin/servers/shop-" + strconv.Itoa(int(width))
			j.do("mistype a rule", chromedp.Navigate(shop), chromedp.WaitVisible(chromedp.CSS(form)),
				chromedp.SetValue(chromedp.ID("approvals-rules"), `[{"tools": ["transfer"], "when": "args.amount >", "ask": "team:finance"}]`),
				chromedp.Click(chromedp.CSS(form+` button[data-testid="approvals-save"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="approvals-error"]`)))
			if got := j.text(`[data-testid="approvals-error"]`); !strings.Contains(got, `Not saved: rule 1: "when" is not valid CEL`) ||
				!strings.Contains(got, "Syntax error") {
				t.Errorf("the refused rule says %q", got)
			}
			if got := evaluate[string](j, "read the box", `document.getElementById("approvals-rules").value`); !strings.Contains(got, `"args.amount >"`) {
				t.Errorf("after the refusal the box has %q, want what was typed", got)
			}
			j.axeZero("a server page refusing a rule")

			rule := `[{"tools": ["transfer"], "when": "args.amount > 1000 || !(\"finance\" in caller.teams)", "ask": ["ada", "team:finance"]}]`
			j.do("type a good rule", chromedp.SetValue(chromedp.ID("approvals-rules"), rule))
			try("try a small transfer by a finance member", "transfer", `{"amount": 20}`, "bo")
			if got := j.text(`[data-testid="try-result"]`); !strings.Contains(got, "No rule matches") {
				t.Errorf("a small transfer by bo: %q, want no rule", got)
			}
			try("try a small transfer by someone in no team", "transfer", `{"amount": 20}`, "cy")
			if got := j.text(`[data-testid="try-result"]`); !strings.Contains(got, "Rule 1 applies: it would ask one of ada, team:finance.") ||
				!strings.Contains(got, "no account named cy") {
				t.Errorf("a small transfer by cy: %q, want rule 1", got)
			}
			try("try a transfer without an amount", "transfer", `{}`, "bo")
			if got := j.text(`[data-testid="try-result"]`); !strings.Contains(got, "Rule 1 applies") ||
				!strings.Contains(got, "could not be evaluated") || !strings.Contains(got, "no such key: amount") {
				t.Errorf("a transfer without an amount: %q, want rule 1, its condition not evaluated", got)
			}
			try("try arguments that are not JSON", "transfer", `amount=5`, "bo")
			if got := j.text(`[data-testid="try-error"]`); !strings.Contains(got, "JSON object") {
				t.Errorf("arguments that are not JSON: %q", got)
			}
			j.axeZero("a server page trying a rule")
			j.do("look again", chromedp.Navigate(shop), chromedp.WaitVisible(chromedp.CSS(`[data-testid="approvals-none"]`)))

			j.do("save the rule", chromedp.SetValue(chromedp.ID("approvals-rules"), rule),
				chromedp.Click(chromedp.CSS(form+` button[data-testid="approvals-save"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="admin-notice"]`)))
			if got := j.text(`[data-testid="approval-rules"]`); !strings.Contains(got, "one of ada, team:finance") {
				t.Errorf("the saved rules read %q", got)
			}
			if got := j.text(`[data-testid="approvals-unanswerable"]`); !strings.Contains(got, "Nobody answers yet to ada:") {
				t.Errorf("the saved rules ask ada, who has no account, and the page says %q", got)
			}
			var n int
			queryRow(t, db, `select count(*) from audit_log where action = 'server.approvals' and target = $1 and actor = 'admin'`,
				[]any{"shop-" + strconv.Itoa(int(width))}, &n)
			if n != 1 {
				t.Errorf("audit entries for the saved rules: %d, want 1", n)
			}
			j.fits("the shop's page", width)
			j.axeZero("a server page with a saved rule")
		})
	}
}

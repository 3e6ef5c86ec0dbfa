package journeys

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// TestHistoryPagesAndSearch walks a person's whole call history page by
// page, both ways, and narrows it by status and by a search of the tool,
// the server and the questions' words.
func TestHistoryPagesAndSearch(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	var started []string // oldest first
	for i := range 30 {
		tool := "approve"
		if i%10 == 0 {
			tool = "book_flight"
		}
		started = append(started, c.startCall(inst.URL, tool, `{}`).ID)
		time.Sleep(2 * time.Millisecond) // distinct start times, as people make them
	}
	for _, id := range started {
		c.waitFor(inst.URL, id, 20*time.Second, roundIs(1))
	}
	// One approval declined: the call completes.
	if status, b := c.answer(inst.URL, started[1], 1, `{"approval":{"action":"decline"}}`); status != http.StatusAccepted {
		t.Fatalf("decline: %d %s", status, b)
	}
	c.waitFor(inst.URL, started[1], 20*time.Second, isDone)

	ids := func(doc *goquery.Document) []string {
		var out []string
		doc.Find("table tbody tr td:first-child a").Each(func(_ int, a *goquery.Selection) {
			out = append(out, strings.TrimPrefix(a.AttrOr("href", ""), "/calls/"))
		})
		return out
	}
	first := c.page(inst.URL + "/calls")
	page1 := ids(first)
	if len(page1) != 25 {
		t.Fatalf("the first page shows %d calls, want 25", len(page1))
	}
	for i, id := range page1 {
		if want := started[len(started)-1-i]; id != want {
			t.Fatalf("row %d is %s, want %s (newest first)", i, id, want)
		}
	}
	if first.Find(`[data-testid="prev-page"]`).Length() != 0 {
		t.Error("the first page links to a page before it")
	}
	next, ok := first.Find(`[data-testid="next-page"]`).Attr("href")
	if !ok {
		t.Fatal("no link to the older calls")
	}
	second := c.page(inst.URL + next)
	page2 := ids(second)
	if len(page2) != 5 || page2[4] != started[0] {
		t.Fatalf("the second page shows %v, want the 5 oldest calls ending with %s", page2, started[0])
	}
	if second.Find(`[data-testid="next-page"]`).Length() != 0 {
		t.Error("the last page links to a page after it")
	}
	prev, ok := second.Find(`[data-testid="prev-page"]`).Attr("href")
	if !ok {
		t.Fatal("no link back to the newer calls")
	}
	if back := ids(c.page(inst.URL + prev)); strings.Join(back, ",") != strings.Join(page1, ",") {
		t.Errorf("going back shows %v, want the first page again", back)
	}

	for _, tt := range []struct {
		name, query string
		want        int
	}{
		{"Tool", "q=book_flight", 3},
		{"ToolAnyCase", "q=BOOK_F", 3},
		{"QuestionText", "q=" + url.QueryEscape("pending request"), 25}, // a page of the 27
		{"Server", "q=demo", 25},
		{"WildcardIsText", "q=%25", 0},
		{"Status", "status=complete", 1},
		{"StatusAndSearch", "status=input_required&q=" + url.QueryEscape("where and when"), 3},
		{"UnknownStatusIgnored", "status=nonsense&q=book", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := c.page(inst.URL + "/calls?" + tt.query)
			if got := len(ids(doc)); got != tt.want {
				t.Errorf("/calls?%s shows %d calls, want %d", tt.query, got, tt.want)
			}
			if tt.want == 0 && !strings.Contains(doc.Find(`[data-testid="history-empty"]`).Text(), "No call of yours matches") {
				t.Error("an empty search does not say nothing matches")
			}
		})
	}

	// Someone else's history is their own.
	other := newClient(t, db)
	addUser(t, db, "olga", "olga's long password")
	other.login(inst.URL, "olga", "olga's long password")
	if n := len(ids(other.page(inst.URL + "/calls"))); n != 0 {
		t.Errorf("olga sees %d calls of the admin's", n)
	}
}

// TestAdminEndsSeveralCalls selects waiting calls in the admin list and
// cancels them at once: asked to confirm and why first, the reason goes to
// the audit log and the people's pages, and the notice says what was done,
// counting calls no longer waiting.
func TestAdminEndsSeveralCalls(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	var calls []string
	for range 3 {
		id := c.startCall(inst.URL, "approve", `{}`).ID
		c.waitFor(inst.URL, id, 20*time.Second, roundIs(1))
		calls = append(calls, id)
	}

	list := c.page(inst.URL + "/admin/calls?status=input_required")
	if n := list.Find(`input[data-testid="select-call"]`).Length(); n != 3 {
		t.Fatalf("%d waiting calls can be selected, want 3", n)
	}
	if w := strings.TrimSpace(list.Find(`[data-testid="waiting-for"]`).First().Text()); w != "admin" {
		t.Errorf("the list says the answer awaited is %q's, want admin's", w)
	}

	// The first post asks; nothing ends yet.
	form := url.Values{"call": {calls[0], calls[1]}, "action": {"cancel"}}
	status, body := c.post(inst.URL+"/admin/calls/end", form)
	if status != http.StatusOK || !strings.Contains(string(body), "Cancel these 2 calls?") {
		t.Fatalf("select two and cancel: %d, want the question\n%s", status, body)
	}
	if got := c.waitFor(inst.URL, calls[0], time.Second, roundIs(1)); got.Status != "input_required" {
		t.Fatal("a call was cancelled before the admin confirmed")
	}
	form.Set("confirm", "yes")
	if status, _ := c.post(inst.URL+"/admin/calls/end", form); status != http.StatusUnprocessableEntity {
		t.Errorf("confirmed without a reason: %d, want 422", status)
	}
	form.Set("reason", "Duplicate requests from the import")
	status, body = c.post(inst.URL+"/admin/calls/end", form)
	if status != http.StatusSeeOther {
		t.Fatalf("confirmed: %d %s", status, body)
	}
	notice := c.page(inst.URL + "/admin/calls?n=2&skipped=0&done=cancelled").Find(`[data-testid="admin-notice"]`).Text()
	if !strings.Contains(notice, "Cancelled 2 calls") {
		t.Errorf("notice %q, want it to say 2 calls were cancelled", notice)
	}
	for _, id := range calls[:2] {
		if got := c.waitFor(inst.URL, id, 5*time.Second, isDone); got.Status != "cancelled" {
			t.Errorf("call %s is %s, want cancelled", id, got.Status)
		}
		_, page := c.do("GET", inst.URL+"/calls/"+id, "", "")
		if !strings.Contains(string(page), "Duplicate requests from the import") {
			t.Errorf("the person's page of %s does not give the reason", id)
		}
	}
	var n int
	if err := adminPool(t, db).QueryRow(t.Context(), `select count(*) from audit_log
		where action = 'admin.round.cancelled' and detail->>'reason' = 'Duplicate requests from the import'`).Scan(&n); err != nil || n != 2 {
		t.Errorf("audit rows with the reason: %d (%v), want 2", n, err)
	}

	// One already cancelled, one still waiting: one ends, one is counted.
	form = url.Values{"call": {calls[0], calls[2]}, "action": {"expire"}, "confirm": {"yes"}, "reason": {"Stale"}, "csrf_token": {c.csrf}}
	noRedirect := &http.Client{Jar: c.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(inst.URL+"/admin/calls/end", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("expire: %d", resp.StatusCode)
	}
	notice = c.page(inst.URL + resp.Header.Get("Location")).Find(`[data-testid="admin-notice"]`).Text()
	if !strings.Contains(notice, "Expired 1 waiting round") || !strings.Contains(notice, "1 selected call was no longer waiting") {
		t.Errorf("notice %q, want one expired and one left as it was", notice)
	}
}

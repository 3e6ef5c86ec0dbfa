package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/mcp-rounds/rounds/store"
)

// answerForm is an answer to the demo's create_task round as a browser
// posts it; title is what the person typed as the task's title.
func answerForm(title, points string) url.Values {
	return url.Values{"q0$action": {"accept"}, "q0.title": {title}, "q0.priority": {"medium"},
		"q0.points": {points}, "q0.description": {"Half a thought"}}
}

// errorBeside is the message shown beside the field named name.
func errorBeside(doc *goquery.Document, name string) string {
	id := doc.Find(`[name="`+name+`"]`).AttrOr("id", "")
	return strings.TrimSpace(doc.Find(`[data-testid="` + id + `-error"]`).Text())
}

// roundStatus is round seq's status as stored.
func roundStatus(t *testing.T, s *site, id string, seq int) string {
	t.Helper()
	rounds, err := s.store.Rounds(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rounds {
		if r.Seq == seq {
			return r.Status
		}
	}
	t.Fatalf("call %s has no round %d", id, seq)
	return ""
}

// TestRoundAnswerThatDoesNotFit: answers that do not fit the round's
// questions are not stored; the page comes back (422) with the round's
// form as the person filled it in, a summary at the top and each message
// beside its field.
func TestRoundAnswerThatDoesNotFit(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	admin := s.signIn(t, "admin")
	id := admin.startCall("create_task")

	status, body := admin.post("/calls/"+id+"/rounds/1", answerForm("Wr", "1.5"), nil)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("an answer that does not fit: %d, want 422", status)
	}
	doc := parse(t, body)
	if doc.Find(`[data-testid="round-form"]`).Length() != 1 {
		t.Fatal("the round's form is not on the page again")
	}
	for name, typed := range map[string]string{"q0.title": "Wr", "q0.points": "1.5"} {
		if got := doc.Find(`input[name="`+name+`"]`).AttrOr("value", ""); got != typed {
			t.Errorf("%s shows %q, want what was typed, %q", name, got, typed)
		}
	}
	if got := strings.TrimSpace(doc.Find(`textarea[name="q0.description"]`).Text()); got != "Half a thought" {
		t.Errorf("the description shows %q, want what was typed", got)
	}
	if got := errorBeside(doc, "q0.points"); got != "Enter a whole number" {
		t.Errorf("beside the story points: %q, want %q", got, "Enter a whole number")
	}
	if got := errorBeside(doc, "q0.title"); got != "Must be at least 3 characters" {
		t.Errorf("beside the title: %q, want %q", got, "Must be at least 3 characters")
	}
	if got := errorBeside(doc, "q0.description"); got != "" {
		t.Errorf("beside the description, which fits: %q, want nothing", got)
	}
	summary := doc.Find(`[data-testid="error-summary"]`)
	if summary.Length() == 0 || !strings.Contains(summary.Text(), "Enter a whole number") {
		t.Errorf("the summary at the top says %q, want it to list what needs another look", summary.Text())
	}
	if got := roundStatus(t, s, id, 1); got != store.RoundPending {
		t.Errorf("round 1 is %s after an answer that does not fit, want it still waiting", got)
	}

	// The API checks the same way and says which answer does not fit.
	status, body = admin.do("POST", "/api/v1/calls/"+id+"/rounds/1", nil,
		`{"inputResponses":{"task":{"action":"accept","content":{"title":"Wr","priority":"medium"}}}}`)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("an answer that does not fit, through the API: %d %s, want 422", status, body)
	}
	if got := apiMessage(t, body); !strings.HasPrefix(got, "Some answers do not fit") || !strings.Contains(got, "title") {
		t.Errorf("the API says %q, want it to name the title", got)
	}

	// Mended, the same form goes through.
	if status, body := admin.post("/calls/"+id+"/rounds/1", answerForm("Write the docs", "2"), nil); status != http.StatusSeeOther {
		t.Fatalf("the mended answer: %d %s, want 303", status, body)
	}
}

// TestRoundAnsweredAlready: a round answered already (another tab, a
// double click) takes no second answer. The page says so (409) and shows
// what the person typed, so nothing they wrote is lost; the API says so
// in its JSON.
func TestRoundAnsweredAlready(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	admin := s.signIn(t, "admin")
	id := admin.startCall("create_task")
	if status, body := admin.post("/calls/"+id+"/rounds/1", answerForm("Write the docs", "2"), nil); status != http.StatusSeeOther {
		t.Fatalf("the first answer: %d %s, want 303", status, body)
	}

	status, body := admin.post("/calls/"+id+"/rounds/1", answerForm("Write the tests", "5"), nil)
	if status != http.StatusConflict {
		t.Fatalf("a second answer from the page: %d, want 409", status)
	}
	doc := parse(t, body)
	if got := doc.Find(`[data-testid="notice"]`).Text(); got != "This round was already answered by admin." {
		t.Errorf("the notice says %q, want who answered it", got)
	}
	if got := doc.Find(`[data-testid="unsent"]`).Text(); !strings.Contains(got, "Write the tests") {
		t.Errorf("what was typed and not sent: %q, want the title typed", got)
	}

	status, body = admin.do("POST", "/api/v1/calls/"+id+"/rounds/1", nil,
		`{"inputResponses":{"task":{"action":"accept","content":{"title":"Write the tests","priority":"low"}}}}`)
	if status != http.StatusConflict {
		t.Fatalf("a second answer through the API: %d %s, want 409", status, body)
	}
	if got := apiMessage(t, body); got != "This round was already answered by admin." {
		t.Errorf("the API says %q, want who answered it", got)
	}
}

// TestRoundOfSomeoneElsesCall: a person who may not see a call cannot
// answer its round, and learns nothing of it: the page and the API answer
// 404, as for a call that does not exist, and the round still waits.
func TestRoundOfSomeoneElsesCall(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	admin := s.signIn(t, "admin")
	mallory := s.signIn(t, "mallory")
	id := admin.startCall("create_task")

	status, body := mallory.post("/calls/"+id+"/rounds/1", answerForm("Mine now", "1"), nil)
	if status != http.StatusNotFound {
		t.Fatalf("answering someone else's call from the page: %d, want 404", status)
	}
	if got := parse(t, body).Text(); !strings.Contains(got, "We couldn't find that.") || strings.Contains(got, "Create a task") {
		t.Errorf("the page says %q; want it to say it found nothing, and nothing of the call", got)
	}

	status, body = mallory.do("POST", "/api/v1/calls/"+id+"/rounds/1", nil,
		`{"inputResponses":{"task":{"action":"accept","content":{"title":"Mine now","priority":"low"}}}}`)
	if status != http.StatusNotFound {
		t.Fatalf("answering someone else's call through the API: %d %s, want 404", status, body)
	}
	if got := apiMessage(t, body); got != "We couldn't find that." {
		t.Errorf("the API says %q, want %q", got, "We couldn't find that.")
	}
	if got := roundStatus(t, s, id, 1); got != store.RoundPending {
		t.Errorf("round 1 is %s, want it still waiting for admin", got)
	}
}

// TestRoundAnswerFromAnotherSite: an answer a browser says comes from
// another site is refused (403) even with the person's cookies and CSRF
// token, and nothing is stored; the same answer from the site itself goes
// through.
func TestRoundAnswerFromAnotherSite(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	admin := s.signIn(t, "admin")
	id := admin.startCall("create_task")

	for _, h := range []http.Header{
		{"Origin": {"http://evil.example"}},
		{"Sec-Fetch-Site": {"cross-site"}},
	} {
		status, body := admin.post("/calls/"+id+"/rounds/1", answerForm("Forged", "1"), h)
		if status != http.StatusForbidden {
			t.Fatalf("%v: %d, want 403", h, status)
		}
		if got := parse(t, body).Text(); !strings.Contains(got, "This request came from another site, so it was refused.") {
			t.Errorf("%v: the page says %q, want it to say the request came from another site", h, got)
		}
	}
	if got := roundStatus(t, s, id, 1); got != store.RoundPending {
		t.Fatalf("round 1 is %s after answers from another site, want it still waiting", got)
	}
	status, body := admin.post("/calls/"+id+"/rounds/1", answerForm("Write the docs", "2"),
		http.Header{"Origin": {s.URL}, "Sec-Fetch-Site": {"same-origin"}})
	if status != http.StatusSeeOther {
		t.Fatalf("the same answer from the site itself: %d %s, want 303", status, body)
	}
}

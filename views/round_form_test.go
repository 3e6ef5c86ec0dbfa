package views

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/mcp-rounds/rounds/round"
)

func warningKinds(doc *goquery.Document) []string {
	var kinds []string
	doc.Find(`[data-testid="url-warning"]`).Each(func(_ int, s *goquery.Selection) {
		kinds = append(kinds, s.AttrOr("data-kind", ""))
	})
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// TestURLQuestionShown renders URL-mode questions the way the spec asks of
// a client: the full URL as text with its host set apart, a warning for
// each misleading shape, and a link, opened in a new tab without referrer
// or opener, only for http and https.
func TestURLQuestionShown(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		url      string
		host     string   // the host set apart, "" for none
		warnings []string // kinds, sorted
		want     []string // phrases the warnings must say
		link     bool
	}{
		{"OK", "https://example.com/connect?session=abc", "example.com", nil, nil, true},
		{"Subdomain", "https://accounts.google.com.evil.example/login", "accounts.google.com.evil.example", nil, []string{}, true},
		{"JavaScript", "javascript:alert(document.cookie)", "", []string{"scheme"}, []string{"“javascript:”"}, false},
		{"Data", "data:text/html,<script>alert(1)</script>", "", []string{"scheme"}, []string{"“data:”"}, false},
		{"File", "file:///etc/passwd", "", []string{"scheme"}, []string{"“file:”"}, false},
		{"NoScheme", "example.com/connect", "", []string{"scheme"}, []string{"does not start with http"}, false},
		{"Credentials", "http://user:pass@example.com/", "example.com", []string{"http", "userinfo"}, []string{"before “@”", "The site it opens is example.com", "not encrypted"}, true},
		{"IPAndPort", "http://127.0.0.1:8081/", "127.0.0.1", []string{"http", "ip", "port"}, []string{"bare IP address (127.0.0.1)", "unusual port (8081)"}, true},
		{"IPv6", "https://[::1]:8443/x", "[::1]", []string{"ip", "port"}, []string{"bare IP address (::1)"}, true},
		{"NumericHost", "https://2130706433/", "2130706433", []string{"ip"}, []string{"written as a number"}, true},
		{"Punycode", "https://xn--80ak6aa92e.com/", "xn--80ak6aa92e.com", []string{"punycode"}, []string{"аррӏе.com", "Cyrillic and Latin letters"}, true},
		{"Cyrillic", "https://exаmple.com", "exаmple.com", []string{"unicode"}, []string{"Cyrillic and Latin letters", "xn--exmple-4nf.com"}, true},
		{"Backslash", `https://evil.example\@example.com/`, "", []string{"hidden", "invalid"}, []string{"backslashes"}, false},
		{"TripleSlash", "https:///evil.example", "", []string{"invalid"}, []string{"does not name a site"}, false},
		{"BidiOverride", "https://example.com/\u202egnp.exe", "example.com", []string{"hidden"}, []string{"invisible characters"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := pendingRound(`{"connect":` + urlAsk(t, tt.url) + `}`)
			doc, html := renderRound(t, call, r, nil, nil)
			consent := doc.Find(`[data-testid="url-consent"]`)
			if consent.Length() != 1 {
				t.Fatalf("no URL consent in:\n%s", html)
			}
			if got := consent.Find(`[data-testid="url-full"]`).Text(); strings.TrimSpace(got) != tt.url {
				t.Errorf("full URL shown = %q, want %q", strings.TrimSpace(got), tt.url)
			}
			if got := consent.Find(`[data-testid="url-host"]`).Text(); got != tt.host {
				t.Errorf("host set apart = %q, want %q", got, tt.host)
			}
			if got := warningKinds(doc); !slices.Equal(got, tt.warnings) {
				t.Errorf("warnings = %q, want %q", got, tt.warnings)
			}
			warnings := doc.Find(`[data-testid="url-warnings"]`).Text()
			for _, phrase := range tt.want {
				if !strings.Contains(warnings, phrase) {
					t.Errorf("warnings %q do not say %q", warnings, phrase)
				}
			}
			links := doc.Find("a")
			if !tt.link {
				if links.Length() != 0 {
					t.Errorf("a URL that must not be opened is a link: %s", html)
				}
				if doc.Find(`[data-testid="url-not-link"]`).Length() != 1 {
					t.Error("the page does not say the address cannot be opened from here")
				}
			} else {
				if links.Length() != 1 {
					t.Fatalf("want exactly one link, got %d", links.Length())
				}
				a := links.First()
				if href := a.AttrOr("href", ""); href != tt.url {
					t.Errorf("href = %q, want the URL exactly as shown, %q", href, tt.url)
				}
				if a.AttrOr("target", "") != "_blank" || a.AttrOr("rel", "") != "noopener noreferrer" {
					t.Errorf("link target=%q rel=%q, want _blank and noopener noreferrer", a.AttrOr("target", ""), a.AttrOr("rel", ""))
				}
			}
			for _, sel := range []string{`script:not([src^="/static/app."])`, "iframe", "img", "link", "object", "embed"} {
				if doc.Find(sel).Length() != 0 {
					t.Errorf("the page has a <%s>, which could fetch or run the server's URL", sel)
				}
			}
			// The person is asked, not answered for: a question alone in
			// its round is answered with a button each, so nothing is
			// chosen before they press one.
			if n := doc.Find(`input[name="q0$action"]`).Length(); n != 0 {
				t.Errorf("%d pre-made choices in a round of one question", n)
			}
			for choice, want := range map[string]string{"accept": "I've finished", "decline": "Decline", "cancel": "Cancel"} {
				b := doc.Find(`button[type="submit"][name="q0$action"][value="` + choice + `"]`)
				if got := strings.TrimSpace(b.Text()); b.Length() != 1 || got != want {
					t.Errorf("%s button = %d labelled %q, want one labelled %q", choice, b.Length(), got, want)
				}
			}
		})
	}
}

// TestURLQuestionDomain names the registrable domain of a host, so that a
// familiar name on the left cannot pass for the site.
func TestURLQuestionDomain(t *testing.T) {
	t.Parallel()
	call, r := pendingRound(`{"connect":` + urlAsk(t, "https://accounts.google.com.evil.example/login") + `}`)
	doc, _ := renderRound(t, call, r, nil, nil)
	if got := doc.Find(`[data-testid="url-domain"]`).Text(); got != "evil.example" {
		t.Errorf("domain = %q, want evil.example", got)
	}
}

// TestURLQuestionWithoutAddress cannot be accepted, only declined or
// cancelled.
func TestURLQuestionWithoutAddress(t *testing.T) {
	t.Parallel()
	call, r := pendingRound(`{"connect":{"method":"elicitation/create","params":{"mode":"url","message":"Go there"}}}`)
	doc, _ := renderRound(t, call, r, nil, nil)
	if doc.Find(`button[name="q0$action"][value="accept"]`).Length() != 0 {
		t.Error("a URL question without a URL can be accepted")
	}
	if doc.Find(`button[name="q0$action"][value="decline"]`).Length() != 1 {
		t.Error("a URL question without a URL cannot be declined")
	}
}

// TestDecodeAnswersMixed answers a round whose questions are accepted,
// declined and left unanswered, the way a person's form posts them.
func TestDecodeAnswersMixed(t *testing.T) {
	t.Parallel()
	rounds := `{"connect":` + urlAsk(t, "https://example.com/connect") + `,"task":` + taskAsk + `}`
	for _, tt := range []struct {
		name   string
		form   url.Values
		want   string // inputResponses, "" when the form is sent back
		errors []string
	}{
		{"OK", url.Values{"q0$action": {"accept"}, "q1$action": {"accept"}, "q1.title": {"Write docs"}, "q1.points": {"5"}},
			`{"connect":{"action":"accept"},"task":{"action":"accept","content":{"title":"Write docs","points":5}}}`, nil},
		{"Mixed", url.Values{"q0$action": {"decline"}, "q1$action": {"cancel"}, "q1.title": {"x"}},
			`{"connect":{"action":"decline"},"task":{"action":"cancel"}}`, nil},
		{"URLAcceptedFormDeclined", url.Values{"q0$action": {"accept"}, "q1$action": {"decline"}},
			`{"connect":{"action":"accept"},"task":{"action":"decline"}}`, nil},
		{"ErrNoChoice", url.Values{"q1$action": {"accept"}, "q1.title": {"Write docs"}},
			"", []string{"#q0-actions"}},
		{"ErrNoChoiceAnywhere", url.Values{"q1.title": {"Write docs"}},
			"", []string{"#q0-actions", "#q1-actions"}},
		{"ErrUnknownChoice", url.Values{"q0$action": {"maybe"}, "q1$action": {"decline"}},
			"", []string{"#q0-actions"}},
		{"ErrField", url.Values{"q0$action": {"decline"}, "q1$action": {"accept"}, "q1.title": {"ab"}},
			"", []string{"field 1.0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := pendingRound(rounds)
			a, err := round.FormAnswer(call, r, tt.form)
			if err != nil {
				t.Fatal(err)
			}
			qs, got, actions, ok := a.Questions, a.Responses, a.Actions, a.Fits()
			if ok != (tt.want != "") {
				t.Fatalf("ok = %v, want %v", ok, tt.want != "")
			}
			if ok {
				if string(got) != tt.want {
					t.Errorf("inputResponses = %s, want %s", got, tt.want)
				}
				return
			}
			doc, html := renderRound(t, call, r, qs, actions)
			var hrefs []string
			doc.Find(`[data-testid="error-summary"] a`).Each(func(_ int, s *goquery.Selection) {
				hrefs = append(hrefs, s.AttrOr("href", ""))
			})
			for i, e := range tt.errors {
				var q, f int
				if _, err := fmt.Sscanf(e, "field %d.%d", &q, &f); err == nil {
					tt.errors[i] = "#" + qs[q].Form.Fields[f].ID
				}
			}
			if !slices.Equal(hrefs, tt.errors) {
				t.Errorf("error summary links to %q, want %q", hrefs, tt.errors)
			}
			for _, href := range hrefs {
				if doc.Find(href).Length() != 1 {
					t.Errorf("the summary links to %s, which is not on the page", href)
				}
			}
			// What was chosen stays chosen; nothing is chosen that was not.
			for i, name := range []string{"q0$action", "q1$action"} {
				checked := doc.Find(`input[name="` + name + `"][checked]`)
				want := tt.form.Get(name)
				if want == "maybe" {
					want = ""
				}
				if got := checked.AttrOr("value", ""); got != want {
					t.Errorf("question %d shows %q chosen, want %q", i, got, want)
				}
			}
			if title := tt.form.Get("q1.title"); title != "" {
				if got := doc.Find(`input[name="q1.title"]`).AttrOr("value", ""); got != title {
					t.Errorf("title = %q after the failed check, want what was typed, %q\n%s", got, title, html)
				}
			}
			doc.Find(`fieldset.choice.has-error`).Each(func(_ int, s *goquery.Selection) {
				id := s.AttrOr("aria-describedby", "")
				if id == "" || doc.Find("#"+id).Length() != 1 {
					t.Errorf("choice %s with an error is not described by it", s.AttrOr("id", ""))
				}
			})
		})
	}
}

// TestFreshRoundChoosesNothingButSend shows a new round with form questions
// set to be sent and URL questions left for the person: no decline or
// cancel is ever made up.
func TestFreshRoundChoosesNothingButSend(t *testing.T) {
	t.Parallel()
	call, r := pendingRound(`{"connect":` + urlAsk(t, "https://example.com/") + `,"task":` + taskAsk + `}`)
	doc, _ := renderRound(t, call, r, nil, nil)
	if n := doc.Find(`input[value="decline"][checked], input[value="cancel"][checked]`).Length(); n != 0 {
		t.Errorf("%d declines or cancels made up", n)
	}
	if doc.Find(`input[name="q0$action"][checked]`).Length() != 0 {
		t.Error("the URL question is answered before the person chose")
	}
	if doc.Find(`input[name="q1$action"][value="accept"][checked]`).Length() != 1 {
		t.Error("the form question is not set to be sent")
	}
	if doc.Find(`[data-testid="error-summary"]`).Length() != 0 {
		t.Error("a fresh round shows errors")
	}
}

// TestFromDraft fills a round from its draft as typed, half-finished and
// unchecked, with the choices made so far.
func TestFromDraft(t *testing.T) {
	t.Parallel()
	call, r := pendingRound(`{"connect":` + urlAsk(t, "https://example.com/") + `,"task":` + taskAsk + `}`)
	qs, err := round.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	actions := round.FromDraft(qs, url.Values{"q0$action": {"decline"}, "q1.title": {"ab"}, "q1.points": {"1.5"}})
	doc, html := renderRound(t, call, r, qs, actions)
	if got := doc.Find(`input[name="q1.title"]`).AttrOr("value", ""); got != "ab" {
		t.Errorf("title = %q, want the draft's ab", got)
	}
	if got := doc.Find(`input[name="q1.points"]`).AttrOr("value", ""); got != "1.5" {
		t.Errorf("points = %q, want the draft's 1.5", got)
	}
	if doc.Find(`input[name="q0$action"][value="decline"][checked]`).Length() != 1 {
		t.Error("the draft's decline is not chosen")
	}
	if doc.Find(`input[name="q1$action"][value="accept"][checked]`).Length() != 1 {
		t.Error("the form question is not set to be sent")
	}
	if doc.Find(`[data-testid="error-summary"], .error, [aria-invalid]`).Length() != 0 {
		t.Errorf("a draft shows errors:\n%s", html)
	}
}

// TestFromDraftKeepsDefaults leaves the defaults of a question the draft
// holds nothing of (its fields were set aside when declined).
func TestFromDraftKeepsDefaults(t *testing.T) {
	t.Parallel()
	call, r := pendingRound(`{"task":` + taskAsk + `}`)
	qs, err := round.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	actions := round.FromDraft(qs, url.Values{"q0$action": {"cancel"}})
	doc, _ := renderRound(t, call, r, qs, actions)
	if got := doc.Find(`input[name="q0.points"]`).AttrOr("value", ""); got != "3" {
		t.Errorf("points = %q, want the default 3", got)
	}
	// Alone in its round, the question is answered with buttons: the
	// draft's choice is not a state of the form, and cancel is a button.
	if doc.Find(`button[name="q0$action"][value="cancel"]`).Length() != 1 {
		t.Error("no Cancel button")
	}
}

// fastmcpBatched is FastMCP 4.0.0b3's round of three questions, as it sent
// them (keys in the tool's order, each a {"value": …} scalar).
const fastmcpBatched = `{"destination":{"method":"elicitation/create","params":{"message":"Where to?","mode":"form","requestedSchema":{"properties":{"value":{"type":"string","title":"Destination"}},"required":["value"],"type":"object"}}},"travellers":{"method":"elicitation/create","params":{"message":"How many travellers?","mode":"form","requestedSchema":{"properties":{"value":{"type":"integer","minimum":1,"maximum":9}},"required":["value"],"type":"object"}}},"cabin":{"method":"elicitation/create","params":{"message":"Which cabin?","mode":"form","requestedSchema":{"properties":{"value":{"type":"string","enum":["economy","business","first"],"default":"economy"}},"required":["value"],"type":"object"}}}}`

// TestServerOrder shows a round's questions in the order the server wrote
// them in, a lone untitled "value" labelled by its question (round's
// TestServerOrder sends the answers back in that order).
func TestServerOrder(t *testing.T) {
	t.Parallel()
	call, r := pendingRound(fastmcpBatched)
	doc, _ := renderRound(t, call, r, nil, nil)
	var keys, labels []string
	doc.Find(`[data-testid="question"]`).Each(func(_ int, s *goquery.Selection) {
		keys = append(keys, s.AttrOr("data-key", ""))
		labels = append(labels, strings.TrimSpace(s.Find("label, legend").First().Text()))
	})
	if got := strings.Join(keys, ","); got != "destination,travellers,cabin" {
		t.Errorf("questions in order %s, want destination,travellers,cabin", got)
	}
	if got := strings.ReplaceAll(strings.Join(labels, "|"), " (required)", ""); got != "Destination|How many travellers?|Which cabin?" {
		t.Errorf("labels = %q", got)
	}
}

// TestUnsent keeps what was typed into a round that could not be sent:
// a form's fields and a sampling reply, not a declined question's fields.
func TestUnsent(t *testing.T) {
	t.Parallel()
	_, r := multipleRound(t)
	qs, err := round.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	got := Unsent(qs, url.Values{"q0$action": {"accept"}, "q0.reply": {"Paris"}, "q2$action": {"accept"}, "q2.title": {"Trip"}})
	var lines []string
	for _, u := range got {
		for _, l := range u.Lines {
			lines = append(lines, u.Question+" / "+l.Label+": "+l.Value)
		}
	}
	want := "Write the model's reply to “What is the capital of France?” / Your reply: Paris|Describe the task / Title: Trip"
	if strings.Join(lines, "|") != want {
		t.Errorf("unsent = %q, want %q", strings.Join(lines, "|"), want)
	}
	if got := Unsent(qs, url.Values{"q2$action": {"decline"}, "q2.title": {"Trip"}}); len(got) != 0 {
		t.Errorf("a declined question's fields are kept: %+v", got)
	}
}

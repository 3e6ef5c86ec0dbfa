package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

func TestCheckWebhookURL(t *testing.T) {
	for _, tc := range []struct {
		name, url    string
		allowPrivate bool
		wantErr      string
	}{
		{"OK", "https://hooks.example.com/rounds?x=1", false, ""},
		{"OKPublicIP", "http://8.8.8.8:8443/h", false, ""},
		{"ErrScheme", "ftp://hooks.example.com/", false, "http or https"},
		{"ErrRelative", "/hooks", false, "absolute"},
		{"ErrCredentials", "https://user:pass@hooks.example.com/", false, "user name or password"},
		{"ErrFragment", "https://hooks.example.com/#x", false, "fragment"},
		{"ErrLoopback", "http://127.0.0.1:9000/", false, "public address"},
		{"ErrLoopbackV6", "http://[::1]/", false, "public address"},
		{"ErrMappedLoopback", "http://[::ffff:127.0.0.1]/", false, "public address"},
		{"ErrPrivate", "http://10.1.2.3/", false, "public address"},
		{"ErrLinkLocal", "http://169.254.169.254/latest/meta-data", false, "public address"},
		{"ErrLocalhost", "http://localhost:8080/", false, "public address"},
		{"ErrUnspecified", "http://0.0.0.0/", false, "public address"},
		{"ErrPort", "http://hooks.example.com:99999/", false, "port"},
		{"ErrLong", "https://hooks.example.com/" + strings.Repeat("a", 2048), false, "longer"},
		{"OKPrivateAllowed", "http://127.0.0.1:9000/", true, ""},
		{"ErrCredentialsEvenIfPrivateAllowed", "http://u:p@127.0.0.1/", true, "user name or password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckWebhookURL(tc.url, tc.allowPrivate)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestWebhookClientRefusesPrivateAtDial checks the address a name resolves
// to when the connection is made, not only the URL's text: a receiver
// listening on loopback, reached by name, is refused unless private
// addresses are allowed.
func TestWebhookClientRefusesPrivateAtDial(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	_, err := webhookClient(false, 2*time.Second).Post(byName, "application/json", nil)
	if err == nil || !strings.Contains(err.Error(), "not a public address") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	resp, err := webhookClient(true, 2*time.Second).Post(byName, "application/json", nil)
	if err != nil {
		t.Fatalf("with private addresses allowed: %v", err)
	}
	resp.Body.Close()
}

// TestRoundMessage writes a mail from hostile server text: line breaks and
// control characters never reach a header, and the body is plain text.
func TestRoundMessage(t *testing.T) {
	mail, err := ParseMail("smtp://u:p@127.0.0.1:2525", "rounds@example.com")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{Mail: mail, PublicURL: "https://rounds.example/"}}
	requests, _ := json.Marshal(map[string]any{"q": map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": "Approve?\r\nBcc: victim@example.com\x00\u202e <b>now</b>",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
	}}})
	m := &store.RoundMail{Email: "ada@example.com", Server: "demo", Method: "tools/call",
		Target: "evil\r\nBcc: x@example.com", Owner: "bob", InputRequests: requests,
		ExpiresAt: time.Date(2031, 5, 4, 12, 0, 0, 0, time.UTC)}
	msg, err := e.roundMessage(queue.MailArgs{CallID: "c1", Seq: 1, Recipient: "ada", Mail: queue.MailReminder}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := msg.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	parsed, err := netmail.ReadMessage(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for name := range parsed.Header {
		if name == "Bcc" || name == "Cc" {
			t.Errorf("server text made a %s header", name)
		}
	}
	if got := parsed.Header.Get("Subject"); got != "Reminder: demo asks you a question (tool evil Bcc: x@example.com)" {
		t.Errorf("Subject = %q", got)
	}
	if got := parsed.Header.Get("To"); got != "<ada@example.com>" {
		t.Errorf("To = %q", got)
	}
	if got := parsed.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/plain") {
		t.Errorf("Content-Type = %q", got)
	}
	raw, _ := io.ReadAll(quotedprintable.NewReader(parsed.Body))
	body := string(raw)
	for _, want := range []string{"https://rounds.example/calls/c1", "Sunday 4 May 2031, 12:00 UTC", "a quarter of its time is left", "Started by: bob"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.ContainsAny(body, "\x00\u202e") {
		t.Errorf("control characters reached the body")
	}
}

func TestParseMail(t *testing.T) {
	for _, tc := range []struct{ url, from, wantErr string }{
		{"smtp://u:p@mail.example:587", "rounds@example.com", ""},
		{"smtps://mail.example", "rounds@example.com", ""},
		{"http://mail.example", "rounds@example.com", "SMTP_URL"},
		{"smtp://mail.example:0", "rounds@example.com", "port"},
		{"smtp://mail.example", "", "MAIL_FROM"},
		{"smtp://mail.example", "Rounds <rounds@example.com>", "MAIL_FROM"},
	} {
		_, err := ParseMail(tc.url, tc.from)
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseMail(%q, %q) = %v, want %q", tc.url, tc.from, err, tc.wantErr)
		}
	}
}

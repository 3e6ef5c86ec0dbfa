package journeys

import (
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// mailbox is a real SMTP server on loopback, like the mail catcher of the
// compose file: it takes mail without signing in (go-mail sends a password
// only over TLS) and keeps every message it is given.
type mailbox struct {
	URL  string
	mu   sync.Mutex
	msgs []sentMail
}

type sentMail struct {
	From    string
	To      []string
	Subject string
	Body    string
}

func newMailbox(t *testing.T) *mailbox {
	t.Helper()
	mb := &mailbox{}
	srv := smtp.NewServer(mb)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = srv.Close() })
	mb.URL = "smtp://" + ln.Addr().String()
	return mb
}

func (mb *mailbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &mailSession{mb: mb}, nil }

type mailSession struct {
	mb   *mailbox
	from string
	to   []string
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error { s.from = from; return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error   { s.to = append(s.to, to); return nil }
func (s *mailSession) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	var body []byte
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body, err = io.ReadAll(quotedprintable.NewReader(m.Body))
	} else {
		body, err = io.ReadAll(m.Body)
	}
	if err != nil {
		return err
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, sentMail{From: s.from, To: s.to, Subject: subject, Body: string(body)})
	s.mb.mu.Unlock()
	return nil
}
func (s *mailSession) Reset()        { s.from, s.to = "", nil }
func (s *mailSession) Logout() error { return nil }

// to returns the mail sent to addr so far.
func (mb *mailbox) to(addr string) []sentMail {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	var out []sentMail
	for _, m := range mb.msgs {
		for _, to := range m.To {
			if to == addr {
				out = append(out, m)
			}
		}
	}
	return out
}

func (mb *mailbox) count() int {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return len(mb.msgs)
}

// waitMail waits until addr has n mails whose subject contains what.
func (mb *mailbox) waitMail(t *testing.T, addr, what string, n int, limit time.Duration) []sentMail {
	t.Helper()
	var got []sentMail
	eventually(t, limit, func() error {
		got = nil
		for _, m := range mb.to(addr) {
			if strings.Contains(m.Subject, what) {
				got = append(got, m)
			}
		}
		if len(got) < n {
			mb.mu.Lock()
			defer mb.mu.Unlock()
			return fmt.Errorf("%s got %d mails about %q, want %d; all mail: %+v", addr, len(got), what, n, mb.msgs)
		}
		return nil
	})
	return got
}

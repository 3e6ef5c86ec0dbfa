package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/riverqueue/river"
	gomail "github.com/wneessen/go-mail"

	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// Mail is where round mail goes out: an SMTP server, given as
// smtp://user:pass@host:port (STARTTLS where the server offers it) or
// smtps://… (TLS from the start), and the sender's address.
type Mail struct {
	URL  *url.URL
	From string
}

// ParseMail reads SMTP_URL and MAIL_FROM. An empty URL means no mail.
func ParseMail(rawURL, from string) (*Mail, error) {
	if rawURL == "" {
		return nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" || u.Path != "" && u.Path != "/" {
		return nil, errors.New("SMTP_URL must look like smtp://user:password@host:port")
	}
	if u.Port() != "" {
		if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
			return nil, errors.New("SMTP_URL has a port that is not a number from 1 to 65535")
		}
	}
	if _, err := store.CheckEmail(from); err != nil || from == "" {
		return nil, errors.New("MAIL_FROM must be one e-mail address, such as rounds@example.com")
	}
	return &Mail{URL: u, From: from}, nil
}

// client returns an SMTP client for one send.
func (m *Mail) client(timeout time.Duration) (*gomail.Client, error) {
	opts := []gomail.Option{gomail.WithTimeout(timeout), gomail.WithTLSPolicy(gomail.TLSOpportunistic)}
	port := 587
	if m.URL.Scheme == "smtps" {
		port = 465
		opts = append(opts, gomail.WithSSL())
	}
	if p := m.URL.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	opts = append(opts, gomail.WithPort(port))
	if m.URL.User != nil {
		pass, _ := m.URL.User.Password()
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(m.URL.User.Username()), gomail.WithPassword(pass))
	}
	return gomail.NewClient(m.URL.Hostname(), opts...)
}

type mailWorker struct {
	river.WorkerDefaults[queue.MailArgs]
	e *Engine
}

// Timeout bounds one send; it stays under the time after which River
// takes a job for orphaned.
func (w *mailWorker) Timeout(*river.Job[queue.MailArgs]) time.Duration { return w.e.cfg.RequestTimeout }

// DefaultMailBackoff is how long a mail the SMTP server did not take waits
// before each next attempt; the last wait repeats for as long as the round
// waits (up to queue.MailAttempts attempts).
var DefaultMailBackoff = []time.Duration{
	5 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// NextRetry spaces the attempts out: a refused sign-in or a relay that is
// down is usually put right within the hour, and the mail is still worth
// sending until the round ends.
func (w *mailWorker) NextRetry(job *river.Job[queue.MailArgs]) time.Time {
	b := w.e.cfg.MailBackoff
	i := min(max(job.Attempt-1, 0), len(b)-1)
	return time.Now().Add(b[i])
}

// Work mails one person about one round, once. A round answered, expired
// or given to someone else before the mail goes out is not mailed about.
func (w *mailWorker) Work(ctx context.Context, job *river.Job[queue.MailArgs]) error {
	e, a := w.e, job.Args
	if e.cfg.Mail == nil {
		return nil
	}
	msg, stored, err := e.mailFor(ctx, a)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if stored != nil {
		if err := e.store.AddMailLink(ctx, a.CallID, a.Seq, *stored); err != nil {
			return err
		}
	}
	sent, err := e.store.SendRoundMailOnce(ctx, a, func() error {
		c, err := e.cfg.Mail.client(e.cfg.RequestTimeout)
		if err != nil {
			return err
		}
		if err := c.DialAndSendWithContext(ctx, msg); err != nil {
			return fmt.Errorf("the SMTP server at %s did not take the mail: %w", e.cfg.Mail.URL.Host, err)
		}
		return nil
	})
	if err != nil {
		e.log.WarnContext(ctx, "round mail not sent; it is tried again later", "call_id", a.CallID, "seq", a.Seq,
			"mail", a.Mail, "to", a.Recipient, "attempt", job.Attempt, "next_attempt", w.NextRetry(job).UTC(), "err", err)
		return err
	}
	if sent {
		e.log.InfoContext(ctx, "round mail sent", "call_id", a.CallID, "seq", a.Seq, "mail", a.Mail, "to", a.Recipient)
	}
	return nil
}

// mailLink is one choice a mail offers as a link.
type mailLink struct{ label, url string }

// approvalChoices are what an approval mail's links decide, in the order
// of maillink's choices: approve, decline.
var approvalChoices = []string{"Approve", "Decline"}

// mailLinks are the links of a mail a that decides kind, one per choice
// labelled, and what the store keeps of them; none without choices (a
// round of anything but one yes/no or single choice), or when links are
// off.
func (e *Engine) mailLinks(a queue.MailArgs, kind string, labels []string) ([]mailLink, *store.NewMailLink, error) {
	if e.cfg.MailLinks == nil || len(labels) == 0 {
		return nil, nil, nil
	}
	mail, err := e.cfg.MailLinks.NewMail()
	if err != nil {
		return nil, nil, err
	}
	links := make([]mailLink, len(labels))
	for i, l := range labels {
		links[i] = mailLink{label: l, url: strings.TrimRight(e.cfg.PublicURL, "/") + "/decide/" + mail.Token(i)}
	}
	return links, &store.NewMailLink{Hash: mail.Hash, Kind: kind, Person: a.Recipient}, nil
}

// linksText is the part of a mail that offers its links: each choice's
// label (the server's text, made plain) and address. verb is what they
// do: "answer" a round, "decide" an approval.
func linksText(links []mailLink, verb string) string {
	if len(links) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Or %s from here, one link each:\n\n", verb)
	for _, l := range links {
		fmt.Fprintf(&b, "    %s: %s\n", oneLine(l.label, 80), l.url)
	}
	fmt.Fprintf(&b, "\nEach link opens a page that shows what it will %s, with a button: nothing is done until you press it. "+
		"The links work once, for you alone, and only while the question waits.\n\n", verb)
	return b.String()
}

// mailFor reads what the mail a says and writes it, with the links that
// decide from it and what the store keeps of them (nil for none): about a
// round, or, for store.ApprovalSeq, about the call's approval.
func (e *Engine) mailFor(ctx context.Context, a queue.MailArgs) (*gomail.Msg, *store.NewMailLink, error) {
	if a.Seq == store.ApprovalSeq {
		m, err := e.store.ApprovalMail(ctx, a.CallID, a.Recipient)
		if err != nil {
			return nil, nil, err
		}
		links, stored, err := e.mailLinks(a, maillink.KindApproval, approvalChoices)
		if err != nil {
			return nil, nil, err
		}
		msg, err := e.approvalMessage(a, m, links)
		return msg, stored, err
	}
	m, err := e.store.RoundMail(ctx, a.CallID, a.Seq, a.Recipient)
	if err != nil {
		return nil, nil, err
	}
	var labels []string
	if qs, err := round.Parse(&store.Round{InputRequests: m.InputRequests}); err == nil {
		for _, c := range round.MailChoices(qs) {
			labels = append(labels, c.Label)
		}
	}
	links, stored, err := e.mailLinks(a, maillink.KindRound, labels)
	if err != nil {
		return nil, nil, err
	}
	msg, err := e.roundMessage(a, m, links)
	return msg, stored, err
}

// roundMessage writes the mail: who asks, through which call, the first
// question, the link to the round, the links that answer it from the mail
// (when it offers any) and its deadline. What the server sent is plain
// text in a text/plain body, and cleaned of line breaks and control
// characters wherever it lands in a header.
func (e *Engine) roundMessage(a queue.MailArgs, m *store.RoundMail, links []mailLink) (*gomail.Msg, error) {
	question := "(a question that cannot be read)"
	if qs, err := mcpclient.ParseQuestions(m.InputRequests); err == nil && len(qs) > 0 {
		question = questionText(qs[0])
		if len(qs) > 1 {
			question += fmt.Sprintf("\n(and %d more question%s)", len(qs)-1, plural(len(qs)-1))
		}
	}
	link := strings.TrimRight(e.cfg.PublicURL, "/") + "/calls/" + a.CallID
	what := map[string]string{mcpclient.MethodGetPrompt: "prompt", mcpclient.MethodReadResource: "resource"}[m.Method]
	if what == "" {
		what = "tool"
	}
	subject := fmt.Sprintf("%s asks you a question (%s %s)", oneLine(m.Server, 60), what, oneLine(m.Target, 60))
	intro := "A round of questions is waiting for you."
	if a.Mail == queue.MailReminder {
		subject = "Reminder: " + subject
		intro = "A round of questions is still waiting for you, and a quarter of its time is left."
	}
	deadline := m.ExpiresAt.UTC().Format("Monday 2 January 2006, 15:04 MST")
	body := fmt.Sprintf("%s\n\nServer: %s\n%s: %s\nStarted by: %s\n\nThe first question:\n\n%s\n\nAnswer it here: %s\n\n%sAnswer by %s; after that the round expires.\n\n"+
		"You get this because the round was assigned to you. You can turn these mails off on your account page: %s\n",
		intro, plainText(m.Server), strings.ToUpper(what[:1])+what[1:], plainText(m.Target), m.Owner,
		indent(plainText(question)), link, linksText(links, "answer"), deadline, strings.TrimRight(e.cfg.PublicURL, "/")+"/account")

	return e.mailMessage(m.Email, subject, body)
}

// mailMessage is a plain-text mail from Rounds to address.
func (e *Engine) mailMessage(address, subject, body string) (*gomail.Msg, error) {
	msg := gomail.NewMsg()
	if err := msg.From(e.cfg.Mail.From); err != nil {
		return nil, err
	}
	if err := msg.To(address); err != nil {
		return nil, err
	}
	msg.Subject(subject)
	msg.SetDate()
	msg.SetMessageID()
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetBodyString(gomail.TypeTextPlain, body)
	return msg, nil
}

// questionText is what a question asks, as the person would read it.
func questionText(q mcpclient.Question) string {
	var p struct {
		Message      string `json:"message"`
		SystemPrompt string `json:"systemPrompt"`
	}
	_ = json.Unmarshal(q.Params, &p)
	switch {
	case p.Message != "":
		return p.Message
	case q.Kind == mcpclient.KindSampling:
		return "The server asks you to write a model's reply."
	case q.Kind == mcpclient.KindRoots:
		return "The server asks which folders it may see."
	}
	return q.Key
}

// oneLine makes server text safe for a header: no line breaks or control
// characters, cut to max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(plainText(s)), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// plainText drops control and invisible formatting characters but for
// line breaks and tabs, and caps the length.
func plainText(s string) string {
	s = strings.ToValidUTF8(s, "�")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 2000 {
		s = string(r[:2000]) + "…"
	}
	return s
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

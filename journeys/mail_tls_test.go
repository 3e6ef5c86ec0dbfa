package journeys

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/jackc/pgx/v5"
)

// relay is an SMTP server on loopback that behaves like a mail provider's
// submission port: it offers STARTTLS with a certificate of a test CA,
// offers AUTH only once the session is encrypted, takes no mail before a
// successful AUTH, and may refuse the first sign-ins.
type relay struct {
	addr       string
	mechs      []string // offered AUTH mechanisms
	user, pass string
	refuse     int // how many sign-ins to refuse before taking one

	mu    sync.Mutex
	auths []relayAuth
	mails []relayMail
}

type relayAuth struct {
	At         time.Time
	Mech, User string
	TLS, OK    bool
}

type relayMail struct {
	To   []string
	TLS  bool   // the session had been upgraded with STARTTLS
	Mech string // how it signed in
	Data string
}

// testCA makes a CA and a certificate it signs for 127.0.0.1, and writes
// the CA to a PEM file for SSL_CERT_FILE.
func testCA(t *testing.T) (caFile string, cert tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Rounds test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func newRelay(t *testing.T, cert tls.Certificate, mechs []string, refuse int) *relay {
	t.Helper()
	r := &relay{mechs: mechs, user: "rounds", pass: "p@ss w:rd", refuse: refuse}
	srv := smtp.NewServer(r)
	srv.Domain = "127.0.0.1"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.AllowInsecureAuth = false
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = srv.Close() })
	r.addr = ln.Addr().String()
	return r
}

// URL is how the app is told about the relay: the password has an @, a
// space and a colon, escaped as a URL must.
func (r *relay) URL() string {
	return "smtp://" + url.UserPassword(r.user, r.pass).String() + "@" + r.addr
}

func (r *relay) NewSession(c *smtp.Conn) (smtp.Session, error) { return &relaySession{r: r, c: c}, nil }

type relaySession struct {
	r    *relay
	c    *smtp.Conn
	mech string
	to   []string
}

func (s *relaySession) encrypted() bool { _, ok := s.c.TLSConnectionState(); return ok }

func (s *relaySession) AuthMechanisms() []string { return s.r.mechs }

func (s *relaySession) Auth(mech string) (sasl.Server, error) {
	check := func(user, pass string) error {
		s.r.mu.Lock()
		defer s.r.mu.Unlock()
		a := relayAuth{At: time.Now(), Mech: mech, User: user, TLS: s.encrypted()}
		refused := s.r.refuse > 0
		if refused {
			s.r.refuse--
		}
		a.OK = !refused && user == s.r.user && pass == s.r.pass
		s.r.auths = append(s.r.auths, a)
		if !a.OK {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
		}
		s.mech = mech
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, errors.New("unsupported mechanism")
}

func (s *relaySession) Mail(string, *smtp.MailOptions) error {
	if s.mech == "" {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	return nil
}

func (s *relaySession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *relaySession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.r.mu.Lock()
	s.r.mails = append(s.r.mails, relayMail{To: s.to, TLS: s.encrypted(), Mech: s.mech, Data: string(b)})
	s.r.mu.Unlock()
	return nil
}

func (s *relaySession) Reset()        { s.to = nil }
func (s *relaySession) Logout() error { return nil }

// loginServer is the server side of AUTH LOGIN: it asks for the user name,
// then the password.
type loginServer struct {
	check func(user, pass string) error
	step  int
	user  string
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if len(response) > 0 { // the user name came with AUTH LOGIN
			l.user = string(response)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 2:
		l.user = string(response)
		return []byte("Password:"), false, nil
	case 3:
		return nil, true, l.check(l.user, string(response))
	}
	return nil, false, errors.New("unexpected response")
}

func (r *relay) snapshot() ([]relayAuth, []relayMail) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]relayAuth(nil), r.auths...), append([]relayMail(nil), r.mails...)
}

// startProcess runs an instance of the app as a process of its own, with
// env added to this process's environment, and returns its URL and log.
func startProcess(t *testing.T, db string, env map[string]string) (string, *logSink) {
	t.Helper()
	addr := freeAddr(t)
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), "ROUNDS_TEST_INSTANCE=1", "DATABASE_URL="+db, "ADMIN_PASSWORD="+adminPassword,
		"LISTEN_ADDR="+addr)
	for k, v := range env {
		proc.Env = append(proc.Env, k+"="+v)
	}
	logs := &logSink{}
	proc.Stderr = logs
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Process.Kill()
		_ = proc.Wait()
		if t.Failed() {
			t.Log("the instance's log:\n" + logs.String())
		}
	})
	base := "http://" + addr
	waitReady(t, base)
	return base, logs
}

// TestMailStartTLSAndAuth sends round mail through a relay that takes mail
// only over STARTTLS and after AUTH, as mail providers' submission ports
// do. The app trusts the relay's certificate through SSL_CERT_FILE (no
// verification is skipped). With PLAIN, the relay refuses the first
// sign-in: the mail is not lost, the refusal is in the instance's log and
// the job's errors in words, and the mail goes out on the next attempt, a
// backoff later. With LOGIN, the mail goes out at once.
func TestMailStartTLSAndAuth(t *testing.T) {
	t.Parallel()
	caFile, cert := testCA(t)
	for _, tc := range []struct {
		mech   string
		refuse int
	}{
		{sasl.Plain, 1},
		{sasl.Login, 0},
	} {
		t.Run(tc.mech, func(t *testing.T) {
			t.Parallel()
			db := newDatabase(t)
			r := newRelay(t, cert, []string{tc.mech}, tc.refuse)
			base, logs := startProcess(t, db, map[string]string{
				"SSL_CERT_FILE": caFile, "SMTP_URL": r.URL(), "MAIL_FROM": "rounds@example.com",
				"PUBLIC_URL": "https://rounds.example", "MCP_SERVERS": "demo=" + demoServer(t, nil),
			})
			cli(t, db, "a long password\n", "user", "add", "--email", "ada@example.com", "ada")
			admin := newClient(t, db)
			status, body := admin.do("POST", base+"/api/v1/calls", "application/json",
				`{"server":"demo","tool":"book_flight","arguments":{},"assignee":"ada"}`)
			if status != http.StatusCreated {
				t.Fatalf("start: %d %s", status, body)
			}
			var call apiCall
			_ = json.Unmarshal(body, &call)

			var auths []relayAuth
			var mails []relayMail
			_ = poll(45*time.Second, func() error {
				if auths, mails = r.snapshot(); len(mails) == 0 {
					return errors.New("no mail yet")
				}
				return nil
			})
			if len(mails) != 1 {
				t.Fatalf("the relay took %d mails, want 1; sign-ins: %+v", len(mails), auths)
			}
			m := mails[0]
			if !m.TLS || m.Mech != tc.mech || len(m.To) != 1 || m.To[0] != "ada@example.com" {
				t.Errorf("mail to %v over TLS %v after AUTH %q; want ada's, over STARTTLS, after %s", m.To, m.TLS, m.Mech, tc.mech)
			}
			msg, err := mail.ReadMessage(strings.NewReader(m.Data))
			if err != nil {
				t.Fatal(err)
			}
			text, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
			if !strings.Contains(string(text), "https://rounds.example/calls/"+call.ID) {
				t.Errorf("the mail does not link to the round:\n%s", text)
			}
			if len(auths) != tc.refuse+1 {
				t.Fatalf("%d sign-ins, want %d: %+v", len(auths), tc.refuse+1, auths)
			}
			for i, a := range auths {
				if !a.TLS || a.Mech != tc.mech || a.User != "rounds" || a.OK != (i == tc.refuse) {
					t.Errorf("sign-in %d = %+v; want %s as rounds over TLS, refused only the first %d times", i, a, tc.mech, tc.refuse)
				}
			}
			if tc.refuse == 0 {
				return
			}
			// The job waited before it tried again (5 s, the first backoff).
			if gap := auths[1].At.Sub(auths[0].At); gap < 4*time.Second {
				t.Errorf("the mail was tried again %s after the refusal; want a backoff of about 5 s", gap)
			}
			// The refusal is in the instance's log, in words.
			var logged bool
			for line := range strings.SplitSeq(logs.String(), "\n") {
				var l struct{ Level, Msg, Err, To string }
				if json.Unmarshal([]byte(line), &l) == nil && l.Level == "WARN" && strings.HasPrefix(l.Msg, "round mail not sent") {
					logged = l.To == "ada" && strings.Contains(l.Err, "did not take the mail") &&
						strings.Contains(l.Err, "535") && strings.Contains(l.Err, "Authentication credentials invalid")
					if !logged {
						t.Errorf("the log says %+v", l)
					}
				}
			}
			if !logged {
				t.Errorf("no log line says the mail was not sent")
			}
			// And in the job's own record, which River keeps: one error, then done.
			conn, err := pgx.Connect(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var state string
			var errs []byte
			_ = poll(15*time.Second, func() error {
				if err := conn.QueryRow(context.Background(), `select state::text, coalesce(to_json(errors)::text, '[]') from river_job
					where kind = 'round_mail' and args->>'mail' = 'waiting' and args->>'call_id' = $1`, call.ID).Scan(&state, &errs); err != nil {
					t.Fatal(err)
				}
				if state != "completed" {
					return errors.New("the mail job is " + state)
				}
				return nil
			})
			if state != "completed" || bytes.Count(errs, []byte(`"attempt"`)) != 1 || !bytes.Contains(errs, []byte("535")) {
				t.Errorf("the mail job is %s with errors %s; want completed after one error saying 535", state, errs)
			}
		})
	}
}

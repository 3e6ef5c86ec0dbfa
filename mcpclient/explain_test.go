package mcpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// TestDescribe: each way a request to a server can fail is said in one
// sentence of what became of it and one of what that means, with Go's
// error text kept apart, and says whether trying again could help.
func TestDescribe(t *testing.T) {
	t.Parallel()
	c := mcpclient.New(mcpclient.Options{RequestTimeout: 300 * time.Millisecond})
	listErr := func(url string) error {
		t.Helper()
		_, err := c.ListTools(t.Context(), mcpclient.Server{URL: url})
		if err == nil {
			t.Fatalf("listing the tools at %s went through", url)
		}
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "upstream is restarting", http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handler

	for _, tt := range []struct {
		name       string
		err        error
		what, why  string
		detail     string // held in Detail; "" for none
		retry, now bool   // Retry, and Passing
		foreign    bool   // none of the client's kinds
	}{
		{name: "ConnectionRefused", err: listErr(closed),
			what: "The server could not be reached (connection refused).", why: "Nothing answers at the server's address: it may be down or restarting.",
			detail: "connection refused", retry: true, now: true},
		{name: "NotFound", err: listErr(missing.URL + "/mcp"),
			what: "The server answered HTTP 404 Not Found: 404 page not found.", why: "Nothing is served at the server's address: its URL may be wrong."},
		{name: "ServiceUnavailable", err: listErr(busy.URL),
			what: "The server answered HTTP 503 Service Unavailable: upstream is restarting.", why: "The server is unavailable for now.",
			retry: true, now: true},
		{name: "NoAnswerInTime", err: listErr(hang.URL), what: "The server did not answer in time.", retry: true, now: true},
		{name: "ServerError", err: &mcpclient.ServerError{Code: -32602, Message: "Unknown tool: launch"},
			what: "The server answered with an error: Unknown tool: launch.", retry: true},
		{name: "ServerErrorWithoutWords", err: &mcpclient.ServerError{Code: -32603},
			what: "The server answered with an error.", retry: true},
		{name: "RefusedWithJSONRPC", err: &mcpclient.HTTPError{Status: http.StatusBadRequest, Code: -32600, Message: "no back-channel."},
			what: "The server answered HTTP 400 Bad Request: no back-channel."},
		{name: "FailedOnItsSide", err: &mcpclient.HTTPError{Status: http.StatusInternalServerError, Message: "boom"},
			what: "The server answered HTTP 500 Internal Server Error: boom.", why: "The server failed with an error of its own.",
			retry: true, now: true},
		{name: "Redirect", err: &mcpclient.RedirectError{From: "http://a.test:80", To: "http://b.test:80"},
			what: "The server could not be used: the server redirected the request to http://b.test:80, another origin than its own " +
				"(http://a.test:80); Rounds does not follow redirects to other origins, so the server's credentials stay with it."},
		{name: "Unstorable", err: &mcpclient.UnstorableError{What: "its questions"},
			what: "The call failed: the server sent bytes that are not valid UTF-8 in its questions, which Rounds cannot store."},
		{name: "Limit", err: &mcpclient.LimitError{What: "101 questions in one round; this client accepts at most 100"},
			what: "The call failed: the server sent 101 questions in one round; this client accepts at most 100."},
		{name: "UndeclaredSampling", err: &mcpclient.UndeclaredError{Key: "llm", Kind: mcpclient.KindSampling},
			what: `The call failed: the server asked for sampling (sampling/createMessage) in input request "llm", which this client did not declare for this server.`,
			why:  "An administrator can switch sampling on for this server."},
		{name: "UndeclaredURL", err: &mcpclient.UndeclaredError{Key: "pay", Kind: mcpclient.KindURL},
			what: `The call failed: the server asked for a URL-mode elicitation in input request "pay", which this client did not declare for this server.`},
		{name: "SignIn", err: &mcpclient.AuthRequiredError{Status: http.StatusUnauthorized},
			what: "The server needs you to sign in first."},
		{name: "MoreScopes", err: &mcpclient.AuthRequiredError{Status: http.StatusForbidden, Scope: "mcp:admin"},
			what: "The server needs more permissions than it was given (mcp:admin)."},
		{name: "TooLarge", err: &mcpclient.UnreachableError{Err: fmt.Errorf("reading: %w", mcpclient.ErrResponseTooLarge)},
			what: "The server's answer was larger than this client accepts."},
		{name: "Other", err: errors.New("the server stayed busy: it asked for nothing 4 times in a row"),
			what: "Talking to the server went wrong.", detail: "the server stayed busy", retry: true, foreign: true},
		{name: "OtherTimedOut", err: fmt.Errorf("waiting: %w", context.DeadlineExceeded),
			what: "Talking to the server went wrong.", why: "The server did not answer in time.", detail: "deadline", retry: true, foreign: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := mcpclient.Describe(tt.err)
			if p.What != tt.what {
				t.Errorf("What = %q\nwant %q", p.What, tt.what)
			}
			if p.Why != tt.why {
				t.Errorf("Why = %q\nwant %q", p.Why, tt.why)
			}
			if (tt.detail == "") != (p.Detail == "") || !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("Detail = %q, want it to hold %q", p.Detail, tt.detail)
			}
			if p.Retry != tt.retry || p.Passing != tt.now {
				t.Errorf("Retry, Passing = %v, %v; want %v, %v", p.Retry, p.Passing, tt.retry, tt.now)
			}
			if ok == tt.foreign {
				t.Errorf("ok = %v for %T", ok, tt.err)
			}
			if s := p.Sentence(); strings.Contains(s, "dial tcp") || strings.Contains(s, "Post \"") || strings.Contains(s, "rejected by transport") {
				t.Errorf("the sentence shows Go's error text: %q", s)
			}
		})
	}
}

// TestWithDetail: a page's lead is followed by what the failure means, and
// the error's own text only after the separator.
func TestWithDetail(t *testing.T) {
	t.Parallel()
	err := &mcpclient.UnreachableError{Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	msg := mcpclient.WithDetail("The tools could not be listed.", err)
	sentence, detail := mcpclient.SplitDetail(msg)
	if sentence != "The tools could not be listed. The server could not be reached (the connection could not be made)." {
		t.Errorf("sentence = %q", sentence)
	}
	if detail != err.Error() {
		t.Errorf("detail = %q, want %q", detail, err.Error())
	}
}

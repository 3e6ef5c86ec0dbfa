package mcpclient

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// DetailSeparator parts a message for people from the technical detail
// after it (Go's error text), which pages show behind a disclosure.
const DetailSeparator = "\n\nTechnical detail: "

// WithDetail is a sentence for people, lead followed by what went wrong in
// words, with the error's own text kept after DetailSeparator.
func WithDetail(lead string, err error) string {
	p, _ := Describe(err)
	// The lead says what became of the request; what it means follows.
	return strings.TrimSpace(lead+" "+cmp.Or(p.Why, p.What)) + DetailSeparator + err.Error()
}

// SplitDetail parts a message made by WithDetail; a message without detail
// comes back whole.
func SplitDetail(msg string) (sentence, detail string) {
	sentence, detail, _ = strings.Cut(msg, DetailSeparator)
	return sentence, detail
}

// Problem is an error from talking to a server, in words for a person.
type Problem struct {
	// What says what became of the request, in a sentence.
	What string
	// Why says what that likely means (down, slow, not found, refusing
	// us), in a sentence; empty when nothing more is known.
	Why string
	// Detail is the error's own text where What leaves it out, for a
	// disclosure behind the sentence; empty where What carries it.
	Detail string
	// Retry says sending the same request again could help.
	Retry bool
	// Passing says the trouble is likely to pass by itself: the server is
	// down, slow or busy for now.
	Passing bool
}

// Sentence is What followed by Why.
func (p Problem) Sentence() string { return strings.TrimSpace(p.What + " " + p.Why) }

// Describe puts an error from a request to a server in words for a person.
// It owns every sentence said about such an error. ok is false for an
// error of none of this client's kinds, which is worded all the same, as
// talking to the server going wrong.
func Describe(err error) (p Problem, ok bool) {
	var redirect *RedirectError
	var unstorable *UnstorableError
	var limit *LimitError
	var undeclared *UndeclaredError
	var auth *AuthRequiredError
	var refused *HTTPError
	var status *StatusError
	var unreachable *UnreachableError
	var server *ServerError
	var exited *ProcessExitedError
	switch {
	case errors.As(err, &exited):
		return Problem{What: "The server's process stopped (" + exited.Status + ") while this call was open on it, " +
			"so its answer will not come. Start the call again if you want it, your answers filled in."}, true
	case errors.Is(err, ErrProcessesBusy):
		return Problem{What: "The server's processes were all busy with other calls.", Retry: true, Passing: true}, true
	case errors.As(err, &redirect):
		return Problem{What: "The server could not be used: " + clause(redirect.Error())}, true
	case errors.As(err, &unstorable):
		return Problem{What: "The call failed: " + clause(unstorable.Error())}, true
	case errors.As(err, &limit):
		return Problem{What: "The call failed: " + clause(limit.Error())}, true
	case errors.As(err, &undeclared):
		p := Problem{What: "The call failed: " + clause(undeclared.Error())}
		if undeclared.Kind == KindSampling || undeclared.Kind == KindRoots {
			p.Why = "An administrator can switch " + undeclared.Kind + " on for this server."
		}
		return p, true
	case errors.As(err, &auth):
		return Problem{What: sentence(auth.Error())}, true
	case errors.Is(err, ErrResponseTooLarge):
		return Problem{What: "The server's answer was larger than this client accepts."}, true
	case missingCapability(err) != "":
		return Problem{What: "The server needs something of its client that Rounds does not offer: " + clause(missingCapability(err)),
			Why: "It answered error " + strconv.Itoa(CodeMissingCapability) + " (a missing client capability)."}, true
	case errors.As(err, &refused):
		// It answered: say what it said, not that it could not be reached.
		passing := refused.Status >= 500 || refused.Status == http.StatusTooManyRequests || refused.Status == http.StatusRequestTimeout
		return Problem{What: sentence(refused.Error()), Why: statusSentence(refused.Status), Retry: passing, Passing: passing}, true
	case errors.As(err, &status):
		// It answered, but could not take the request now.
		return Problem{What: sentence("the server answered " + status.Error()), Why: statusSentence(status.Code), Retry: true, Passing: true}, true
	case errors.As(err, &unreachable):
		if errors.Is(err, context.DeadlineExceeded) {
			return Problem{What: noAnswerInTime, Retry: true, Passing: true}, true
		}
		p := Problem{What: "The server could not be reached (" + Reason(err) + ").", Why: cause(unreachable.Err),
			Detail: unreachable.Err.Error(), Retry: true, Passing: true}
		return p, true
	case errors.As(err, &server):
		what := "The server answered with an error."
		if server.Message != "" {
			what = "The server answered with an error: " + clause(server.Message)
		}
		return Problem{What: what, Retry: true}, true
	}
	return Problem{What: "Talking to the server went wrong.", Why: cause(err), Detail: err.Error(), Retry: true}, false
}

// noAnswerInTime is said of a request the server let time out.
const noAnswerInTime = "The server did not answer in time."

// sentence makes s a sentence: a capital first, a stop last.
func sentence(s string) string {
	s = clause(s)
	if r, n := utf8.DecodeRuneInString(s); unicode.IsLower(r) {
		s = string(unicode.ToUpper(r)) + s[n:]
	}
	return s
}

// clause ends s, which follows a colon, with a stop.
func clause(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

// cause says what a failure to talk to a server likely means: down, slow,
// not found, refusing us, or misbehaving; "" when that is not known.
func cause(err error) string {
	var dns *net.DNSError
	var certInvalid x509.CertificateInvalidError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ETIMEDOUT):
		return noAnswerInTime
	case errors.Is(err, syscall.ECONNREFUSED):
		return "Nothing answers at the server's address: it may be down or restarting."
	case errors.As(err, &dns):
		return "The server's host name could not be found."
	case errors.As(err, &verify), errors.As(err, &certInvalid), errors.As(err, &unknownAuthority), errors.As(err, &hostname):
		return "The server's certificate could not be trusted, so no secure connection was made."
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "The server closed the connection before it answered."
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "The server's network cannot be reached from here."
	}
	// The go-sdk reports an HTTP status in its error text only, by its
	// code or by its name.
	msg := err.Error()
	for _, st := range statusSentences {
		code := strconv.Itoa(st.code)
		if strings.HasSuffix(msg, ": "+http.StatusText(st.code)) || strings.Contains(msg, code+" "+http.StatusText(st.code)) ||
			strings.Contains(msg, "status "+code) || strings.Contains(msg, "status code "+code) {
			return st.sentence
		}
	}
	return ""
}

// statusSentences say what an HTTP error status from a server means for a
// person.
var statusSentences = []struct {
	code     int
	sentence string
}{
	{http.StatusUnauthorized, "The server wants credentials it was not given, or refused the ones it was given."},
	{http.StatusForbidden, "The server refused access."},
	{http.StatusNotFound, "Nothing is served at the server's address: its URL may be wrong."},
	{http.StatusMethodNotAllowed, "The server's address does not take MCP requests: its URL may be wrong."},
	{http.StatusTooManyRequests, "The server is asking for fewer requests: try again in a while."},
	{http.StatusBadGateway, "The server, or a proxy in front of it, is not working right now."},
	{http.StatusServiceUnavailable, "The server is unavailable for now."},
	{http.StatusGatewayTimeout, "A proxy in front of the server got no answer from it in time."},
	{http.StatusInternalServerError, "The server failed with an error of its own."},
}

// statusSentence is statusSentences' words for code; "" for a status
// without words of its own.
func statusSentence(code int) string {
	for _, st := range statusSentences {
		if st.code == code {
			return st.sentence
		}
	}
	return ""
}

// missingCapability is the server's message when it refused a request for
// a client capability Rounds did not declare (-32021), else "".
func missingCapability(err error) string {
	var refused *HTTPError
	if errors.As(err, &refused) && refused.Code == CodeMissingCapability {
		return cmpOr(refused.Message, "a missing client capability")
	}
	var server *ServerError
	if errors.As(err, &server) && server.Code == CodeMissingCapability {
		return cmpOr(server.Message, "a missing client capability")
	}
	return ""
}

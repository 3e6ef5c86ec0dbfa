package mcpclient

import (
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
)

// DetailSeparator parts a message for people from the technical detail
// after it (Go's error text), which pages show behind a disclosure.
const DetailSeparator = "\n\nTechnical detail: "

// WithDetail is a sentence for people, lead followed by what went wrong in
// words, with the error's own text kept after DetailSeparator.
func WithDetail(lead string, err error) string {
	return strings.TrimSpace(lead+" "+Explain(err)) + DetailSeparator + err.Error()
}

// SplitDetail parts a message made by WithDetail; a message without detail
// comes back whole.
func SplitDetail(msg string) (sentence, detail string) {
	sentence, detail, _ = strings.Cut(msg, DetailSeparator)
	return sentence, detail
}

// Explain says in a sentence what an error talking to a server means for a
// person: down, slow, not found, refusing us, or misbehaving.
func Explain(err error) string {
	var server *ServerError
	var dns *net.DNSError
	var certInvalid x509.CertificateInvalidError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	msg := err.Error()
	switch {
	case errors.Is(err, ErrResponseTooLarge):
		return "The server's answer was larger than this client accepts."
	case errors.As(err, &server):
		return "The server answered with an error: " + strings.TrimSuffix(server.Message, ".") + "."
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ETIMEDOUT):
		return "The server did not answer in time."
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
	for _, s := range []struct {
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
	} {
		code := strconv.Itoa(s.code)
		if strings.HasSuffix(msg, ": "+http.StatusText(s.code)) || strings.Contains(msg, code+" "+http.StatusText(s.code)) ||
			strings.Contains(msg, "status "+code) || strings.Contains(msg, "status code "+code) {
			return s.sentence
		}
	}
	return "Talking to the server went wrong."
}

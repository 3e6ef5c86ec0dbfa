package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StatusError is an HTTP answer that says the server, or a proxy in front
// of it, could not take the request now: 429, 502, 503 or 504.
type StatusError struct {
	Code int
	// RetryAfter is the wait the server asked for, zero when it gave none.
	RetryAfter time.Duration
	// Message is the start of the response body, as text.
	Message string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// statusError turns a 429/502/503/504 response into a StatusError, closing
// its body; any other response is left alone and nil returned.
func statusError(resp *http.Response, now time.Time) *StatusError {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
	default:
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_ = resp.Body.Close()
	msg := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "")), " ")
	if len(msg) > 200 {
		msg = strings.ToValidUTF8(msg[:200], "") + "…"
	}
	return &StatusError{Code: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), now), Message: msg}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(min(n, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// Transient reports whether err shows the request did not reach the server
// (the connection was refused, the name did not resolve) or the server said
// to come back later (502, 503, 504, or 429 with Retry-After): sending the
// same request again is then safe and may succeed. wait is the delay the
// server asked for, zero when it gave none. Anything else — a timeout, a
// connection cut while the server had the request, an answer we could not
// read — may have reached the server and is not transient.
func Transient(err error) (wait time.Duration, ok bool) {
	var se *StatusError
	if errors.As(err, &se) {
		if se.Code == http.StatusTooManyRequests && se.RetryAfter == 0 {
			return 0, false
		}
		return se.RetryAfter, true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return 0, true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return 0, true
	}
	return 0, false
}

// Reason says in a few words why a request did not get through, for a
// person: never the server's own words, which go elsewhere.
func Reason(err error) string {
	var se *StatusError
	var dns *net.DNSError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("HTTP %d %s", se.Code, http.StatusText(se.Code))
	case errors.As(err, &dns):
		return "the server's name did not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded):
		return "the server did not answer in time"
	case errors.Is(err, ErrResponseTooLarge):
		return "the server's answer was too large"
	default:
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return "the connection could not be made"
		}
		return "the connection failed"
	}
}

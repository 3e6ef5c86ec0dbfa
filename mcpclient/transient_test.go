package mcpclient_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// TestTransient: only failures where the request provably did not arrive,
// or where the server asked to come back, are worth sending again.
func TestTransient(t *testing.T) {
	status := func(code int, header http.Header) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range header {
				w.Header()[k] = v
			}
			http.Error(w, "upstream is restarting", code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	t.Cleanup(hang.Close)
	later := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)

	for _, tc := range []struct {
		name      string
		url       string
		transient bool
		wait      time.Duration // at least this much
	}{
		{"ConnectionRefused", closed, true, 0},
		{"BadGateway", status(http.StatusBadGateway, nil), true, 0},
		{"ServiceUnavailableRetryAfter", status(http.StatusServiceUnavailable, http.Header{"Retry-After": {"7"}}), true, 7 * time.Second},
		{"GatewayTimeout", status(http.StatusGatewayTimeout, nil), true, 0},
		{"TooManyRequestsRetryAfterDate", status(http.StatusTooManyRequests, http.Header{"Retry-After": {later}}), true, 80 * time.Second},
		{"TooManyRequestsNoRetryAfter", status(http.StatusTooManyRequests, nil), false, 0},
		{"InternalServerError", status(http.StatusInternalServerError, nil), false, 0},
		{"Timeout", hang.URL, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mcpclient.New(mcpclient.Options{RequestTimeout: 300 * time.Millisecond})
			// Both paths: the pinned request, and discovery before it.
			for _, srv := range []mcpclient.Server{
				{URL: tc.url, Protocol: mcpclient.ProtocolStateless},
				{URL: tc.url},
			} {
				_, err := c.Send(ctx(t), srv, mcpclient.Request{Name: "t"}, nil)
				if err == nil {
					t.Fatal("no error")
				}
				wait, ok := mcpclient.Transient(err)
				if ok != tc.transient || wait < tc.wait || wait > tc.wait+15*time.Second {
					t.Errorf("protocol %q: Transient(%v) = %v, %v; want %v, at least %v", srv.Protocol, err, wait, ok, tc.transient, tc.wait)
				}
				var unreachable *mcpclient.UnreachableError
				if tc.transient && !errors.As(err, &unreachable) {
					t.Errorf("err = %v (%T), want an UnreachableError", err, err)
				}
			}
		})
	}
}

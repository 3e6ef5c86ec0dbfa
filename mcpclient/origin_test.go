package mcpclient_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// otherHost stands for another host: a loopback listener of its own that
// records every request and the Authorization header it carried.
type otherHost struct {
	mu     sync.Mutex
	hits   int
	authzs []string
	url    string
}

func newOtherHost(t *testing.T) *otherHost {
	t.Helper()
	o := &otherHost{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.hits++
		o.authzs = append(o.authzs, r.Header.Get("Authorization"))
		o.mu.Unlock()
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	o.url = srv.URL
	return o
}

func (o *otherHost) seen() (int, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hits, append([]string(nil), o.authzs...)
}

// redirecting answers every request with status to target.
func redirecting(t *testing.T, status int, target string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", target)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRedirectToAnotherOrigin: a server with a stored credential answers
// 307/308/302 to another host. The request is not followed there, the
// other host never sees the credential (nor any request), and the error
// says what happened, for calls, discovery and tool lists alike.
func TestRedirectToAnotherOrigin(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			other := newOtherHost(t)
			srv := forms(redirecting(t, status, other.url+"/steal?x=1"))
			srv.Header = http.Header{"Authorization": {"Bearer s3cret"}}
			srv.Protocol = mcpclient.ProtocolStateless
			c := newClient()
			check := func(what string, err error) {
				t.Helper()
				var re *mcpclient.RedirectError
				if !errors.As(err, &re) {
					t.Fatalf("%s: err = %v (%T), want a RedirectError", what, err, err)
				}
				var unreachable *mcpclient.UnreachableError
				if errors.As(err, &unreachable) {
					t.Errorf("%s: a refused redirect is reported as unreachable, which invites retries", what)
				}
				if re.To != other.url || !strings.Contains(err.Error(), "another origin") {
					t.Errorf("%s: error = %q", what, err)
				}
				if strings.Contains(err.Error(), "steal") || strings.Contains(err.Error(), "s3cret") {
					t.Errorf("%s: error shows the path or the credential: %q", what, err)
				}
			}
			_, err := c.Send(ctx(t), srv, mcpclient.Request{Name: "t"}, nil)
			check("send", err)
			_, err = c.Discover(ctx(t), srv)
			check("discover", err)
			_, err = c.ListTools(ctx(t), srv)
			check("list tools", err)
			if hits, authz := other.seen(); hits != 0 {
				t.Errorf("the other host got %d requests (Authorization %q)", hits, authz)
			}
		})
	}
}

// TestRedirectWithinOrigin: a redirect to another path of the same origin
// is followed, with the credential, as a moved endpoint should be.
func TestRedirectWithinOrigin(t *testing.T) {
	peer, _ := newRawPeer(t, func(int, json.RawMessage) string { return `{"content":[]}` })
	mux := http.NewServeMux()
	mux.Handle("/", peer)
	mux.Handle("/old", http.RedirectHandler("/", http.StatusPermanentRedirect))
	srvURL := httptest.NewServer(mux)
	t.Cleanup(srvURL.Close)
	srv := forms(srvURL.URL + "/old")
	srv.Header = http.Header{"Authorization": {"Bearer s3cret"}}
	srv.Protocol = mcpclient.ProtocolStateless
	if _, err := newClient().Send(ctx(t), srv, mcpclient.Request{Name: "t"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := peer.header.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization after a same-origin redirect = %q", got)
	}
}

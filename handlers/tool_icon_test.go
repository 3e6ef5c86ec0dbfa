package handlers

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// iconPNG is a small PNG.
func iconPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestIconFetchedFromCheckedAddress: the icon's host resolves first to a
// public address, then (a rebinding DNS server) to loopback. Rounds
// resolves once, checks that answer, and dials that very address; a name
// that resolves only to private addresses is not fetched from at all.
func TestIconFetchedFromCheckedAddress(t *testing.T) {
	pic := iconPNG(t)
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts = append(hosts, r.Host)
		_, _ = w.Write(pic)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	public := netip.MustParseAddr("203.0.113.7")

	newCache := func(answers ...string) (*icons, *[]string, *atomic.Int32) {
		ic := newIcons(false)
		var lookups atomic.Int32
		ic.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
			n := int(lookups.Add(1)) - 1
			return []netip.Addr{netip.MustParseAddr(answers[min(n, len(answers)-1)])}, nil
		}
		var dialled []string
		ic.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			dialled = append(dialled, address)
			if ap := netip.MustParseAddrPort(address); ap.Addr() == public {
				address = srv.Listener.Addr().String() // the public host stands in for the test server
			}
			var d net.Dialer
			return d.DialContext(ctx, network, address)
		}
		return ic, &dialled, &lookups
	}

	t.Run("Rebinding", func(t *testing.T) {
		ic, dialled, lookups := newCache(public.String(), "127.0.0.1")
		src := "http://icons.test:" + port + "/own.png"
		data := ic.get(t.Context(), "http://icons.test:"+port+"/mcp", src)
		if !bytes.Equal(data, pic) {
			t.Errorf("got %d bytes, want the server's PNG", len(data))
		}
		if len(*dialled) != 1 || (*dialled)[0] != net.JoinHostPort(public.String(), port) {
			t.Errorf("dialled %v; want only the address checked, %s", *dialled, public)
		}
		if n := lookups.Load(); n != 1 {
			t.Errorf("the name was resolved %d times, want once", n)
		}
		if len(hosts) == 0 || hosts[len(hosts)-1] != "icons.test:"+port {
			t.Errorf("the request's Host was %v, want the icon's name", hosts)
		}
	})

	t.Run("PrivateName", func(t *testing.T) {
		ic, dialled, _ := newCache("10.0.0.5")
		if data := ic.get(t.Context(), "http://inside.test:"+port+"/mcp", "http://inside.test:"+port+"/own.png"); data != nil {
			t.Error("an icon was fetched from a name that resolves to a private address")
		}
		if len(*dialled) != 0 {
			t.Errorf("dialled %v; want nothing", *dialled)
		}
	})
}

// TestIconMissesShareOneFetch: eight requests for an icon nobody has
// fetched yet, all at once, cost the server one fetch, and all get it.
func TestIconMissesShareOneFetch(t *testing.T) {
	pic := iconPNG(t)
	var fetches atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		<-release
		_, _ = w.Write(pic)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	ic := newIcons(false)
	var misses atomic.Int32
	ic.onMiss = func() { misses.Add(1) }
	const n = 8
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i] = ic.get(context.Background(), srv.URL+"/mcp", srv.URL+"/own.png") })
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); misses.Load() < n; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests missed", misses.Load(), n)
		}
	}
	close(release)
	wg.Wait()
	if f := fetches.Load(); f != 1 {
		t.Errorf("%d concurrent misses made %d fetches, want 1", n, f)
	}
	for i, data := range got {
		if !bytes.Equal(data, pic) {
			t.Errorf("request %d got %q…, want the PNG", i, strings.ToValidUTF8(string(data[:min(len(data), 8)]), "?"))
		}
	}
}

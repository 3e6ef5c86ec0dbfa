package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects bounds the redirects followed within a server's origin.
const maxRedirects = 5

// RedirectError means a server answered with a redirect to another origin
// than the one it is registered at. Rounds does not follow it: the server's
// stored credentials go only to its own origin, and a server cannot point
// Rounds at a host of its choosing (an SSRF pivot).
type RedirectError struct {
	// From is the registered origin, To the origin redirected to.
	From, To string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server redirected the request to %s, another origin than its own (%s); "+
		"Rounds does not follow redirects to other origins, so the server's credentials stay with it", e.To, e.From)
}

// origin is a URL's scheme, host and port, the port always spelled out, so
// that http://a and http://a:80 are the same origin and https://a is not.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// sameOriginRedirects is the HTTP client's redirect policy: a redirect
// within the origin of the first request is followed (a few times at most),
// anything else is refused with a RedirectError.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if from, to := origin(via[0].URL), origin(req.URL); from != to {
		return &RedirectError{From: displayOrigin(via[0].URL), To: displayOrigin(req.URL)}
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("the server redirected more than %d times", maxRedirects)
	}
	return nil
}

// displayOrigin is an origin as a person would write it: no path, query or
// user information, which may hold secrets.
func displayOrigin(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// transportError wraps a failure to get an answer as an UnreachableError,
// except a refused redirect: that is the server's answer, retrying cannot
// change it, so it comes back as a RedirectError of its own.
func transportError(ctx context.Context, err error) error {
	var re *RedirectError
	if errors.As(err, &re) {
		return &RedirectError{From: re.From, To: re.To}
	}
	return &UnreachableError{Err: ctxDone(ctx, err)}
}

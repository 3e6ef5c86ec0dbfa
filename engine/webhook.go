package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/riverqueue/river"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// DefaultWebhookBackoff is how long a failed delivery waits before each
// next attempt: about a day and a half in all, as Standard Webhooks
// senders commonly do.
var DefaultWebhookBackoff = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// WebhookSecretPrefix starts a webhook secret as people are shown it.
const WebhookSecretPrefix = "whsec_"

// FormatWebhookSecret shows a secret the Standard Webhooks way.
func FormatWebhookSecret(secret []byte) string {
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(secret)
}

// CheckWebhookURL checks an address events are to be posted to: http or
// https, a host, no credentials or fragment, and, unless allowPrivate, no
// loopback, private, link-local or otherwise non-public IP address. Names
// are checked again when each connection is made.
func CheckWebhookURL(raw string, allowPrivate bool) error {
	bad := func(why string) error {
		return &store.Error{Kind: store.ErrInvalid, Message: `"webhook_url" ` + why}
	}
	if len(raw) > 2048 {
		return bad("is longer than 2048 characters.")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "":
		return bad("must be an absolute http or https URL.")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("must be an http or https URL.")
	case u.Hostname() == "":
		return bad("must name a host.")
	case u.User != nil:
		return bad("must not carry a user name or password.")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("must not have a fragment (#…).")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("has a port that is not a number from 1 to 65535.")
		}
	}
	if allowPrivate {
		return nil
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") ||
		strings.HasSuffix(host, ".internal") {
		return bad("must be a public address, not " + host + ".")
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicIP(ip) {
		return bad("must be a public address, not " + ip.String() + ".")
	}
	return nil
}

// PublicIP reports whether an address is one a webhook (or an icon) may reach when
// private addresses are not allowed.
func PublicIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() &&
		!netip.MustParsePrefix("100.64.0.0/10").Contains(ip) && // carrier-grade NAT
		!netip.MustParsePrefix("fc00::/7").Contains(ip)
}

// webhookClient posts events. It follows no redirect, and, unless private
// addresses are allowed, refuses to connect to one whatever a name
// resolves to at the time.
func webhookClient(allowPrivate bool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !PublicIP(ap.Addr()) {
				return fmt.Errorf("%s is not a public address", address)
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       time.Minute,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type webhookWorker struct {
	river.WorkerDefaults[queue.WebhookArgs]
	e *Engine
}

// Timeout bounds one attempt; it stays under the time after which River
// takes a job for orphaned.
func (w *webhookWorker) Timeout(*river.Job[queue.WebhookArgs]) time.Duration {
	return w.e.cfg.RequestTimeout
}

// NextRetry spaces the attempts out over more than a day.
func (w *webhookWorker) NextRetry(job *river.Job[queue.WebhookArgs]) time.Time {
	b := w.e.cfg.WebhookBackoff
	i := min(max(job.Attempt-1, 0), len(b)-1)
	return time.Now().Add(b[i])
}

// Work posts one event. Every attempt sends the event's stored id and
// body, signed afresh with the owner's current secret and the time of the
// attempt; a receiver drops an id it has seen. Any answer but a 2xx is a
// failure, retried later; a redirect is not followed.
func (w *webhookWorker) Work(ctx context.Context, job *river.Job[queue.WebhookArgs]) error {
	e := w.e
	d, err := e.store.Delivery(ctx, job.Args.DeliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // the call was deleted
	}
	if err != nil {
		return err
	}
	if d.DeliveredAt != nil {
		return nil
	}
	log := e.log.With("call_id", d.CallID, "webhook_id", d.ID, "attempt", job.Attempt)
	status, err := e.postWebhook(ctx, d)
	if rerr := e.store.RecordDelivery(context.WithoutCancel(ctx), d.ID, status, errText(err), err == nil); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err != nil {
		if job.Attempt >= job.MaxAttempts {
			log.WarnContext(ctx, "webhook given up", "err", err)
			return river.JobCancel(err)
		}
		log.InfoContext(ctx, "webhook not taken; will try again", "status", status, "err", err)
		return err
	}
	log.InfoContext(ctx, "webhook delivered", "status", status)
	return nil
}

func (e *Engine) postWebhook(ctx context.Context, d *store.Delivery) (int, error) {
	if err := CheckWebhookURL(d.URL, e.cfg.WebhookAllowPrivate); err != nil {
		return 0, err
	}
	secret, err := e.store.WebhookSecret(ctx, d.Signer)
	if err != nil {
		return 0, err
	}
	signer, err := standardwebhooks.NewWebhookRaw(secret)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	signature, err := signer.Sign(d.ID, now, d.Body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Rounds-Webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, d.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, signature)
	resp, err := e.webhooks.Do(req)
	if err != nil {
		return 0, errors.New(strings.ReplaceAll(err.Error(), d.URL, "the webhook URL"))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return resp.StatusCode, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}

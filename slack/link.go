package slack

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"
)

// LinkTTL is how long a link from Slack to Rounds may be used.
const LinkTTL = 15 * time.Minute

// Link is what a link token says: the Slack user it ties to the account of
// whoever signs in and confirms, until Expires, once (Nonce).
type Link struct {
	SlackUser string    `json:"u"`
	Expires   time.Time `json:"e"`
	Nonce     string    `json:"n"`
}

// ErrLinkInvalid is a link token that is forged, damaged or too old.
var ErrLinkInvalid = errors.New("This link is not valid any more. Press the button in Slack again for a new one.")

// linkURL is the page that links slackUser to the account of whoever opens
// it and signs in: never a sign-in link itself.
func (s *Service) linkURL(slackUser string) string {
	var n [16]byte
	_, _ = rand.Read(n[:])
	l := Link{SlackUser: slackUser, Expires: s.o.Now().Add(LinkTTL).UTC().Truncate(time.Second),
		Nonce: base64.RawURLEncoding.EncodeToString(n[:])}
	return s.o.PublicURL + "/slack/link?t=" + url.QueryEscape(SignLink(s.o.LinkKey, l))
}

// SignLink makes a link token: the link in JSON and its HMAC-SHA256.
func SignLink(key []byte, l Link) string {
	body, _ := json.Marshal(l)
	p := base64.RawURLEncoding.EncodeToString(body)
	return p + "." + base64.RawURLEncoding.EncodeToString(linkMAC(key, p))
}

// ReadLink checks a link token made by SignLink and not expired at now.
// Spending its nonce, once, is the caller's (store.SpendSlackLink).
func ReadLink(key []byte, token string, now time.Time) (Link, error) {
	p, mac, ok := strings.Cut(token, ".")
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if !ok || err != nil || !hmac.Equal(got, linkMAC(key, p)) {
		return Link{}, ErrLinkInvalid
	}
	body, err := base64.RawURLEncoding.DecodeString(p)
	var l Link
	if err != nil || json.Unmarshal(body, &l) != nil || l.SlackUser == "" || l.Nonce == "" || !now.Before(l.Expires) {
		return Link{}, ErrLinkInvalid
	}
	return l, nil
}

func linkMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("rounds-slack-link:" + payload))
	return m.Sum(nil)
}

// LinkKey is the key link tokens are signed with, for the handlers.
func (s *Service) LinkKey() []byte { return s.o.LinkKey }

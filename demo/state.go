package demo

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// progress is what a tool call has gathered between rounds. It travels to the
// client and back as the requestState, signed so the client can't alter it.
type progress struct {
	Tool    string                    `json:"tool"`
	Args    string                    `json:"args"` // digest of the call's arguments
	Round   int                       `json:"round"`
	Answers map[string]map[string]any `json:"answers,omitempty"`
	Expires int64                     `json:"exp"` // Unix seconds
}

// seal encodes p as base64url(payload) + "." + base64url(HMAC-SHA256(payload)).
func (d *demo) seal(p progress) (string, error) {
	p.Expires = d.now().Add(d.ttl).Unix()
	payload, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(d.mac(payload)), nil
}

// open verifies a requestState and checks that it belongs to this call. The
// error says why the state was refused.
func (d *demo) open(state, tool, args string) (progress, error) {
	var p progress
	enc, sig, ok := strings.Cut(state, ".")
	if !ok {
		return p, errors.New("malformed")
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(enc)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return p, errors.New("malformed")
	}
	if !hmac.Equal(mac, d.mac(payload)) {
		return p, errors.New("signature does not match (tampered with or issued by another server)")
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return p, errors.New("malformed payload")
	}
	if !d.now().Before(time.Unix(p.Expires, 0)) {
		return p, errors.New("expired; call the tool again")
	}
	if p.Tool != tool {
		return p, fmt.Errorf("issued for tool %q, not %q", p.Tool, tool)
	}
	if p.Args != args {
		return p, errors.New("issued for a call with different arguments")
	}
	return p, nil
}

func (d *demo) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, d.secret)
	h.Write(payload)
	return h.Sum(nil)
}

// digest identifies a call's arguments. encoding/json writes map keys in
// sorted order, so equal arguments give equal digests.
func digest(args map[string]any) (string, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Package maillink makes and reads the links in a mail that decide from
// the mail: one per choice (yes or no, one of a few options, approve or
// decline). A link is a token of a random nonce, the choice and an
// HMAC-SHA256 over both with a key only Rounds knows; the store keeps the
// nonce's SHA-256 alone, with the call, the round and the person mailed.
// A token carries nothing of the server's (no requestState, no question)
// and nothing of Rounds' but what it signs.
package maillink

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// Kinds of decision a mail's links make.
const (
	// KindRound answers a round whose one question is a yes/no or a
	// single choice, as the round's page would.
	KindRound = "round"
	// KindApproval approves or declines a call waiting for approval.
	KindApproval = "approval"
)

// Who may decide with a mail's link (MAIL_DECISIONS).
const (
	// SignIn: the person mailed, signed in (the default).
	SignIn = "signin"
	// ByLink: whoever holds the link, signed in or not; the decision is
	// the person mailed's.
	ByLink = "link"
)

// MaxChoices is the most links one mail carries; a question with more
// options is answered on its page.
const MaxChoices = 8

const (
	version   = 1
	nonceSize = 16
	macSize   = sha256.Size
	tokenSize = 1 + nonceSize + 1 + macSize
)

// ErrInvalid is a token that was not made here, or was altered.
var ErrInvalid = errors.New("this link is not one Rounds made, or it was changed on its way")

// Signer makes and opens tokens with one key (kept in Postgres, the same
// on every instance).
type Signer struct{ key []byte }

// NewSigner returns a Signer over key (32 random bytes).
func NewSigner(key []byte) *Signer { return &Signer{key: key} }

// Mail is one mail's links: each choice's token, and the hash the store
// keeps to find them and to use them once.
type Mail struct {
	Hash   []byte
	nonce  [nonceSize]byte
	signer *Signer
}

// NewMail draws a fresh nonce for one mail.
func (s *Signer) NewMail() (*Mail, error) {
	m := &Mail{signer: s}
	if _, err := rand.Read(m.nonce[:]); err != nil {
		return nil, err
	}
	h := sha256.Sum256(m.nonce[:])
	m.Hash = h[:]
	return m, nil
}

// Token is the link's token for choice i (0 ≤ i < MaxChoices).
func (m *Mail) Token(i int) string {
	b := make([]byte, 0, tokenSize)
	b = append(b, version)
	b = append(b, m.nonce[:]...)
	b = append(b, byte(i))
	b = append(b, m.signer.mac(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Link is what a token says, once its signature is checked: which mail's
// links it is of (by the hash the store keeps) and which choice.
type Link struct {
	Hash   []byte
	Choice int
}

// Open checks a token's signature and reads it; ErrInvalid when it was
// not made with this key, or was changed.
func (s *Signer) Open(token string) (Link, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) != tokenSize || b[0] != version {
		return Link{}, ErrInvalid
	}
	body, sum := b[:tokenSize-macSize], b[tokenSize-macSize:]
	if !hmac.Equal(sum, s.mac(body)) {
		return Link{}, ErrInvalid
	}
	choice := int(body[1+nonceSize])
	if choice >= MaxChoices {
		return Link{}, ErrInvalid
	}
	h := sha256.Sum256(body[1 : 1+nonceSize])
	return Link{Hash: h[:], Choice: choice}, nil
}

func (s *Signer) mac(body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("rounds mail link\x00"))
	m.Write(body)
	return m.Sum(nil)
}

package maillink

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	s := NewSigner(bytes.Repeat([]byte{7}, 32))
	m, err := s.NewMail()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		for i := range 3 {
			l, err := s.Open(m.Token(i))
			if err != nil || l.Choice != i || !bytes.Equal(l.Hash, m.Hash) {
				t.Errorf("choice %d opens as %+v, %v", i, l, err)
			}
		}
	})
	t.Run("ErrOtherKey", func(t *testing.T) {
		other := NewSigner(bytes.Repeat([]byte{8}, 32))
		if _, err := other.Open(m.Token(0)); !errors.Is(err, ErrInvalid) {
			t.Errorf("another key's token opens: %v", err)
		}
	})
	t.Run("ErrAltered", func(t *testing.T) {
		raw, _ := base64.RawURLEncoding.DecodeString(m.Token(0))
		for i := range raw {
			b := bytes.Clone(raw)
			b[i] ^= 1
			if _, err := s.Open(base64.RawURLEncoding.EncodeToString(b)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("a token with byte %d changed opens: %v", i, err)
			}
		}
		// The choice changed from no (1) to yes (0), the signature kept.
		b := bytes.Clone(raw)
		b[1+nonceSize] = 0
		copy(b, raw[:1+nonceSize])
		raw1, _ := base64.RawURLEncoding.DecodeString(m.Token(1))
		copy(b[1+nonceSize+1:], raw1[1+nonceSize+1:])
		if _, err := s.Open(base64.RawURLEncoding.EncodeToString(b)); !errors.Is(err, ErrInvalid) {
			t.Errorf("no's signature on yes opens: %v", err)
		}
	})
	t.Run("ErrMalformed", func(t *testing.T) {
		for _, tok := range []string{"", "x", strings.Repeat("A", 67), m.Token(0) + "A", "!!" + m.Token(0)[2:]} {
			if _, err := s.Open(tok); !errors.Is(err, ErrInvalid) {
				t.Errorf("%q opens: %v", tok, err)
			}
		}
	})
	t.Run("FreshNonce", func(t *testing.T) {
		m2, _ := s.NewMail()
		if bytes.Equal(m.Hash, m2.Hash) || m.Token(0) == m2.Token(0) {
			t.Error("two mails share their links")
		}
	})
}

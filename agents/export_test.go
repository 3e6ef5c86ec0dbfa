package agents

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// sealWith seals s as seal does, whatever it says.
func sealWith(t *testing.T, d *Door, s sealed) string {
	t.Helper()
	plain, _ := json.Marshal(s)
	aead, err := d.stateAEAD()
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte("v1")))
}

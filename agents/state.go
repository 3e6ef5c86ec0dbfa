package agents

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
)

// The requestState an agent is given is Rounds' own, never the server's:
// it names the call and the round the agent is to answer, whom it was
// given to (owner, and the token or OAuth client), the method, and when it
// lapses, sealed with AES-GCM under a key every instance shares. Once the
// round is answered, the state no longer names a pending round and is
// refused.

// stateTTL bounds how long a state given to an agent is taken back; the
// round's own deadline may end it sooner.
const stateTTL = 24 * time.Hour

// sealed is what a state holds.
type sealed struct {
	Call    string `json:"c"`
	Seq     int    `json:"s"`
	Owner   string `json:"o"`
	Token   int64  `json:"t,omitempty"`
	Client  string `json:"k,omitempty"`
	Method  string `json:"m"`
	Expires int64  `json:"x"`
}

// errBadState is any state Rounds did not give this caller.
var errBadState = errors.New("the requestState is not one Rounds gave this caller")

// stateAEAD is the cipher of the door's state key.
func (d *Door) stateAEAD() (cipher.AEAD, error) {
	key := sha256.Sum256(append([]byte("rounds agents requestState\x00"), d.o.StateKey...))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal gives an agent the state of round seq of call callID.
func (d *Door) seal(q *Request, callID string, seq int) (string, error) {
	s := sealed{Call: callID, Seq: seq, Owner: q.Who.User.Name, Token: q.Who.TokenID, Client: q.Who.OAuthClient,
		Method: q.Method, Expires: time.Now().Add(stateTTL).Unix()}
	plain, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	aead, err := d.stateAEAD()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte("v1"))), nil
}

// unseal opens a state an agent sends back, and checks it was given to
// this caller, for this method, and has not lapsed.
func (d *Door) unseal(q *Request, state string) (*sealed, error) {
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		return nil, errBadState
	}
	aead, err := d.stateAEAD()
	if err != nil {
		return nil, err
	}
	if len(raw) < aead.NonceSize() {
		return nil, errBadState
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte("v1"))
	if err != nil {
		return nil, errBadState
	}
	var s sealed
	if err := json.Unmarshal(plain, &s); err != nil {
		return nil, errBadState
	}
	if s.Owner != q.Who.User.Name || s.Token != q.Who.TokenID || s.Client != q.Who.OAuthClient ||
		s.Method != q.Method || time.Now().Unix() > s.Expires {
		return nil, errBadState
	}
	return &s, nil
}

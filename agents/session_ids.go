package agents

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
)

// A 2025-11-25 session is named by an Mcp-Session-Id that Rounds makes at
// random and keeps only as its SHA-256, so that the table of sessions
// gives nobody a session to use.

// newSessionID returns a fresh Mcp-Session-Id and the hash it is stored
// by.
func newSessionID() (id, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	id = "rs_" + base64.RawURLEncoding.EncodeToString(b[:])
	return id, sessionHash(id), nil
}

// sessionHash is what a session is stored and named by in calls.agent.
func sessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// The requests Rounds sends an agent on its open tools/call (one per
// question of a round) carry ids that name the call, the round and the
// question, sealed with an HMAC over the session too, so that the agent's
// response finds its question on any instance with nothing remembered, and
// no agent can answer another session's questions by making up an id.

// askID names one question of a round asked of a session's agent.
type askID struct {
	Call string
	Seq  int
	Key  string
}

// askIDPrefix starts every sealed question id, so it is told from the
// agent's own ids at a glance.
const askIDPrefix = "rq_"

// errBadAskID is a response whose id Rounds did not make for this session.
var errBadAskID = errors.New("not a question Rounds asked in this session")

// askIDKey derives the key that seals question ids from the door's state
// key, so the two seals never share a key.
func askIDKey(stateKey []byte) []byte {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte("rounds agent question ids"))
	return m.Sum(nil)
}

// seal makes the JSON-RPC id (a string) of question a for session.
func (a askID) seal(key []byte, session string) (string, error) {
	u, err := hex.DecodeString(strings.ReplaceAll(a.Call, "-", ""))
	if err != nil || len(u) != 16 {
		return "", errors.New("a call id is a UUID")
	}
	b := make([]byte, 0, 16+4+len(a.Key)+16)
	b = append(b, u[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(a.Seq))
	b = append(b, a.Key...)
	b = append(b, askMAC(key, session, b)...)
	return askIDPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// openAskID reads a question id that seal made for session.
func openAskID(key []byte, session, id string) (askID, error) {
	rest, ok := strings.CutPrefix(id, askIDPrefix)
	if !ok {
		return askID{}, errBadAskID
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) < 16+4+16 {
		return askID{}, errBadAskID
	}
	body, mac := b[:len(b)-16], b[len(b)-16:]
	if !hmac.Equal(mac, askMAC(key, session, body)) {
		return askID{}, errBadAskID
	}
	h := hex.EncodeToString(body[:16])
	call := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	return askID{Call: call, Seq: int(binary.BigEndian.Uint32(body[16:20])), Key: string(body[20:])}, nil
}

// askMAC is the first 16 bytes of the HMAC of body, for session.
func askMAC(key []byte, session string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(session))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:16]
}

package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// UseCredentialsKey sets the 32-byte AES-256 key that encrypts the
// credentials sent to MCP servers. Call it once, at start.
func (s *Store) UseCredentialsKey(key []byte) error {
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	s.aead, err = cipher.NewGCM(block)
	return err
}

// SetServerHeader stores a header (such as Authorization) to send to a
// server, encrypted with AES-GCM. An empty name removes it.
func (s *Store) SetServerHeader(ctx context.Context, server, name, value string) error {
	s.forgetServers() // see ServerToCall
	var enc []byte
	if name != "" {
		name = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))
		if s.aead == nil {
			return errors.New("no credentials key")
		}
		nonce := make([]byte, s.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		// The server's name is bound in as additional data, so a value
		// cannot be moved to another server's row.
		enc = s.aead.Seal(nonce, nonce, []byte(value), []byte(server))
	}
	tag, err := s.pool.Exec(ctx, `update servers set header_name = $2, header_value_enc = $3, tools = null,
		tools_expires_at = null, updated_at = now() where name = $1`, server, name, enc)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("server " + server)
	}
	return nil
}

// header decrypts a server's stored header, if it has one.
func (s *Store) header(server, name string, enc []byte) (http.Header, error) {
	if name == "" || enc == nil {
		return nil, nil
	}
	if s.aead == nil || len(enc) < s.aead.NonceSize() {
		return nil, errors.New("the server's credentials cannot be read")
	}
	nonce, sealed := enc[:s.aead.NonceSize()], enc[s.aead.NonceSize():]
	value, err := s.aead.Open(nil, nonce, sealed, []byte(server))
	if err != nil {
		return nil, errors.New("the server's credentials cannot be read with this key")
	}
	return http.Header{name: {string(value)}}, nil
}

// ServerHeader returns the header to send to srv.
func (s *Store) ServerHeader(srv *Server) (http.Header, error) {
	return s.header(srv.Name, srv.HeaderName, srv.HeaderValueEnc)
}

// MCPServer is how the MCP client reaches srv: its address, its
// credentials, what Rounds declares to it (caps, with sampling and roots
// as they are set for srv) and the revision it is pinned to, if any. The
// person's connection (Token), and anything a request needs besides, are
// the caller's to add.
func (s *Store) MCPServer(srv *Server, caps mcpclient.Capabilities) (mcpclient.Server, error) {
	header, err := s.ServerHeader(srv)
	if err != nil {
		return mcpclient.Server{}, err
	}
	caps.Sampling, caps.Roots = srv.Sampling, srv.Roots
	out := mcpclient.Server{URL: srv.URL, Header: header, Capabilities: caps}
	if srv.Protocol != mcpclient.ProtocolAuto {
		out.Protocol = srv.Protocol
	}
	return out, nil
}

// MaskedHeader shows a stored header without its secret: the name and the
// value's last four characters.
func (s *Store) MaskedHeader(srv *Server) string {
	h, err := s.ServerHeader(srv)
	if err != nil || h == nil {
		return ""
	}
	v := h.Get(srv.HeaderName)
	if len(v) > 12 {
		return srv.HeaderName + ": …" + v[len(v)-4:]
	}
	return srv.HeaderName + ": …"
}

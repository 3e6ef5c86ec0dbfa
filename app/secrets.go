package app

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/mcp-rounds/rounds/authserver"
	"github.com/mcp-rounds/rounds/store"
)

// keys are the secrets an instance runs with. Those not configured are
// generated once and kept in Postgres, so every instance shares them.
type keys struct {
	session    [][]byte
	demo       string // the built-in demo server's bearer key
	demoState  []byte // signs the demo server's requestState
	agentState []byte // seals the requestState Rounds gives agents
	slackLink  []byte // signs the links that tie a Slack user to an account
	mailLinks  []byte // signs the links that decide from a mail
}

func secrets(ctx context.Context, st *store.Store, cfg Config) (keys, error) {
	var k keys
	k.session = cfg.SessionKeys
	if len(k.session) == 0 {
		secret, err := st.Secret(ctx, "session-key", 32)
		if err != nil {
			return k, err
		}
		k.session = sessionKeyPair(base64.StdEncoding.EncodeToString(secret))
	}
	if err := useCredentialsKey(ctx, st, cfg.CredentialsKey); err != nil {
		return k, err
	}
	demo, err := st.Secret(ctx, "demo-mcp-key", 32)
	if err != nil {
		return k, err
	}
	k.demo = base64.RawURLEncoding.EncodeToString(demo)
	if k.demoState, err = st.Secret(ctx, "demo-request-state", 32); err != nil {
		return k, err
	}
	if k.agentState, err = st.Secret(ctx, "agent-request-state", 32); err != nil {
		return k, err
	}
	if k.slackLink, err = st.Secret(ctx, "slack-link", 32); err != nil {
		return k, err
	}
	if k.mailLinks, err = st.Secret(ctx, "mail-link-key", 32); err != nil {
		return k, err
	}
	return k, nil
}

// useCredentialsKey has st encrypt servers' credentials with key
// (CREDENTIALS_KEY), or with the key kept in Postgres when it is nil.
func useCredentialsKey(ctx context.Context, st *store.Store, key []byte) error {
	if key == nil {
		var err error
		if key, err = st.Secret(ctx, "credentials-key", 32); err != nil {
			return err
		}
	}
	return st.UseCredentialsKey(key)
}

// firstAdmin makes an admin when there are no users at all, so a new
// installation can be signed in to. Without ADMIN_PASSWORD it picks one and
// prints it, once.
func firstAdmin(ctx context.Context, st *store.Store, password string) error {
	printIt := password == ""
	if printIt {
		var b [12]byte
		_, _ = rand.Read(b[:])
		password = base64.RawURLEncoding.EncodeToString(b[:])
	}
	created, err := st.CreateFirstAdmin(ctx, "admin", password)
	if err != nil {
		return err
	}
	if created && printIt {
		fmt.Fprintf(os.Stderr, "\n  First admin created. Sign in as \"admin\" with password: %s\n  (shown once; add people with 'web user add')\n\n", password)
	}
	return nil
}

// requireBearer guards an MCP endpoint with a bearer key.
func requireBearer(key string, next http.Handler) http.Handler {
	want := []byte("Bearer " + key)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rounds-demo"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// newAuthServer builds Rounds' OAuth authorization server for agents; its
// signing key is derived from a secret kept in Postgres like the others.
func newAuthServer(ctx context.Context, cfg Config, st *store.Store, publicURL, instance string,
	log *slog.Logger) (*authserver.Server, error) {
	seed, err := st.Secret(ctx, "oauth-signing-seed", 32)
	if err != nil {
		return nil, err
	}
	return authserver.New(authserver.Options{Store: st, PublicURL: publicURL, SigningSeed: seed, InstanceID: instance,
		MetadataAllowLoopback: cfg.ClientMetadataLoopback, MetadataRootCAs: cfg.ClientMetadataRootCAs, Log: log})
}

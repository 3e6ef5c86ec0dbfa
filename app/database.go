package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// NoDatabaseError is a start that found no Postgres to talk to. Its message is
// for a newcomer on their first run: what is missing, where it was looked
// for, and the two ways to get one.
type NoDatabaseError struct {
	addr   string // host:port that was tried
	url    string // DATABASE_URL without its password
	reason string // what the connection attempt met, in a few words
	err    error
}

func (e *NoDatabaseError) Unwrap() error { return e.err }

func (e *NoDatabaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Rounds could not reach Postgres at %s (%s).\n", e.addr, e.reason)
	fmt.Fprintf(&b, "That address is DATABASE_URL's (or its default): %s.\n\n", e.url)
	b.WriteString("Rounds keeps everything in Postgres, 15 or later. Get one either way:\n")
	b.WriteString("  - install it locally and let user postgres in from 127.0.0.1 without a password:\n")
	b.WriteString("    in pg_hba.conf, host all postgres 127.0.0.1/32 trust\n")
	b.WriteString("  - or start the one in docker-compose.yml alone: docker compose up -d db\n")
	b.WriteString("Any other Postgres works too: set DATABASE_URL to it. Rounds creates its database on first start.")
	return b.String()
}

// explainDatabase turns a failure to connect to Postgres at all into a
// NoDatabaseError; any other error (a server that answered and refused, say)
// comes back as it was.
func explainDatabase(databaseURL string, err error) error {
	var pgErr *pgconn.PgError
	var opErr *net.OpError
	if errors.As(err, &pgErr) || !errors.As(err, &opErr) {
		return err
	}
	nd := &NoDatabaseError{addr: "the address DATABASE_URL gives", url: redactedURL(databaseURL), reason: opErr.Err.Error(), err: err}
	if cfg, perr := pgx.ParseConfig(databaseURL); perr == nil {
		nd.addr = net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		nd.reason = "no such host: " + dnsErr.Name
	}
	return nd
}

// redactedURL is a database URL fit to print: without its password.
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return "set, in key=value form"
	}
	return u.Redacted()
}

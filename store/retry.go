package store

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DeferRequest records that the request of round seq could not reach the
// server and goes out again after wait, or at the end of the window
// (window after the first such failure) if that comes sooner, but never
// sooner than asked, the server's Retry-After. It returns when the next
// attempt goes out, and false when the window is over, or the server
// asked to wait past its end (or the call moved on): the caller then
// fails the call as usual. Now is the engine's time, which the window is
// measured by.
func (s *Store) DeferRequest(ctx context.Context, callID string, seq int, reason string, wait, asked, window time.Duration, now time.Time) (time.Time, bool, error) {
	var at time.Time
	err := s.pool.QueryRow(ctx, `
		update calls set retry_since = coalesce(retry_since, $7),
		       retry_at = greatest($7 + $6::interval,
		                           least($7 + $3::interval, coalesce(retry_since, $7) + $4::interval)),
		       retry_reason = $5, updated_at = now()
		where id = $1 and current_seq = $2 and status in ('queued', 'running')
		  and coalesce(retry_since, $7) + $4::interval > $7
		  and coalesce(retry_since, $7) + $4::interval >= $7 + $6::interval
		returning retry_at`, callID, seq, wait, window, reason, asked, now).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return at, err == nil, err
}

// Unavailable reports whether err means Postgres cannot be reached or is
// not taking work now (shutting down, starting up, restarting): the
// request may succeed when tried again shortly.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57": // connection exception; operator intervention (shutdown, cannot connect now)
			return pgErr.Code != "57014" // query_canceled is ours, not an outage
		case "53": // insufficient resources
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || pgconn.SafeToRetry(err) ||
		errors.Is(err, net.ErrClosed)
}

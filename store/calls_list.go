package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// CallStatuses are every status a call can have, in the order of its life.
var CallStatuses = []string{CallQueued, CallRunning, CallInputRequired, CallAuthorizationRequired, CallApprovalRequired, CallComplete, CallFailed, CallCancelled, CallExpired}

// CallsPage is one page of a person's calls, newest first.
type CallsPage struct {
	Calls []Call
	// Next is the cursor of the page after this one; empty on the last.
	Next string
}

// CallsAfter lists an owner's calls newest first, limit at a time, from
// the cursor a previous page returned (empty for the first page), keeping
// only those with one of statuses (all when none are given). The cursor
// is the last call's creation time and id, so a call started meanwhile
// neither shifts nor repeats a page.
func (s *Store) CallsAfter(ctx context.Context, owner string, statuses []string, cursor string, limit int) (*CallsPage, error) {
	at, id, err := parseCursor(cursor)
	if err != nil {
		return nil, err
	}
	if statuses == nil {
		statuses = []string{}
	}
	calls, err := readRows[Call](ctx, s, `select `+callColumns+`
		from calls c join servers s on s.id = c.server_id
		where c.owner = $1
		  and (cardinality($2::text[]) = 0 or c.status = any($2))
		  and ($3::timestamptz is null or (c.created_at, c.id) < ($3, $4::uuid))
		order by c.created_at desc, c.id desc limit $5`, owner, statuses, at, id, limit+1)
	if err != nil {
		return nil, err
	}
	page := &CallsPage{Calls: calls}
	if len(calls) > limit {
		page.Calls = calls[:limit]
		last := page.Calls[limit-1]
		page.Next = base64.RawURLEncoding.EncodeToString(
			fmt.Appendf(nil, "%s|%s", last.CreatedAt.UTC().Format(time.RFC3339Nano), last.ID))
	}
	return page, nil
}

func parseCursor(cursor string) (*time.Time, *string, error) {
	if cursor == "" {
		return nil, nil, nil
	}
	bad := &Error{Kind: ErrInvalid, Message: "The cursor is not one this API gave out."}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, nil, bad
	}
	at, id, ok := strings.Cut(string(raw), "|")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || len(id) != 36 {
		return nil, nil, bad
	}
	return &t, &id, nil
}

// CancelCall ends a call that has not finished, at its owner's request:
// a pending round is cancelled with it (a question held on a live session
// is then cancelled towards the server), a queued or running request's
// outcome is dropped when it comes back, and a task is asked to stop
// (tasks/cancel). It happens once; a finished call
// is ErrConflict. The audit entry is written in the same transaction.
func (s *Store) CancelCall(ctx context.Context, callID string, entry AuditEntry) error {
	return s.CancelCallSaying(ctx, callID, "You cancelled this call.", entry)
}

// CancelCallSaying is CancelCall with the message the call is left with,
// such as who stopped it.
func (s *Store) CancelCallSaying(ctx context.Context, callID, message string, entry AuditEntry) error {
	return s.inTx(ctx, func(tx *txn) error {
		var seq int
		var task bool
		err := tx.QueryRow(ctx, `
			update calls set status = 'cancelled', error = $2, retryable = false,
			       task_stopped_at = case when task_id is not null then now() end,
			       updated_at = now(), finished_at = now()
			where id = $1 and status in ('queued', 'running', 'input_required', 'authorization_required', 'approval_required')
			returning current_seq, task_id is not null`, callID, message).Scan(&seq, &task)
		if err == pgx.ErrNoRows {
			return conflict("This call has already ended.")
		}
		if err != nil {
			return translate(err, "call")
		}
		if _, err := tx.Exec(ctx, `update rounds set status = 'cancelled'
			where call_id = $1 and seq = $2 and status = 'pending'`, callID, seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update approvals set state = 'declined', reason = $2, ended_at = now()
			where call_id = $1 and state = 'waiting'`, callID, message); err != nil {
			return err
		}
		if task {
			// The server is asked to stop the task too; its poll goes on
			// a while, to keep a result that came all the same.
			if err := s.enqueueJobs(ctx, tx, queue.Insert{Args: queue.TaskCancelArgs{CallID: callID}}); err != nil {
				return err
			}
		}
		if err := s.callFinishedTx(ctx, tx, callID); err != nil {
			return err
		}
		return auditTx(ctx, tx, entry)
	})
}

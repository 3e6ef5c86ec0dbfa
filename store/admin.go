package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AdminServer is a server as operators see it, enabled or not.
type AdminServer struct {
	Server
	// RoundTTL is the server's own round lifetime; zero means ROUND_TTL.
	RoundTTL time.Duration `db:"-"`
	// RoundTTLMs is RoundTTL as stored, in milliseconds.
	RoundTTLMs *int64 `db:"round_ttl_ms"`
	Calls      int    `db:"calls"`
	// MaxTasks is how many tasks the server runs at once; nil means
	// DefaultMaxTasks.
	MaxTasks *int `db:"max_tasks"`
}

const adminServerColumns = serverColumns + `,
	(extract(epoch from round_ttl) * 1000)::bigint as round_ttl_ms, max_tasks,
	(select count(*) from calls c where c.server_id = servers.id) as calls`

func withTTL(srvs []AdminServer) []AdminServer {
	for i := range srvs {
		if srvs[i].RoundTTLMs != nil {
			srvs[i].RoundTTL = time.Duration(*srvs[i].RoundTTLMs) * time.Millisecond
		}
	}
	return srvs
}

// AdminServers lists every server by name, disabled ones too.
func (s *Store) AdminServers(ctx context.Context) ([]AdminServer, error) {
	srvs, err := readRows[AdminServer](ctx, s, `select `+adminServerColumns+` from servers order by name`)
	return withTTL(srvs), err
}

// AdminServer returns a server by name, enabled or not.
func (s *Store) AdminServer(ctx context.Context, name string) (*AdminServer, error) {
	rows, _ := s.pool.Query(ctx, `select `+adminServerColumns+` from servers where name = $1`, name)
	srvs, err := pgx.CollectRows(rows, pgx.RowToStructByName[AdminServer])
	if err != nil {
		return nil, err
	}
	if len(srvs) == 0 {
		return nil, notFound("server " + name)
	}
	return &withTTL(srvs)[0], nil
}

// CreateServer registers a new server; a taken name is ErrConflict.
func (s *Store) CreateServer(ctx context.Context, name, url string) (*Server, error) {
	s.forgetServers() // see ServerToCall
	rows, _ := s.pool.Query(ctx, `insert into servers (name, url) values ($1, $2) returning `+serverColumns, name, url)
	srv, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Server])
	return srv, translate(err, "server "+name)
}

// UpdateServer points a server at url and sets its round lifetime (zero for
// ROUND_TTL). A new URL drops the cached tools.
func (s *Store) UpdateServer(ctx context.Context, name, url string, roundTTL time.Duration) error {
	s.forgetServers() // see ServerToCall
	var ttlMs *int64
	if roundTTL > 0 {
		ms := roundTTL.Milliseconds()
		ttlMs = &ms
	}
	tag, err := s.pool.Exec(ctx, `
		update servers set url = $2, round_ttl = $3::bigint * interval '1 millisecond',
		       tools = case when url = $2 then tools end,
		       tools_expires_at = case when url = $2 then tools_expires_at end,
		       updated_at = now()
		where name = $1`, name, url, ttlMs)
	if err != nil {
		return translate(err, "server "+name)
	}
	if tag.RowsAffected() == 0 {
		return notFound("server " + name)
	}
	return nil
}

// SetServerEnabled enables or disables a server. A disabled server takes no
// new calls; calls already started go on.
func (s *Store) SetServerEnabled(ctx context.Context, name string, enabled bool) error {
	s.forgetServers() // see ServerToCall
	return s.execOne(ctx, "server "+name,
		`update servers set enabled = $2, updated_at = now() where name = $1`, name, enabled)
}

// ClearServerTools drops a server's cached tool catalog, so the next look
// lists the tools again.
func (s *Store) ClearServerTools(ctx context.Context, name string) error {
	s.forgetServers() // see ServerToCall
	return s.execOne(ctx, "server "+name,
		`update servers set tools = null, tools_expires_at = null, updated_at = now() where name = $1`, name)
}

// DeleteServer removes a server that no call used; one with calls can only
// be disabled, so their history stays.
func (s *Store) DeleteServer(ctx context.Context, name string) error {
	s.forgetServers() // see ServerToCall
	err := s.execOne(ctx, "server "+name, `delete from servers where name = $1`, name)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return conflict("Server %s has calls, so it cannot be removed; disable it instead.", name)
	}
	return err
}

// ServerRoundTTL returns a server's own round lifetime, or zero.
func (s *Store) ServerRoundTTL(ctx context.Context, serverID int64) (time.Duration, error) {
	var ms *int64
	err := s.pool.QueryRow(ctx, `select (extract(epoch from round_ttl) * 1000)::bigint from servers where id = $1`,
		serverID).Scan(&ms)
	if err != nil || ms == nil {
		return 0, translate(err, "server")
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// SetUserAdmin grants or takes away a user's admin rights.
func (s *Store) SetUserAdmin(ctx context.Context, name string, admin bool) error {
	defer s.authChanged(ctx)
	return s.execOne(ctx, "user "+name,
		`update users set is_admin = $2, updated_at = now() where name = $1`, name, admin)
}

// SetUserPassword sets a user's password and ends all their sessions.
func (s *Store) SetUserPassword(ctx context.Context, name, password string) error {
	h, err := hashPassword(password)
	if err != nil {
		return err
	}
	defer s.authChanged(ctx)
	return s.updateUserEndingSessions(ctx, name, `update users set password_hash = $2, updated_at = now()
		where name = $1 returning id`, name, h)
}

// updateUserEndingSessions runs update, which returns the id of the one
// user it changes, and ends that user's sessions in the same statement.
func (s *Store) updateUserEndingSessions(ctx context.Context, name, update string, args ...any) error {
	var n int
	err := s.pool.QueryRow(ctx, `with u as (`+update+`),
		ended as (delete from sessions where user_id in (select id from u))
		select count(*) from u`, args...).Scan(&n)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("user " + name)
	}
	return nil
}

// execOne runs a statement that must touch one row of what.
func (s *Store) execOne(ctx context.Context, what, sql string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound(what)
	}
	return nil
}

// CallFilter narrows the calls of everyone.
type CallFilter struct {
	Status string
	Server string
	Owner  string
	// Agent keeps the calls started by agents of this clientInfo name.
	Agent string
	// StartedAfter and StartedBefore bound when calls started; zero is open.
	StartedAfter  time.Time
	StartedBefore time.Time
	// Sort is the order: CallsNewest (the default) or CallsOldest.
	Sort string
	Page Keyset
}

// The orders of the calls of everyone.
const (
	CallsNewest = "newest"
	CallsOldest = "oldest"
)

// AdminCall is a line of the calls of everyone.
type AdminCall struct {
	ID          string     `db:"id"`
	ServerName  string     `db:"server_name"`
	Owner       string     `db:"owner"`
	Method      string     `db:"method"`
	Target      string     `db:"target"`
	Status      string     `db:"status"`
	CurrentSeq  int        `db:"current_seq"`
	Error       *string    `db:"error"`
	Retryable   bool       `db:"retryable"`
	CreatedAt   time.Time  `db:"created_at"`
	UpdatedAt   time.Time  `db:"updated_at"`
	RoundStatus *string    `db:"round_status"`
	ExpiresAt   *time.Time `db:"expires_at"`
	// AgentName is the clientInfo name of the agent that started the
	// call, if one did; RoundAsks is whom its current round asks besides
	// the assignee (Round.Asks).
	AgentName *string `db:"agent_name"`
	RoundAsks *string `db:"round_asks"`
}

// adminCallsFrom reads AdminCall rows, for a where clause to follow.
const adminCallsFrom = `
		select c.id::text as id, s.name as server_name, c.owner, c.method, c.target, c.status, c.current_seq,
		       c.error, c.retryable, c.created_at, c.updated_at, r.status as round_status, r.expires_at,
		       c.agent->>'name' as agent_name, r.asks as round_asks
		from calls c
		join servers s on s.id = c.server_id
		left join rounds r on r.call_id = c.id and r.seq = c.current_seq`

// AdminCalls lists a page of the calls of everyone, in f.Sort's order.
func (s *Store) AdminCalls(ctx context.Context, f CallFilter) ([]AdminCall, error) {
	if f.Page.Limit <= 0 {
		f.Page.Limit = 50
	}
	args := []any{f.Status, f.Server, f.Owner, nullTime(f.StartedAfter), nullTime(f.StartedBefore)}
	agent := ""
	if f.Agent != "" {
		// Written out only when asked for, so that calls_agent_name_idx
		// answers it.
		args = append(args, f.Agent)
		agent = fmt.Sprintf(" and c.agent is not null and c.agent->>'name' = $%d", len(args))
	}
	where, order, reversed := keysetSQL("created_at", f.Sort == CallsOldest, f.Page, &args)
	calls, err := readRows[AdminCall](ctx, s, adminCallsFrom+`
		where ($1 = '' or c.status = $1)
		  and ($2 = '' or s.name = $2)
		  and ($3 = '' or c.owner = $3)
		  and ($4::timestamptz is null or c.created_at >= $4)
		  and ($5::timestamptz is null or c.created_at < $5)`+agent+`
		  and `+where+` `+order, args...)
	if reversed {
		reverse(calls)
	}
	return calls, err
}

// AdminCallsByID returns the calls with the given ids, as the list shows
// them; ids that are not calls are left out.
func (s *Store) AdminCallsByID(ctx context.Context, ids []string) ([]AdminCall, error) {
	valid := ids[:0:0]
	for _, id := range ids {
		if isUUID(id) {
			valid = append(valid, id)
		}
	}
	rows, _ := s.pool.Query(ctx, adminCallsFrom+`
		where c.id = any($1::uuid[])
		order by c.created_at desc, c.id`, valid)
	return pgx.CollectRows(rows, pgx.RowToStructByName[AdminCall])
}

// Attempt outcomes.
const (
	AttemptResult        = "result"
	AttemptInputRequired = "input_required"
	AttemptError         = "error"
	AttemptTooManyRounds = "too_many_rounds"
)

// AttemptRecord is one MCP request the engine made for a call: the first
// request (Seq 0) or the retry carrying the answers to round Seq.
type AttemptRecord struct {
	ID         int64     `db:"id"`
	CallID     string    `db:"call_id"`
	Seq        int       `db:"seq"`
	Instance   string    `db:"instance"`
	StartedAt  time.Time `db:"started_at"`
	DurationMs int       `db:"duration_ms"`
	Outcome    string    `db:"outcome"`
	Error      *string   `db:"error"`
}

// RecordAttempt stores one MCP request attempt.
func (s *Store) RecordAttempt(ctx context.Context, a AttemptRecord) error {
	return recordAttemptTx(ctx, s.pool, a)
}

func recordAttemptTx(ctx context.Context, db execer, a AttemptRecord) error {
	_, err := db.Exec(ctx, insertAttempt, a.args()...)
	return err
}

const insertAttempt = `insert into attempts (call_id, seq, instance, started_at, duration_ms, outcome, error)
	values ($1, $2, $3, $4, $5, $6, $7)`

func (a AttemptRecord) args() []any {
	if a.Error != nil {
		msg := clean(*a.Error, 16<<10) // it may quote a server
		a.Error = &msg
	}
	return []any{a.CallID, a.Seq, a.Instance, a.StartedAt, a.DurationMs, a.Outcome, a.Error}
}

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Attempts lists a call's MCP request attempts in order.
func (s *Store) Attempts(ctx context.Context, callID string) ([]AttemptRecord, error) {
	rows, _ := s.pool.Query(ctx, `select id, call_id::text as call_id, seq, instance, started_at, duration_ms, outcome, error
		from attempts where call_id = $1 order by id`, callID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[AttemptRecord])
}

// EndRound ends a pending round early, as an operator: status is
// RoundExpired or RoundCancelled, and the call ends the same way, its
// message giving the operator's reason. The
// guarded update lets it happen once; a round no longer pending is
// ErrConflict. The audit entry is written in the same transaction.
func (s *Store) EndRound(ctx context.Context, callID string, seq int, status, reason string, entry AuditEntry) error {
	msg := "An administrator expired this round before it was answered."
	if status == RoundCancelled {
		msg = "An administrator cancelled this call."
	} else if status != RoundExpired {
		return &Error{Kind: ErrInvalid, Message: "A round can only be expired or cancelled."}
	}
	if reason != "" {
		msg += " The reason given: " + reason
	}
	return s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `update rounds set status = $3 where call_id = $1 and seq = $2 and status = 'pending'`,
			callID, seq, status)
		if err != nil {
			return translate(err, "round")
		}
		if tag.RowsAffected() == 0 {
			return conflict("%s", NotWaitingMessage)
		}
		if _, err := tx.Exec(ctx, `update calls set status = $3, error = $4, retryable = false,
			updated_at = now(), finished_at = now()
			where id = $1 and current_seq = $2 and status = 'input_required'`, callID, seq, status, msg); err != nil {
			return err
		}
		if err := s.callFinishedTx(ctx, tx, callID); err != nil {
			return err
		}
		return auditTx(ctx, tx, entry)
	})
}

// ExpiredRound is a round the expiry ended.
type ExpiredRound struct {
	CallID string `db:"call_id"`
	Seq    int    `db:"seq"`
	Server string `db:"server"`
	// Webhook is set when the call has a webhook, told in the same transaction.
	Webhook bool `db:"webhook"`
}

// expireBatch bounds one expiry statement.
const expireBatch = 500

// ExpireDueRounds ends every pending round past its deadline, and its call,
// but for questions held on a live session, whose holder cancels them
// towards the server at their deadline, and rounds whose plan answers them
// at the deadline (their job's, unless it is an hour late),
// writing one audit row per round in the same statement. Rounds locked by a
// concurrent answer or expiry are skipped (the next run sees them), and the
// status guard lets each round be expired exactly once however many run at
// the same time, on however many instances.
func (s *Store) ExpireDueRounds(ctx context.Context, instance string) ([]ExpiredRound, error) {
	var all []ExpiredRound
	for {
		var batch []ExpiredRound
		err := s.inTx(ctx, func(tx *txn) error {
			rows, _ := tx.Query(ctx, `
			with due as (
				update rounds r set status = 'expired'
				where r.status = 'pending' and r.expires_at <= now() and r.held_by is null
				  and (r.on_expiry = 'expire' or r.expires_at < now() - interval '1 hour')
				  and (r.call_id, r.seq) in (
					select call_id, seq from rounds
					where status = 'pending' and expires_at <= now() and held_by is null
					  and (on_expiry = 'expire' or expires_at < now() - interval '1 hour')
					order by expires_at limit $2
					for update skip locked)
				returning r.call_id, r.seq
			), ended as (
				update calls c set status = 'expired', error = $3,
				       retryable = false, updated_at = now(), finished_at = now()
				from due
				where c.id = due.call_id and c.current_seq = due.seq and c.status = 'input_required'
				returning c.id, c.webhook_url is not null as webhook
			), named as (
				select due.call_id, due.seq, s.name as server, coalesce(ended.webhook, false) as webhook
				from due join calls c on c.id = due.call_id join servers s on s.id = c.server_id
				left join ended on ended.id = due.call_id
			), logged as (
				insert into audit_log (instance, actor, action, target, detail)
				select $1, 'system', 'round.expired', call_id::text, jsonb_build_object('seq', seq, 'server', server)
				from named
			)
			select call_id::text as call_id, seq, server, webhook from named`, instance, expireBatch, RoundExpiredMessage)
			var err error
			if batch, err = pgx.CollectRows(rows, pgx.RowToStructByName[ExpiredRound]); err != nil {
				return err
			}
			for _, r := range batch {
				if r.Webhook {
					if err := s.callFinishedTx(ctx, tx, r.CallID); err != nil {
						return err
					}
				} else if err := s.slackEndedTx(ctx, tx, r.CallID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return all, err
		}
		all = append(all, batch...)
		if len(batch) < expireBatch {
			return all, nil
		}
	}
}

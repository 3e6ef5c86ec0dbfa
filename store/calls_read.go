package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Call returns a call with its server's name.
func (s *Store) Call(ctx context.Context, id string) (*Call, error) {
	rows, _ := s.pool.Query(ctx, `select `+callColumns+`
		from calls c join servers s on s.id = c.server_id where c.id = $1`, id)
	c, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
	return c, translate(err, "call")
}

// CallShown returns a call as a person is shown it: a queued call whose
// request was sent says running.
func (s *Store) CallShown(ctx context.Context, id string) (*Call, error) {
	rows, _ := s.pool.Query(ctx, `select `+callColumnsShown+`
		from calls c join servers s on s.id = c.server_id where c.id = $1`, id)
	c, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
	return c, translate(err, "call")
}

// CallAndRounds returns a call and its rounds from seq on (from its
// current round when seq is negative), read together in one round trip and
// one transaction (a batch).
func (s *Store) CallAndRounds(ctx context.Context, id string, seq int) (*Call, []Round, error) {
	from := "$2"
	if seq < 0 {
		from = "(select current_seq from calls where id = $1) and $2 < 0"
	}
	b := &pgx.Batch{}
	var call *Call
	var rounds []Round
	b.Queue(`select `+callColumnsShown+` from calls c join servers s on s.id = c.server_id where c.id = $1`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			call, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
			return err
		})
	b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 and seq >= `+from+` order by seq`, id, seq).
		Query(func(rows pgx.Rows) error {
			var err error
			rounds, err = pgx.CollectRows(rows, pgx.RowToStructByName[Round])
			return err
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, translate(err, "call")
	}
	return call, rounds, nil
}

// CallPage returns a call, all its rounds and the draft of its current
// round (nil when there is none), read together in one round trip and one
// transaction (a batch).
func (s *Store) CallPage(ctx context.Context, id string) (*Call, []Round, *Draft, error) {
	call, rounds, draft, _, err := s.callPage(ctx, id, "")
	return call, rounds, draft, err
}

// CallPageWaiting is CallPage with, in the same batch, the count of rounds
// waiting for person (as WaitingCount) that the page's navigation shows.
func (s *Store) CallPageWaiting(ctx context.Context, id, person string) (*Call, []Round, *Draft, int, error) {
	return s.callPage(ctx, id, person)
}

func (s *Store) callPage(ctx context.Context, id, person string) (*Call, []Round, *Draft, int, error) {
	b := &pgx.Batch{}
	var waiting int
	var call *Call
	var rounds []Round
	var draft *Draft
	b.Queue(`select `+callColumnsShown+` from calls c join servers s on s.id = c.server_id where c.id = $1`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			call, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Call])
			return err
		})
	b.Queue(`select `+roundColumnsNow+` from rounds where call_id = $1 order by seq`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			rounds, err = pgx.CollectRows(rows, pgx.RowToStructByName[Round])
			return err
		})
	b.Queue(`select d.form, d.updated_at from drafts d
		join calls c on c.id = d.call_id and c.current_seq = d.seq
		join rounds r on r.call_id = d.call_id and r.seq = d.seq and r.status = 'pending'
		where d.call_id = $1`, id).
		Query(func(rows pgx.Rows) error {
			var err error
			draft, err = pgx.CollectOneRow(rows, scanDraft)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
	if person != "" {
		b.Queue(waitingCount, person).QueryRow(func(row pgx.Row) error { return row.Scan(&waiting) })
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, nil, 0, translate(err, "call")
	}
	return call, rounds, draft, waiting, nil
}

// Rounds returns a call's rounds in order.
func (s *Store) Rounds(ctx context.Context, callID string) ([]Round, error) {
	rows, _ := s.pool.Query(ctx, `select `+roundColumnsNow+` from rounds where call_id = $1 order by seq`, callID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Round])
}

// RoundsFrom returns a call's rounds from seq on.
func (s *Store) RoundsFrom(ctx context.Context, callID string, seq int) ([]Round, error) {
	rows, _ := s.pool.Query(ctx, `select `+roundColumnsNow+` from rounds where call_id = $1 and seq >= $2 order by seq`, callID, seq)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Round])
}

// Calls returns an owner's most recent calls.
func (s *Store) Calls(ctx context.Context, owner string, limit int) ([]Call, error) {
	return readRows[Call](ctx, s, `select `+callColumns+`
		from calls c join servers s on s.id = c.server_id
		where c.owner = $1 order by c.created_at desc limit $2`, owner, limit)
}

// LastOutcomes says how the last round of each of the calls ended, for
// those whose last round ended: answered, declined, cancelled or expired.
func (s *Store) LastOutcomes(ctx context.Context, callIDs []string) (map[string]string, error) {
	var out map[string]string
	err := s.read(ctx, func(q reader) error {
		rows, err := q.Query(ctx, `
		select c.id::text, r.outcome from calls c
		join rounds r on r.call_id = c.id and r.seq = c.current_seq
		where c.id = any($1::uuid[]) and r.outcome is not null`, callIDs)
		if err != nil {
			return err
		}
		out = map[string]string{}
		var id, outcome string
		_, err = pgx.ForEachRow(rows, []any{&id, &outcome}, func() error {
			out[id] = outcome
			return nil
		})
		return err
	})
	return out, err
}

// InboxItem is a pending round waiting on a person: theirs, assigned to
// them, or assigned to one of their teams.
type InboxItem struct {
	CallID        string          `db:"call_id"`
	Seq           int             `db:"seq"`
	ServerName    string          `db:"server_name"`
	Method        string          `db:"method"`
	Target        string          `db:"target"`
	Title         string          `db:"title"`
	Owner         string          `db:"owner"`
	Assignee      *string         `db:"assignee"`
	InputRequests json.RawMessage `db:"input_requests"`
	CreatedAt     time.Time       `db:"created_at"`
	ExpiresAt     time.Time       `db:"expires_at"`
	// AwayFor names the person away whose round this is, when the person
	// whose inbox it is answers it as their delegate.
	AwayFor *string `db:"away_for"`
}

// inboxSQL lists the pending, unexpired rounds waiting on person $1,
// oldest deadline first, up to $2: those assigned to them or to a team of
// theirs, or to someone away whose delegate they are (a call with no
// assignee waits on its owner). A round an agent
// is asked is in nobody's inbox; one that asks the owner, only in theirs.
const inboxSQL = `
		select r.call_id::text as call_id, r.seq, s.name as server_name, c.method, c.target, c.title, c.owner, c.assignee,
		       r.input_requests, r.created_at, r.expires_at,
		       case when r.asks is null and coalesce(c.assignee, c.owner) <> $1 and coalesce(c.assignee, c.owner) in (` + awayFor + `)
		            then coalesce(c.assignee, c.owner) end as away_for
		from calls c
		join rounds r on r.call_id = c.id and r.seq = c.current_seq
		join servers s on s.id = c.server_id
		where c.status = 'input_required' and r.status = 'pending' and r.expires_at > now()
		  and ((r.asks = 'owner' and c.owner = $1)
		       or (r.asks is null and ((c.assignee is null and c.owner = any(array(select $1::text union all ` + awayFor + `)))
		       or c.assignee = any(array(select $1::text union all
		                                 select 'team:' || t.name from teams t
		                                 join team_members m on m.team_id = t.id join users u on u.id = m.user_id
		                                 where u.name = $1
		                                 union all ` + awayFor + `)))))
		order by r.expires_at limit $2`

// awayFor lists the people away whose delegate person $1 is (see
// ActingFor).
const awayFor = `select p.name from users p where p.away_delegate = $1 and p.away_until > now()
	and exists (select 1 from users d where d.name = $1 and not d.disabled)`

// SettledItem is a round that left a person's inbox lately, with how it
// ended: answered, declined, cancelled or expired.
type SettledItem struct {
	CallID     string    `db:"call_id"`
	Seq        int       `db:"seq"`
	ServerName string    `db:"server_name"`
	Target     string    `db:"target"`
	Title      string    `db:"title"`
	Outcome    string    `db:"outcome"`
	AnsweredBy *string   `db:"answered_by"`
	EndedAt    time.Time `db:"ended_at"`
}

// settledCalls is how many of a person's most recently changed calls
// settledSQL looks through.
const settledCalls = 30

// settledSQL lists the rounds that would have been in person $1's inbox
// and ended since $2, latest first, up to $3. A round's end changes its
// call, so its call is among the person's calls changed since: read from
// the $4 (settledCalls) most recently changed (each name the person
// answers for, by index), not from every round that ended lately.
const settledSQL = `
		with names as (
			select $1::text as name
			union all
			select 'team:' || t.name from teams t
			join team_members m on m.team_id = t.id join users u on u.id = m.user_id
			where u.name = $1
		), recent as (
			(select c.* from names n cross join lateral (
				select * from calls c where c.assignee = n.name and c.updated_at >= $2
				order by c.updated_at desc limit $4) c
			 union all
			 (select * from calls c where c.assignee is null and c.owner = $1 and c.updated_at >= $2
			  order by c.updated_at desc limit $4))
			order by updated_at desc limit $4
		)
		select r.call_id::text as call_id, r.seq, s.name as server_name, c.target, c.title, r.outcome, r.answered_by, r.ended_at
		from recent c
		join rounds r on r.call_id = c.id
		join servers s on s.id = c.server_id
		where r.outcome is not null and r.ended_at >= $2
		order by r.ended_at desc, r.call_id, r.seq desc limit $3`

// InboxPage reads what the inbox page shows, in one round trip: the
// rounds waiting on the person (up to limit), the rounds that left their
// inbox since (up to settledLimit), and the navigation's count
// (WaitingCount).
func (s *Store) InboxPage(ctx context.Context, person string, limit int, since time.Time, settledLimit int) (
	items []InboxItem, settled []SettledItem, waiting int, err error) {
	err = s.read(ctx, func(q reader) error {
		b := &pgx.Batch{}
		b.Queue(inboxSQL, person, limit).Query(func(rows pgx.Rows) error {
			items, err = pgx.CollectRows(rows, pgx.RowToStructByName[InboxItem])
			return err
		})
		b.Queue(settledSQL, person, since, settledLimit, settledCalls).Query(func(rows pgx.Rows) error {
			settled, err = pgx.CollectRows(rows, pgx.RowToStructByName[SettledItem])
			return err
		})
		b.Queue(waitingCount, person).QueryRow(func(row pgx.Row) error { return row.Scan(&waiting) })
		return q.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, nil, 0, err
	}
	return items, settled, waiting, nil
}

// WaitingCount counts an owner's rounds waiting for an answer, as the inbox
// lists them.
func (s *Store) WaitingCount(ctx context.Context, owner string) (int, error) {
	var n int
	err := s.read(ctx, func(q reader) error { return q.QueryRow(ctx, waitingCount, owner).Scan(&n) })
	return n, err
}

const waitingCount = `
	select count(*) from calls c
	join rounds r on r.call_id = c.id and r.seq = c.current_seq
	where c.owner = $1 and c.status = 'input_required' and r.status = 'pending' and r.expires_at > now()
	  and r.asks is distinct from 'agent'`

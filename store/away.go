package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Away is a person's absence: until when, and who answers their rounds
// meanwhile.
type Away struct {
	Until    time.Time `db:"away_until"`
	Delegate string    `db:"away_delegate"`
}

// Sentences of the away setting, shown to people.
const (
	AwayPastMessage     = "Choose a time in the future for your return."
	AwaySelfMessage     = "Choose someone other than yourself to answer for you."
	AwayDelegateMessage = "There is no one by that name who may answer for you. Name a person whose account is active."
)

// ActingFor says on whose behalf actor may act for a round or an approval
// asked of the people in asked, at time at: actor itself when asked names
// them; else the first person in asked who is away at at with actor as
// their delegate, actor's account being active. Delegation is one step: a
// delegate's own delegate is not used. ok is false when actor may not act.
// It says nothing of whose request it is: a delegate who is the caller
// (the call's owner) is still refused approving it, a rule of approvals'
// own.
func (s *Store) ActingFor(ctx context.Context, actor string, asked []string, at time.Time) (forWhom string, ok bool, err error) {
	return actingFor(ctx, s.pool, actor, asked, at)
}

// ActingForTx is ActingFor read in tx, beside what the transaction decides.
func (s *Store) ActingForTx(ctx context.Context, tx pgx.Tx, actor string, asked []string, at time.Time) (forWhom string, ok bool, err error) {
	return actingFor(ctx, tx, actor, asked, at)
}

func actingFor(ctx context.Context, db querier, actor string, asked []string, at time.Time) (string, bool, error) {
	for _, p := range asked {
		if p == actor {
			return actor, true, nil
		}
	}
	var forWhom string
	err := db.QueryRow(ctx, `select p.name from users p join users d on d.name = p.away_delegate
		where p.name = any($2::text[]) and p.away_until > $3 and d.name = $1 and not d.disabled
		order by array_position($2::text[], p.name) limit 1`, actor, asked, at).Scan(&forWhom)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return forWhom, true, nil
}

// AwayOf returns when person is away until and their delegate; nil when
// they are not away now.
func (s *Store) AwayOf(ctx context.Context, person string) (*Away, error) {
	rows, _ := s.pool.Query(ctx, `select away_until, away_delegate from users
		where name = $1 and away_until > now() and away_delegate is not null`, person)
	a, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Away])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return a, err
}

// SetAway makes person away until until, their rounds going to delegate
// meanwhile, and records it. The time must be in the future, and the
// delegate an active account other than person's own.
func (s *Store) SetAway(ctx context.Context, person string, a Away, audit AuditEntry) error {
	switch {
	case !a.Until.After(time.Now()):
		return &Error{Kind: ErrInvalid, Message: AwayPastMessage}
	case a.Delegate == person:
		return &Error{Kind: ErrInvalid, Message: AwaySelfMessage}
	}
	return s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `update users set away_until = $2, away_delegate = d.name, updated_at = now()
			from users d where users.name = $1 and d.name = $3 and not d.disabled`, person, a.Until, a.Delegate)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return &Error{Kind: ErrInvalid, Message: AwayDelegateMessage}
		}
		return auditTx(ctx, tx, audit)
	})
}

// ClearAway makes person back: their rounds are theirs again. It records
// the return only when they were away.
func (s *Store) ClearAway(ctx context.Context, person string, audit AuditEntry) error {
	return s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `update users set away_until = null, away_delegate = null, updated_at = now()
			where name = $1 and away_delegate is not null`, person)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return auditTx(ctx, tx, audit)
	})
}

// delegatingSQL names the person away whose delegate $2 is, when call $1's
// rounds are theirs (its assignee, or its owner when it has none); ”
// otherwise. It reads as ActingFor does, at the database's now.
const delegatingSQL = `select coalesce((select p.name from calls c
	join users p on p.name = coalesce(c.assignee, c.owner) join users d on d.name = p.away_delegate
	where c.id = $1 and d.name = $2 and not d.disabled and p.away_until > now()), '')`

// AskedOf is whom call's rounds are asked of: its assignee (a person, or
// team:NAME), or its owner when it has none.
func AskedOf(call *Call) string {
	if call.Assignee != nil {
		return *call.Assignee
	}
	return call.Owner
}

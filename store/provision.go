package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ProvisionedUser is a person an identity provider manages.
type ProvisionedUser struct {
	ID         int64           `db:"id"`
	Name       string          `db:"name"` // the account's name in Rounds
	UserName   string          `db:"user_name"`
	ExternalID *string         `db:"external_id"`
	Email      string          `db:"email"`
	Active     bool            `db:"active"`
	Attributes json.RawMessage `db:"attributes"`
	Created    time.Time       `db:"created_at"`
	Updated    time.Time       `db:"updated_at"`
}

const provisionedColumns = `u.id, u.name, p.user_name, p.external_id, u.email, not u.disabled as active, p.attributes,
	p.created_at, p.updated_at`

// MaxProvisionAttributes caps what is kept of what a provider says of one
// person, as JSON.
const MaxProvisionAttributes = 64 << 10

// Provisioner is who makes a provisioning change, for the audit log: the
// instance that served it and the name of the token the provider sent.
type Provisioner struct {
	Instance string
	Token    string
}

// actor names the token in the audit log: "scim:okta".
func (p Provisioner) actor() string { return "scim:" + p.Token }

// ProvisionUser is what a provider sends of a person.
type ProvisionUser struct {
	UserName   string
	ExternalID string
	Email      string
	// Active is nil when the provider did not say: a new person is
	// active, a known one stays as they are.
	Active *bool
	// Attributes are kept, to give back; the provider's secrets are taken
	// out before (see provision).
	Attributes json.RawMessage
}

func (p ProvisionUser) check() error {
	if len(p.Attributes) > MaxProvisionAttributes {
		return &Error{Kind: ErrInvalid, Message: "What the provider sent of this person is over 64 KiB; send less."}
	}
	return nil
}

// provisionConflict words a uniqueness the provider's request broke.
func provisionConflict(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		if pgErr.ConstraintName == "scim_users_external_id_key" {
			return conflict("Another person provisioned here has this externalId.")
		}
		return conflict("A person with this userName is already provisioned.")
	}
	return err
}

// CreateProvisionedUser makes the account of a person a provider
// provisions, named after their userName made fit and unique.
func (s *Store) CreateProvisionedUser(ctx context.Context, p ProvisionUser, by Provisioner) (*ProvisionedUser, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	email, err := CheckEmail(p.Email)
	if err != nil {
		email = ""
	}
	active := p.Active == nil || *p.Active
	var id int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := userNameFreeTx(ctx, tx, p.UserName, 0); err != nil {
			return err
		}
		if id, err = insertUserNamedTx(ctx, tx, p.UserName, email); err != nil {
			return err
		}
		// A provider's address is trusted to find the person in Slack.
		if _, err := tx.Exec(ctx, `update users set disabled = not $2, email_trusted = email <> '' where id = $1`, id, active); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `insert into scim_users (user_id, user_name, external_id, attributes) values ($1, $2, $3, $4)`,
			id, p.UserName, orNil(p.ExternalID), p.Attributes); err != nil {
			return provisionConflict(err)
		}
		return auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "user.provisioned",
			Target: p.UserName, Detail: map[string]any{"active": active}})
	})
	if err != nil {
		return nil, err
	}
	return s.ProvisionedUser(ctx, id)
}

// userNameFreeTx refuses a userName another provisioned person than id
// has, in any case.
func userNameFreeTx(ctx context.Context, tx pgx.Tx, userName string, id int64) error {
	var taken bool
	if err := tx.QueryRow(ctx, `select exists (select 1 from scim_users where lower(user_name) = lower($1) and user_id <> $2)`,
		userName, id).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return conflict("A person with this userName is already provisioned.")
	}
	return nil
}

// insertUserNamedTx adds an account without a password under name made
// fit for a name and unique with a number.
func insertUserNamedTx(ctx context.Context, tx pgx.Tx, name, email string) (int64, error) {
	base := SignOnName(name)
	for n := 1; n < 1000; n++ {
		candidate := base
		if n > 1 {
			suffix := "-" + strconv.Itoa(n)
			candidate = strings.TrimRight(base[:min(len(base), 64-len(suffix))], ".-_@") + suffix
		}
		if ReservedName(candidate) {
			continue // "agent-2", as for a name taken
		}
		var id int64
		err := tx.QueryRow(ctx, `insert into users (name, email) values ($1, $2)
			on conflict (name) do nothing returning id`, candidate, email).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		return id, err
	}
	return 0, conflict("No free name was found for %s.", quote(base))
}

// ProvisionedUser returns a provisioned person by their account's id.
func (s *Store) ProvisionedUser(ctx context.Context, id int64) (*ProvisionedUser, error) {
	rows, _ := s.pool.Query(ctx, `select `+provisionedColumns+` from scim_users p join users u on u.id = p.user_id
		where u.id = $1`, id)
	u, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[ProvisionedUser])
	return u, translate(err, "user")
}

// ProvisionedUserQuery picks provisioned people: those with this userName
// (in any case) and this externalId, each when given, and of them a page
// by id.
type ProvisionedUserQuery struct {
	UserName   string
	ExternalID string
	Offset     int
	Limit      int // -1: every one
}

// where is the query's condition in SQL, on scim_users as p, with its
// arguments. Only the conditions given are written, so that Postgres
// plans each with its index.
func (q ProvisionedUserQuery) where() (string, []any) {
	var conds []string
	var args []any
	if q.UserName != "" {
		args = append(args, q.UserName)
		conds = append(conds, "lower(p.user_name) = lower($"+strconv.Itoa(len(args))+")")
	}
	if q.ExternalID != "" {
		args = append(args, q.ExternalID)
		conds = append(conds, "p.external_id = $"+strconv.Itoa(len(args)))
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " and "), args
}

// ProvisionedUsers returns the page of provisioned people q picks, and how
// many it picks in all. A lookup by userName or externalId reads the rows
// it finds through their index, not every person.
func (s *Store) ProvisionedUsers(ctx context.Context, q ProvisionedUserQuery) ([]ProvisionedUser, int, error) {
	where, args := q.where()
	var total int
	if err := s.pool.QueryRow(ctx, `select count(*) from scim_users p where `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	var limit *int
	if q.Limit >= 0 {
		limit = &q.Limit
	}
	n := len(args)
	rows, _ := s.pool.Query(ctx, `select `+provisionedColumns+` from scim_users p join users u on u.id = p.user_id
		where `+where+` order by u.id offset $`+strconv.Itoa(n+1)+` limit $`+strconv.Itoa(n+2),
		append(args, max(q.Offset, 0), limit)...)
	users, err := pgx.CollectRows(rows, pgx.RowToStructByName[ProvisionedUser])
	return users, total, err
}

// UpdateProvisionedUser replaces what the provider said of a person. A
// person made inactive is deactivated (see deactivateTx) in the same
// transaction; made active again, they may sign in again, unless they
// were disabled here (on the users page or the command line): that holds
// until an admin enables them, and the refusal is in the audit log. A
// change that does not say whether the person is active leaves it.
func (s *Store) UpdateProvisionedUser(ctx context.Context, id int64, p ProvisionUser, by Provisioner) (*ProvisionedUser, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	email, err := CheckEmail(p.Email)
	if err != nil {
		email = ""
	}
	var changed bool
	err = s.inTx(ctx, func(tx *txn) error {
		if err := userNameFreeTx(ctx, tx, p.UserName, id); err != nil {
			return err
		}
		// The account is locked first, so an admin's disable made meanwhile
		// is seen, not undone.
		var wasActive, disabledHere bool
		var name string
		err := tx.QueryRow(ctx, `select not u.disabled, u.disabled_here, u.name from users u
			where u.id = $1 and exists (select 1 from scim_users p where p.user_id = u.id)
			for update of u`, id).Scan(&wasActive, &disabledHere, &name)
		if err != nil {
			return translate(err, "user")
		}
		if _, err := tx.Exec(ctx, `update scim_users set user_name = $2, external_id = $3, attributes = $4, updated_at = now()
			where user_id = $1`, id, p.UserName, orNil(p.ExternalID), p.Attributes); err != nil {
			return provisionConflict(err)
		}
		if _, err := tx.Exec(ctx, `update users set email = case when $2 <> '' then $2 else email end,
			email_trusted = case when $2 <> '' then true else email_trusted end, updated_at = now()
			where id = $1`, id, email); err != nil {
			return err
		}
		switch {
		case p.Active == nil || *p.Active == wasActive:
			return nil
		case !*p.Active:
			changed = true
			return s.deactivateTx(ctx, tx, id, by)
		case disabledHere:
			return auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "user.reactivation_refused",
				Target: name, Detail: map[string]any{"why": "disabled here: an admin enables them on the users page"}})
		}
		changed = true
		if _, err := tx.Exec(ctx, `update users set disabled = false, updated_at = now() where id = $1`, id); err != nil {
			return err
		}
		return auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "user.reactivated", Target: name})
	})
	if err != nil {
		return nil, err
	}
	if changed {
		s.authChanged(ctx)
	}
	return s.ProvisionedUser(ctx, id)
}

// DeleteProvisionedUser deactivates a person the provider deleted and
// forgets what it said of them. The account stays, disabled, so that the
// calls and answers that name it keep their meaning.
func (s *Store) DeleteProvisionedUser(ctx context.Context, id int64, by Provisioner) error {
	err := s.inTx(ctx, func(tx *txn) error {
		var disabled bool
		err := tx.QueryRow(ctx, `with p as (delete from scim_users where user_id = $1 returning user_id)
			select u.disabled from p join users u on u.id = p.user_id`, id).Scan(&disabled)
		if err != nil {
			return translate(err, "user")
		}
		if !disabled {
			return s.deactivateTx(ctx, tx, id, by)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.authChanged(ctx)
	return nil
}

// AdminsTeam is the team of the admins' queue: rounds that wait for a
// person who was deactivated, and were not given them through a team, go
// to it.
const AdminsTeam = "admins"

// deactivateTx disables an account and, in the same transaction, ends its
// sessions, revokes its API tokens, and hands the rounds waiting for it to
// the team it was given them through (the one a round escalated from),
// else to the admins' queue, mailing the people they now wait for, with an
// audit entry for each. The caller announces the change (authChanged)
// after the commit, so every instance refuses the account at once.
func (s *Store) deactivateTx(ctx context.Context, tx *txn, id int64, by Provisioner) error {
	var name string
	if err := tx.QueryRow(ctx, `update users set disabled = true, updated_at = now() where id = $1 returning name`, id).
		Scan(&name); err != nil {
		return translate(err, "user")
	}
	if _, err := tx.Exec(ctx, `delete from sessions where user_id = $1`, id); err != nil {
		return err
	}
	tokens, err := tx.Exec(ctx, `update api_tokens set revoked_at = now() where user_id = $1 and revoked_at is null`, id)
	if err != nil {
		return err
	}
	type waiting struct {
		CallID   string    `db:"call_id"`
		Seq      int       `db:"seq"`
		Created  time.Time `db:"created_at"`
		Expires  time.Time `db:"expires_at"`
		FromTeam *string   `db:"from_team"`
	}
	rows, _ := tx.Query(ctx, `
		select c.id::text as call_id, r.seq, r.created_at, r.expires_at,
		       case when r.escalated_from like 'team:%' and exists (select 1 from teams t where 'team:' || t.name = r.escalated_from)
		            then r.escalated_from end as from_team
		from calls c join rounds r on r.call_id = c.id and r.seq = c.current_seq
		where c.assignee = $1 and c.status = 'input_required' and r.status = 'pending'
		for update of c`, name)
	calls, err := pgx.CollectRows(rows, pgx.RowToStructByName[waiting])
	if err != nil {
		return err
	}
	for _, w := range calls {
		to := TeamPrefix + AdminsTeam
		if w.FromTeam != nil {
			to = *w.FromTeam
		} else if err := ensureAdminsTeamTx(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update calls set assignee = $2, updated_at = now() where id = $1`, w.CallID, to); err != nil {
			return err
		}
		if s.reach.Mail {
			if err := s.mailRoundTx(ctx, tx, w.CallID, w.Seq, time.Now(), w.Expires); err != nil {
				return err
			}
		}
		if err := auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "call.handed_over",
			Target: w.CallID, Detail: map[string]any{"seq": w.Seq, "from": name, "to": to, "why": "deactivated"}}); err != nil {
			return err
		}
	}
	return auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "user.deactivated", Target: name,
		Detail: map[string]any{"tokens_revoked": tokens.RowsAffected(), "calls_handed_over": len(calls)}})
}

// ensureAdminsTeamTx makes the admins' queue when it is first needed, with
// every admin of the moment in it (admins see every call in any case).
func ensureAdminsTeamTx(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `insert into teams (name) values ($1) on conflict (name) do nothing`, AdminsTeam); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `insert into team_members (team_id, user_id)
		select t.id, u.id from teams t, users u where t.name = $1 and u.is_admin and not u.disabled
		on conflict do nothing`, AdminsTeam)
	return err
}

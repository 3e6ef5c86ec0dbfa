package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CreateProvisionToken makes a bearer token an identity provider uses to
// provision people and groups (SCIM), and returns it; it is stored only as
// a hash.
func (s *Store) CreateProvisionToken(ctx context.Context, name string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	secret := "scim_" + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	_, err := s.pool.Exec(ctx, `insert into scim_tokens (name, hash) values ($1, $2)`, name, sum[:])
	return secret, err
}

// ProvisionTokenValid reports whether secret is an unrevoked provisioning
// token.
func (s *Store) ProvisionTokenValid(ctx context.Context, secret string) (bool, error) {
	sum := sha256.Sum256([]byte(secret))
	var ok bool
	err := s.pool.QueryRow(ctx, `select exists (select 1 from scim_tokens where hash = $1 and revoked_at is null)`, sum[:]).Scan(&ok)
	return ok, err
}

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

// ProvisionUser is what a provider sends of a person.
type ProvisionUser struct {
	UserName   string
	ExternalID string
	Email      string
	Active     bool
	// Attributes are kept as sent, to give back.
	Attributes json.RawMessage
}

// CreateProvisionedUser makes the account of a person a provider
// provisions, named after their userName made fit and unique.
func (s *Store) CreateProvisionedUser(ctx context.Context, p ProvisionUser, instance string) (*ProvisionedUser, error) {
	email, err := CheckEmail(p.Email)
	if err != nil {
		email = ""
	}
	var id int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var taken bool
		if err := tx.QueryRow(ctx, `select exists (select 1 from scim_users where lower(user_name) = lower($1))`,
			p.UserName).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return &Error{Kind: ErrConflict, Message: "A person with this userName is already provisioned."}
		}
		if id, err = insertUserNamedTx(ctx, tx, p.UserName, email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update users set disabled = not $2 where id = $1`, id, p.Active); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `insert into scim_users (user_id, user_name, external_id, attributes) values ($1, $2, $3, $4)`,
			id, p.UserName, orNil(p.ExternalID), p.Attributes); err != nil {
			return translate(err, "user "+p.UserName)
		}
		return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "provisioning", Action: "user.provisioned",
			Target: p.UserName, Detail: map[string]any{"active": p.Active}})
	})
	if err != nil {
		return nil, err
	}
	return s.ProvisionedUser(ctx, id)
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

// ProvisionedUsers lists every provisioned person, by id.
func (s *Store) ProvisionedUsers(ctx context.Context) ([]ProvisionedUser, error) {
	rows, _ := s.pool.Query(ctx, `select `+provisionedColumns+` from scim_users p join users u on u.id = p.user_id
		order by u.id`)
	return pgx.CollectRows(rows, pgx.RowToStructByName[ProvisionedUser])
}

// UpdateProvisionedUser replaces what the provider said of a person. A
// person made inactive is deactivated (see DeactivateUser) in the same
// transaction; made active again, they may sign in again.
func (s *Store) UpdateProvisionedUser(ctx context.Context, id int64, p ProvisionUser, instance string) (*ProvisionedUser, error) {
	email, err := CheckEmail(p.Email)
	if err != nil {
		email = ""
	}
	var changed bool
	err = s.inTx(ctx, func(tx *txn) error {
		var wasActive bool
		err := tx.QueryRow(ctx, `update scim_users p set user_name = $2, external_id = $3, attributes = $4, updated_at = now()
			from users u where p.user_id = $1 and u.id = p.user_id
			returning not u.disabled`, id, p.UserName, orNil(p.ExternalID), p.Attributes).Scan(&wasActive)
		if err != nil {
			return translate(err, "user")
		}
		if _, err := tx.Exec(ctx, `update users set email = case when $2 <> '' then $2 else email end, updated_at = now()
			where id = $1`, id, email); err != nil {
			return err
		}
		switch {
		case wasActive && !p.Active:
			changed = true
			return s.deactivateTx(ctx, tx, id, instance)
		case !wasActive && p.Active:
			changed = true
			if _, err := tx.Exec(ctx, `update users set disabled = false, updated_at = now() where id = $1`, id); err != nil {
				return err
			}
			return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "provisioning", Action: "user.reactivated",
				Target: p.UserName})
		}
		return nil
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
func (s *Store) DeleteProvisionedUser(ctx context.Context, id int64, instance string) error {
	err := s.inTx(ctx, func(tx *txn) error {
		var disabled bool
		err := tx.QueryRow(ctx, `with p as (delete from scim_users where user_id = $1 returning user_id)
			select u.disabled from p join users u on u.id = p.user_id`, id).Scan(&disabled)
		if err != nil {
			return translate(err, "user")
		}
		if !disabled {
			return s.deactivateTx(ctx, tx, id, instance)
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
func (s *Store) deactivateTx(ctx context.Context, tx *txn, id int64, instance string) error {
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
		if err := auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "provisioning", Action: "call.handed_over",
			Target: w.CallID, Detail: map[string]any{"seq": w.Seq, "from": name, "to": to, "why": "deactivated"}}); err != nil {
			return err
		}
	}
	return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "provisioning", Action: "user.deactivated", Target: name,
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

// ProvisionedGroup is a group a provider manages: a team.
type ProvisionedGroup struct {
	ID          int64     `db:"id"`
	Team        string    `db:"team"`
	DisplayName string    `db:"display_name"`
	ExternalID  *string   `db:"external_id"`
	Members     []Member  `db:"-"`
	Created     time.Time `db:"created_at"`
	Updated     time.Time `db:"updated_at"`
}

// Member is a member of a provisioned group.
type Member struct {
	ID   int64
	Name string
}

// CreateProvisionedGroup makes the team of a group a provider provisions,
// named after its displayName made fit for a team, with its members.
func (s *Store) CreateProvisionedGroup(ctx context.Context, displayName, externalID string, members []int64, instance string) (*ProvisionedGroup, error) {
	team := teamNameFor(displayName)
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `insert into teams (name) values ($1) on conflict (name) do nothing returning id`, team).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			// A team made by hand with this name becomes the group's,
			// unless another group has it.
			if err := tx.QueryRow(ctx, `select id from teams where name = $1`, team).Scan(&id); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `insert into scim_groups (team_id, display_name, external_id) values ($1, $2, $3)`,
			id, displayName, orNil(externalID)); err != nil {
			return translate(err, "group "+displayName)
		}
		if err := setMembersTx(ctx, tx, id, members, true); err != nil {
			return err
		}
		return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "provisioning", Action: "team.provisioned",
			Target: team, Detail: map[string]any{"members": len(members)}})
	})
	if err != nil {
		return nil, err
	}
	return s.ProvisionedGroup(ctx, id)
}

var notInTeam = strings.NewReplacer("@", "-")

// teamNameFor makes a group's display name fit for a team's name.
func teamNameFor(displayName string) string {
	name := notInTeam.Replace(SignOnName(displayName))
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// setMembersTx makes members the group's members (replace), or adds them.
func setMembersTx(ctx context.Context, tx pgx.Tx, teamID int64, members []int64, replace bool) error {
	if members == nil {
		members = []int64{} // "= any(null)" would match nothing
	}
	if replace {
		if _, err := tx.Exec(ctx, `delete from team_members where team_id = $1 and not (user_id = any($2))`, teamID, members); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `insert into team_members (team_id, user_id)
		select $1, u.id from users u where u.id = any($2) on conflict (team_id, user_id) do update set by_sign_on = false`, teamID, members)
	return err
}

// ProvisionedGroup returns a provisioned group by its team's id.
func (s *Store) ProvisionedGroup(ctx context.Context, id int64) (*ProvisionedGroup, error) {
	groups, err := s.provisionedGroups(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, notFound("group")
	}
	return &groups[0], nil
}

// ProvisionedGroups lists every provisioned group, by id.
func (s *Store) ProvisionedGroups(ctx context.Context) ([]ProvisionedGroup, error) {
	return s.provisionedGroups(ctx, 0)
}

func (s *Store) provisionedGroups(ctx context.Context, id int64) ([]ProvisionedGroup, error) {
	rows, _ := s.pool.Query(ctx, `select t.id, t.name as team, g.display_name, g.external_id, g.created_at, g.updated_at
		from scim_groups g join teams t on t.id = g.team_id where $1 = 0 or t.id = $1 order by t.id`, id)
	groups, err := pgx.CollectRows(rows, pgx.RowToStructByName[ProvisionedGroup])
	if err != nil {
		return nil, err
	}
	for i := range groups {
		rows, _ := s.pool.Query(ctx, `select u.id, u.name from team_members m join users u on u.id = m.user_id
			where m.team_id = $1 order by u.id`, groups[i].ID)
		var m Member
		if _, err := pgx.ForEachRow(rows, []any{&m.ID, &m.Name}, func() error {
			groups[i].Members = append(groups[i].Members, m)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// GroupChange is what a provider changes of a group: a new display name
// (empty: unchanged), the members to add and to remove, or, with Replace,
// the whole list.
type GroupChange struct {
	DisplayName string
	Add, Remove []int64
	Replace     bool
	Members     []int64
}

// ChangeProvisionedGroup changes a group's name and members.
func (s *Store) ChangeProvisionedGroup(ctx context.Context, id int64, ch GroupChange, instance string) (*ProvisionedGroup, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `update scim_groups set display_name = coalesce(nullif($2, ''), display_name), updated_at = now()
			where team_id = $1`, id, ch.DisplayName)
		if err != nil {
			return translate(err, "group")
		}
		if tag.RowsAffected() == 0 {
			return notFound("group")
		}
		if ch.Replace {
			if err := setMembersTx(ctx, tx, id, ch.Members, true); err != nil {
				return err
			}
		}
		if len(ch.Add) > 0 {
			if err := setMembersTx(ctx, tx, id, ch.Add, false); err != nil {
				return err
			}
		}
		if len(ch.Remove) > 0 {
			if _, err := tx.Exec(ctx, `delete from team_members where team_id = $1 and user_id = any($2)`, id, ch.Remove); err != nil {
				return err
			}
		}
		return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "provisioning", Action: "team.members.changed",
			Target: strconv.FormatInt(id, 10), Detail: map[string]any{"added": len(ch.Add), "removed": len(ch.Remove), "replaced": ch.Replace}})
	})
	if err != nil {
		return nil, err
	}
	return s.ProvisionedGroup(ctx, id)
}

// DeleteProvisionedGroup removes a provisioned group's team.
func (s *Store) DeleteProvisionedGroup(ctx context.Context, id int64, instance string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `delete from teams t using scim_groups g where g.team_id = t.id and t.id = $1 returning t.name`, id).Scan(&name)
		if err != nil {
			return translate(err, "group")
		}
		return auditTx(ctx, tx, AuditEntry{Instance: instance, Actor: "provisioning", Action: "team.deprovisioned", Target: name})
	})
}

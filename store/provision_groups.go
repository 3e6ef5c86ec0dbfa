package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

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
// named after its displayName made fit for a team, with its members, who
// must be people it provisioned. A provider makes teams of its own only:
// a name a team made in Rounds has (in any case) is refused, and so is
// admins, the admins' queue.
func (s *Store) CreateProvisionedGroup(ctx context.Context, displayName, externalID string, members []int64, by Provisioner) (*ProvisionedGroup, error) {
	team := teamNameFor(displayName)
	if strings.EqualFold(team, AdminsTeam) {
		return nil, conflict("The team %s is the admins' queue, kept by Rounds; give the group another name.", quote(team))
	}
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var taken, byGroup bool
		if err := tx.QueryRow(ctx, `select exists (select 1 from teams where lower(name) = lower($1)),
			exists (select 1 from teams t join scim_groups g on g.team_id = t.id where lower(t.name) = lower($1))`,
			team).Scan(&taken, &byGroup); err != nil {
			return err
		}
		switch {
		case byGroup:
			return conflict("Another group has the team %s; give this group another name.", quote(team))
		case taken:
			return conflict("A team named %s was made in Rounds, and a provider may not take it over; give the group another name.", quote(team))
		}
		err := tx.QueryRow(ctx, `insert into teams (name) values ($1) on conflict (name) do nothing returning id`, team).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return conflict("A team named %s was made in Rounds, and a provider may not take it over; give the group another name.", quote(team))
		} else if err != nil {
			return translate(err, "group "+quote(displayName))
		}
		if _, err := tx.Exec(ctx, `insert into scim_groups (team_id, display_name, external_id) values ($1, $2, $3)`,
			id, displayName, orNil(externalID)); err != nil {
			return translate(err, "A group named "+quote(displayName))
		}
		if err := setMembersTx(ctx, tx, id, members, true); err != nil {
			return err
		}
		return auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "team.provisioned",
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
// Every member must be a person the provider provisioned: a group may not
// bring into a team an account made in Rounds.
func setMembersTx(ctx context.Context, tx pgx.Tx, teamID int64, members []int64, replace bool) error {
	if members == nil {
		members = []int64{} // "= any(null)" would match nothing
	}
	var stranger *int64
	if err := tx.QueryRow(ctx, `select min(m) from unnest($1::bigint[]) m
		where not exists (select 1 from scim_users p where p.user_id = m)`, members).Scan(&stranger); err != nil {
		return err
	}
	if stranger != nil {
		return &Error{Kind: ErrInvalid, Message: fmt.Sprintf("Member %d is not a person provisioned here.", *stranger)}
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

// ChangeProvisionedGroup changes a group's name and members. Only a team
// the provider made is its group: a team made in Rounds is not found.
func (s *Store) ChangeProvisionedGroup(ctx context.Context, id int64, ch GroupChange, by Provisioner) (*ProvisionedGroup, error) {
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
		return auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "team.members.changed",
			Target: strconv.FormatInt(id, 10), Detail: map[string]any{"added": len(ch.Add), "removed": len(ch.Remove), "replaced": ch.Replace}})
	})
	if err != nil {
		return nil, err
	}
	return s.ProvisionedGroup(ctx, id)
}

// DeleteProvisionedGroup removes a provisioned group's team; a team made
// in Rounds is not found.
func (s *Store) DeleteProvisionedGroup(ctx context.Context, id int64, by Provisioner) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `delete from teams t using scim_groups g where g.team_id = t.id and t.id = $1 returning t.name`, id).Scan(&name)
		if err != nil {
			return translate(err, "group")
		}
		return auditTx(ctx, tx, AuditEntry{Instance: by.Instance, Actor: by.actor(), Action: "team.deprovisioned", Target: name})
	})
}

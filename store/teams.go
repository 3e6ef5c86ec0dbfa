package store

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// TeamPrefix marks an assignee that is a team: "team:approvers".
const TeamPrefix = "team:"

var teamName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Team is a group of people any of whom may answer the rounds assigned to it.
type Team struct {
	ID        int64     `db:"id"`
	Name      string    `db:"name"`
	Members   []string  `db:"members"`
	CreatedAt time.Time `db:"created_at"`
}

// CreateTeam adds a team.
func (s *Store) CreateTeam(ctx context.Context, name string) (*Team, error) {
	if !teamName.MatchString(name) {
		return nil, &Error{Kind: ErrInvalid, Message: "A team's name is letters, digits, '.', '_' and '-', up to 63, starting with a letter or digit."}
	}
	rows, _ := s.pool.Query(ctx, `insert into teams (name) values ($1)
		returning id, name, '{}'::text[] as members, created_at`, name)
	t, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[Team])
	return t, translate(err, "team "+name)
}

// DeleteTeam removes a team. Calls assigned to it stay assigned to its name
// and can be reassigned by an admin.
func (s *Store) DeleteTeam(ctx context.Context, name string) error {
	return s.execOne(ctx, "team "+name, `delete from teams where name = $1`, name)
}

// Teams lists every team with its members' names.
func (s *Store) Teams(ctx context.Context) ([]Team, error) {
	return readRows[Team](ctx, s, `
		select t.id, t.name, t.created_at,
		       array(select u.name from team_members m join users u on u.id = m.user_id
		             where m.team_id = t.id order by u.name) as members
		from teams t order by t.name`)
}

// AddTeamMember adds a user to a team; adding a member twice is no error.
// A membership added by hand stays when sign-on would take it back.
func (s *Store) AddTeamMember(ctx context.Context, team, user string) error {
	tag, err := s.pool.Exec(ctx, `
		insert into team_members (team_id, user_id)
		select t.id, u.id from teams t, users u where t.name = $1 and u.name = $2
		on conflict (team_id, user_id) do update set by_sign_on = false`, team, user)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		var teamOK, userOK bool
		if err := s.pool.QueryRow(ctx, `select exists (select 1 from teams where name = $1),
			exists (select 1 from users where name = $2)`, team, user).Scan(&teamOK, &userOK); err != nil {
			return err
		}
		if !teamOK {
			return notFound("team " + team)
		}
		if !userOK {
			return notFound("user " + user)
		}
	}
	return nil
}

// RemoveTeamMember takes a user off a team.
func (s *Store) RemoveTeamMember(ctx context.Context, team, user string) error {
	return s.execOne(ctx, "member "+user+" of team "+team, `
		delete from team_members m using teams t, users u
		where m.team_id = t.id and m.user_id = u.id and t.name = $1 and u.name = $2`, team, user)
}

// TeamsOf lists the names of the teams a user belongs to.
func (s *Store) TeamsOf(ctx context.Context, user string) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `select t.name from teams t
		join team_members m on m.team_id = t.id join users u on u.id = m.user_id
		where u.name = $1 order by t.name`, user)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// IsAssignee reports whether user may answer rounds assigned to assignee:
// it names them, or a team they belong to.
func (s *Store) IsAssignee(ctx context.Context, assignee, user string) (bool, error) {
	team, isTeam := strings.CutPrefix(assignee, TeamPrefix)
	if !isTeam || strings.HasPrefix(user, TeamPrefix) {
		return assigned(assignee, user, false), nil
	}
	var member bool
	err := s.pool.QueryRow(ctx, `select exists (select 1 from team_members m
		join teams t on t.id = m.team_id join users u on u.id = m.user_id
		where t.name = $1 and u.name = $2 and not u.disabled)`, team, user).Scan(&member)
	return assigned(assignee, user, member), err
}

// assigned says whether user may answer rounds assigned to assignee:
// assignee names them, or a team of which member says they are an
// enabled member.
func assigned(assignee, user string, member bool) bool {
	isTeam := strings.HasPrefix(assignee, TeamPrefix)
	if !isTeam || strings.HasPrefix(user, TeamPrefix) {
		return assignee == user && !isTeam
	}
	return member
}

// CheckAssignee checks who a call's rounds are to be answered by: an
// enabled user's name, or "team:" and a team's name.
func (s *Store) CheckAssignee(ctx context.Context, assignee string) error {
	return checkAssignee(ctx, s.pool, assignee)
}

// checkAssignee is CheckAssignee on db, a pool or a transaction.
func checkAssignee(ctx context.Context, db querier, assignee string) error {
	var ok bool
	var err error
	if team, isTeam := strings.CutPrefix(assignee, TeamPrefix); isTeam {
		err = db.QueryRow(ctx, `select exists (select 1 from teams where name = $1)`, team).Scan(&ok)
		if err == nil && !ok {
			return &Error{Kind: ErrInvalid, Message: "There is no team named " + quote(team) + "."}
		}
	} else {
		err = db.QueryRow(ctx, `select exists (select 1 from users where name = $1 and not disabled)`, assignee).Scan(&ok)
		if err == nil && !ok {
			return &Error{Kind: ErrInvalid, Message: "There is no one named " + quote(assignee) + " who may answer. Name a person, or a team as team:NAME."}
		}
	}
	return err
}

// quote shows a name a person typed in a message, cut short.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "") + `"`
}

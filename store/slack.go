package store

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// Rounds in Slack: who a Slack user is, where a round is posted, and the
// messages it was posted as (docs/slack.md).

var (
	slackUserID    = regexp.MustCompile(`^[UW][A-Z0-9]{2,30}$`)
	slackChannelID = regexp.MustCompile(`^[CGD][A-Z0-9]{2,30}$`)
)

// SlackPerson is a Rounds account as Slack interactions see it.
type SlackPerson struct {
	Name    string `db:"name"`
	IsAdmin bool   `db:"is_admin"`
}

// UserBySlack is the enabled account linked to a Slack user id.
func (s *Store) UserBySlack(ctx context.Context, slackUser string) (*SlackPerson, error) {
	rows, _ := s.pool.Query(ctx, `select name, is_admin from users where slack_user = $1 and not disabled`, slackUser)
	p, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[SlackPerson])
	return p, translate(err, "Slack user")
}

// SetSlackUser links an account to a Slack user id; a Slack user linked to
// another account before is linked to this one instead.
func (s *Store) SetSlackUser(ctx context.Context, user, slackUser string) error {
	if !slackUserID.MatchString(slackUser) {
		return &Error{Kind: ErrInvalid, Message: "That is not a Slack user id."}
	}
	return s.inTx(ctx, func(tx *txn) error {
		if _, err := tx.Exec(ctx, `update users set slack_user = null where slack_user = $1 and name <> $2`, slackUser, user); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `update users set slack_user = $2, updated_at = now() where name = $1`, user, slackUser)
		if err == nil && tag.RowsAffected() == 0 {
			return notFound("user " + user)
		}
		return err
	})
}

// SlackContact is what posting to a person needs: their Slack user id if
// known, and their address if Rounds trusts it to find them in Slack.
type SlackContact struct {
	Name         string  `db:"name"`
	SlackUser    *string `db:"slack_user"`
	TrustedEmail string  `db:"trusted_email"`
}

// SlackTarget is where round seq of a call goes in Slack: the person it is
// assigned to (Person), or the channel of the team it is assigned to
// (Channel, "" when the team has none). A round that asks the owner goes
// to the owner.
type SlackTarget struct {
	Person  *SlackContact
	Channel string
}

// SlackTarget reads where round seq of a call is posted in Slack: nowhere
// for a round that is gone or asks the agent.
func (s *Store) SlackTarget(ctx context.Context, callID string, seq int) (SlackTarget, error) {
	var who string
	err := s.pool.QueryRow(ctx, `select case when r.asks = 'owner' then c.owner else coalesce(c.assignee, c.owner) end
		from calls c join rounds r on r.call_id = c.id where c.id = $1 and r.seq = $2 and r.asks is distinct from 'agent'`,
		callID, seq).Scan(&who)
	if errors.Is(err, pgx.ErrNoRows) {
		return SlackTarget{}, nil // gone, or the agent's to answer
	}
	if err != nil {
		return SlackTarget{}, err
	}
	if team, ok := strings.CutPrefix(who, TeamPrefix); ok {
		var channel string
		err := s.pool.QueryRow(ctx, `select slack_channel from teams where name = $1`, team).Scan(&channel)
		if errors.Is(err, pgx.ErrNoRows) {
			return SlackTarget{}, nil
		}
		return SlackTarget{Channel: channel}, err
	}
	rows, _ := s.pool.Query(ctx, `select name, slack_user, case when email_trusted then email else '' end as trusted_email
		from users where name = $1 and not disabled`, who)
	c, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[SlackContact])
	if errors.Is(err, pgx.ErrNoRows) {
		return SlackTarget{}, nil
	}
	return SlackTarget{Person: c}, err
}

// SetTeamChannel sets the Slack channel a team's rounds are posted to; ""
// clears it.
func (s *Store) SetTeamChannel(ctx context.Context, team, channel string) error {
	channel = strings.TrimSpace(channel)
	if channel != "" && !slackChannelID.MatchString(channel) {
		return &Error{Kind: ErrInvalid, Message: "A Slack channel id starts with C or G, such as C0123ABCD (channel details, at the bottom)."}
	}
	return s.execOne(ctx, "team "+team, `update teams set slack_channel = $2 where name = $1`, team, channel)
}

// TeamChannels are the teams' Slack channels, by team name.
func (s *Store) TeamChannels(ctx context.Context) (map[string]string, error) {
	rows, _ := s.pool.Query(ctx, `select name, slack_channel from teams where slack_channel <> ''`)
	out := map[string]string{}
	var name, channel string
	_, err := pgx.ForEachRow(rows, []any{&name, &channel}, func() error {
		out[name] = channel
		return nil
	})
	return out, err
}

// SlackMessage is one message a round was posted as.
type SlackMessage struct {
	Channel string `db:"channel"`
	TS      string `db:"ts"`
}

// SaveSlackMessage records a message round seq was posted as.
func (s *Store) SaveSlackMessage(ctx context.Context, callID string, seq int, m SlackMessage) error {
	_, err := s.pool.Exec(ctx, `insert into slack_messages (call_id, seq, channel, ts) values ($1, $2, $3, $4)
		on conflict (call_id, seq, channel) do update set ts = excluded.ts`, callID, seq, m.Channel, m.TS)
	return err
}

// SlackMessages are the messages round seq was posted as that no longer
// ask for answers: all of them once the round has ended, and those posted
// before it escalated while it waits for someone else.
func (s *Store) SlackMessages(ctx context.Context, callID string, seq int) ([]SlackMessage, error) {
	rows, _ := s.pool.Query(ctx, `select m.channel, m.ts from slack_messages m
		join rounds r on r.call_id = m.call_id and r.seq = m.seq
		where m.call_id = $1 and m.seq = $2 and (r.status <> 'pending' or m.posted_at < r.escalated_at)
		order by m.posted_at`, callID, seq)
	return pgx.CollectRows(rows, pgx.RowToStructByName[SlackMessage])
}

// SlackUnmatched are the people who may answer rounds assigned to
// assignee (the person, or the team's members) who have a trusted address
// and no Slack user yet, by name: at most 50.
func (s *Store) SlackUnmatched(ctx context.Context, assignee string) (map[string]string, error) {
	rows, _ := s.pool.Query(ctx, `select u.name, u.email from users u
		where u.email_trusted and u.email <> '' and u.slack_user is null and not u.disabled
		  and (u.name = $1 or exists (select 1 from team_members m join teams t on t.id = m.team_id
		       where m.user_id = u.id and 'team:' || t.name = $1))
		order by u.id limit 50`, assignee)
	out := map[string]string{}
	var name, email string
	_, err := pgx.ForEachRow(rows, []any{&name, &email}, func() error {
		out[name] = email
		return nil
	})
	return out, err
}

// LinkSlackByEmail links slackUser to the enabled account whose trusted
// address is email (and that has no Slack user yet): ErrNotFound when
// none.
func (s *Store) LinkSlackByEmail(ctx context.Context, email, slackUser string) (*SlackPerson, error) {
	if email == "" || !slackUserID.MatchString(slackUser) {
		return nil, notFound("account")
	}
	rows, _ := s.pool.Query(ctx, `update users set slack_user = $2, updated_at = now()
		where id = (select id from users where lower(email) = lower($1) and email_trusted and not disabled and slack_user is null
		            order by id limit 1)
		  and not exists (select 1 from users where slack_user = $2)
		returning name, is_admin`, email, slackUser)
	p, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[SlackPerson])
	return p, translate(err, "account")
}

// SlackRoundPosted says whether round seq already has a message in channel.
func (s *Store) SlackRoundPosted(ctx context.Context, callID string, seq int, channel string) (bool, error) {
	var posted bool
	err := s.pool.QueryRow(ctx, `select exists (select 1 from slack_messages where call_id = $1 and seq = $2 and channel = $3)`,
		callID, seq, channel).Scan(&posted)
	return posted, err
}

// TakeSlackInteraction records an interaction by its key (a view id, an
// action's ts) and says whether it is the first time: a resent one is not.
// Keys older than a day are forgotten; Slack resends within seconds.
func (s *Store) TakeSlackInteraction(ctx context.Context, key string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `with old as (delete from slack_interactions where taken_at < now() - interval '1 day')
		insert into slack_interactions (key) values ($1) on conflict do nothing`, key)
	return tag.RowsAffected() == 1, err
}

// SpendSlackLink spends a link token's nonce: ErrConflict when it was
// spent before.
func (s *Store) SpendSlackLink(ctx context.Context, nonce string, expires time.Time) error {
	tag, err := s.pool.Exec(ctx, `with old as (delete from slack_links_spent where expires_at < now())
		insert into slack_links_spent (nonce, expires_at) values ($1, $2) on conflict do nothing`, nonce, expires)
	if err == nil && tag.RowsAffected() == 0 {
		return conflict("This link was used already. Press the button in Slack again for a new one.")
	}
	return err
}

// slackPostTx enqueues the post of a new pending round to Slack, when
// Slack is on, in the round's own transaction.
func (s *Store) slackPostTx(ctx context.Context, tx *txn, callID string, seq int) error {
	if !s.reach.Slack {
		return nil
	}
	return s.enqueueJobs(ctx, tx, queue.Insert{Args: queue.SlackPostArgs{CallID: callID, Seq: seq}})
}

// slackEndedTx enqueues the update of the Slack messages of the call's
// rounds that no longer wait (answered, expired, escalated, cancelled), in
// the transaction that ended them. A round never posted costs one read.
func (s *Store) slackEndedTx(ctx context.Context, tx pgx.Tx, callID string) error {
	if !s.reach.Slack {
		return nil
	}
	rows, _ := tx.Query(ctx, `select distinct m.seq from slack_messages m join rounds r on r.call_id = m.call_id and r.seq = m.seq
		where m.call_id = $1 and (r.status <> 'pending' or r.escalated_at is not null)`, callID)
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || len(seqs) == 0 {
		return err
	}
	jobs := make([]queue.Insert, len(seqs))
	for i, seq := range seqs {
		jobs[i] = queue.Insert{Args: queue.SlackUpdateArgs{CallID: callID, Seq: seq}}
	}
	if t, ok := tx.(*txn); ok {
		return s.enqueueJobs(ctx, t, jobs...)
	}
	return s.enqueueJobs(ctx, &txn{Tx: tx}, jobs...)
}

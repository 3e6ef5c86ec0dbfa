package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnswerSpeed is how long people took to answer the rounds of one server
// or team: the median and the 90th percentile, in seconds.
type AnswerSpeed struct {
	Key    string  `db:"key"`
	N      int     `db:"n"`
	Median float64 `db:"median"`
	P90    float64 `db:"p90"`
}

// answeredByPerson keeps the rounds a person answered: not those Rounds
// answered itself (again, automatically, or at the deadline).
const answeredByPerson = `r.answered_at >= $1 and r.status = 'answered' and r.answered_by not like 'rounds (%'`

// AnswerSpeedByServer is time to answer per server, for rounds answered
// since.
func (s *Store) AnswerSpeedByServer(ctx context.Context, since time.Time) ([]AnswerSpeed, error) {
	return s.answerSpeed(ctx, `s.name`, ``, since)
}

// AnswerSpeedByTeam is time to answer per team, for rounds of calls
// assigned to a team and answered since.
func (s *Store) AnswerSpeedByTeam(ctx context.Context, since time.Time) ([]AnswerSpeed, error) {
	return s.answerSpeed(ctx, `substr(c.assignee, 6)`, ` and c.assignee like 'team:%'`, since)
}

func (s *Store) answerSpeed(ctx context.Context, key, where string, since time.Time) ([]AnswerSpeed, error) {
	rows, _ := s.pool.Query(ctx, `
		select `+key+` as key, count(*)::int as n,
		       percentile_cont(0.5) within group (order by extract(epoch from r.answered_at - r.created_at))::float8 as median,
		       percentile_cont(0.9) within group (order by extract(epoch from r.answered_at - r.created_at))::float8 as p90
		from rounds r join calls c on c.id = r.call_id join servers s on s.id = c.server_id
		where `+answeredByPerson+where+`
		group by 1 order by 1 limit 20`, since)
	return pgx.CollectRows(rows, pgx.RowToStructByName[AnswerSpeed])
}

// Unanswered counts, per server, the rounds that escalated since, those
// that expired, and those Rounds answered at their deadline.
type Unanswered struct {
	Server     string `db:"server"`
	Escalated  int    `db:"escalated"`
	Expired    int    `db:"expired"`
	AtDeadline int    `db:"at_deadline"`
}

// UnansweredByServer counts the rounds nobody answered in time, per server.
func (s *Store) UnansweredByServer(ctx context.Context, since time.Time) ([]Unanswered, error) {
	rows, _ := s.pool.Query(ctx, `
		select s.name as server,
		       count(*) filter (where r.escalated_at >= $1)::int as escalated,
		       count(*) filter (where r.status = 'expired' and r.expires_at >= $1)::int as expired,
		       count(*) filter (where r.answered_by = $2 and r.answered_at >= $1)::int as at_deadline
		from rounds r join calls c on c.id = r.call_id join servers s on s.id = c.server_id
		where r.escalated_at >= $1 or (r.status = 'expired' and r.expires_at >= $1) or (r.answered_by = $2 and r.answered_at >= $1)
		group by s.name order by s.name limit 20`, since, AnsweredAtDeadline)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Unanswered])
}

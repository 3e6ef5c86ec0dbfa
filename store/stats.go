package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/queue"
)

// Round outcomes, as rounds.outcome records them.
const (
	OutcomeAnswered  = "answered"
	OutcomeDeclined  = "declined"
	OutcomeCancelled = "cancelled"
	OutcomeExpired   = "expired"
)

// Outcomes lists the round outcomes in the order charts show them.
var Outcomes = []string{OutcomeAnswered, OutcomeDeclined, OutcomeCancelled, OutcomeExpired}

// HourCount is how many rounds ended one way in one hour.
type HourCount struct {
	Hour    time.Time `db:"hour"`
	Outcome string    `db:"outcome"`
	N       int       `db:"n"`
}

// RoundsPerHour counts the rounds that ended since, by hour and outcome.
func (s *Store) RoundsPerHour(ctx context.Context, since time.Time) ([]HourCount, error) {
	return readRows[HourCount](ctx, s, `
		select date_trunc('hour', ended_at) as hour, outcome, count(*)::int as n
		from rounds where ended_at >= $1 and outcome is not null
		group by 1, 2 order by 1, 2`, since)
}

// AnswerTimes counts the rounds answered (or declined, or cancelled) since,
// by the time from the question to the answer: bucket i holds the times
// below bounds[i] and at least bounds[i-1]; the last, those from the last
// bound up.
func (s *Store) AnswerTimes(ctx context.Context, since time.Time, bounds []time.Duration) ([]int, error) {
	return s.buckets(ctx, `
		select width_bucket(extract(epoch from answered_at - created_at)::float8, $1::float8[]) as b, count(*)::int
		from rounds where answered_at >= $2 group by 1`, bounds, since)
}

// PendingAges counts the pending rounds by how long they have waited, in
// buckets as AnswerTimes.
func (s *Store) PendingAges(ctx context.Context, bounds []time.Duration) ([]int, error) {
	return s.buckets(ctx, `
		select width_bucket(extract(epoch from now() - created_at)::float8, $1::float8[]) as b, count(*)::int
		from rounds where status = 'pending' group by 1`, bounds)
}

// buckets runs a query of (bucket, count) rows over bounds ($1, in
// seconds) and args ($2…).
func (s *Store) buckets(ctx context.Context, sql string, bounds []time.Duration, args ...any) ([]int, error) {
	secs := make([]float64, len(bounds))
	for i, b := range bounds {
		secs[i] = b.Seconds()
	}
	var out []int
	err := s.read(ctx, func(q reader) error {
		out = make([]int, len(bounds)+1)
		rows, _ := q.Query(ctx, sql, append([]any{secs}, args...)...)
		var b, n int
		_, err := pgx.ForEachRow(rows, []any{&b, &n}, func() error {
			out[b] += n
			return nil
		})
		return err
	})
	return out, err
}

// ServerOutcomes counts how one server's rounds ended.
type ServerOutcomes struct {
	Server    string `db:"server"`
	Answered  int    `db:"answered"`
	Declined  int    `db:"declined"`
	Cancelled int    `db:"cancelled"`
	Expired   int    `db:"expired"`
}

// Total is every round that ended.
func (o ServerOutcomes) Total() int { return o.Answered + o.Declined + o.Cancelled + o.Expired }

// OutcomesByServer counts, per server, the rounds that ended since.
func (s *Store) OutcomesByServer(ctx context.Context, since time.Time) ([]ServerOutcomes, error) {
	return readRows[ServerOutcomes](ctx, s, `
		select s.name as server,
		       count(*) filter (where r.outcome = 'answered')::int as answered,
		       count(*) filter (where r.outcome = 'declined')::int as declined,
		       count(*) filter (where r.outcome = 'cancelled')::int as cancelled,
		       count(*) filter (where r.outcome = 'expired' or `+roundPastDeadline+`)::int as expired
		from rounds r join calls c on c.id = r.call_id join servers s on s.id = c.server_id
		where (r.ended_at >= $1 and r.outcome is not null)
		   or (`+roundPastDeadline+` and r.expires_at >= $1)
		group by s.name order by s.name`, since)
}

// OutcomeCount is how many rounds of a server ended one way, ever.
type OutcomeCount struct {
	Server  string `db:"server"`
	Outcome string `db:"outcome"`
	N       int64  `db:"n"`
}

// roundPastDeadline is true of a round that reads expired though the
// periodic job has not tidied it up yet (held questions excepted: their
// holder cancels them). Counts agree with what people read.
const roundPastDeadline = `(r.status = 'pending' and r.expires_at <= now() and r.held_by is null)`

// RoundTotals counts every ended round by server and outcome, a round
// past its deadline as expired.
func (s *Store) RoundTotals(ctx context.Context) ([]OutcomeCount, error) {
	rows, _ := s.pool.Query(ctx, `
		select s.name as server, coalesce(r.outcome, 'expired') as outcome, count(*) as n
		from rounds r join calls c on c.id = r.call_id join servers s on s.id = c.server_id
		where r.outcome is not null or `+roundPastDeadline+` group by 1, 2`)
	return pgx.CollectRows(rows, pgx.RowToStructByName[OutcomeCount])
}

// PendingByServer counts the rounds waiting for answers, by server.
func (s *Store) PendingByServer(ctx context.Context) ([]OutcomeCount, error) {
	rows, _ := s.pool.Query(ctx, `
		select s.name as server, 'pending' as outcome, count(*) as n
		from rounds r join calls c on c.id = r.call_id join servers s on s.id = c.server_id
		where r.status = 'pending' and not `+roundPastDeadline+` group by 1`)
	return pgx.CollectRows(rows, pgx.RowToStructByName[OutcomeCount])
}

// AnswerHistogram is, for one server, the time from question to answer of
// every answered round: Buckets[i] counts those at most bounds[i] seconds.
type AnswerHistogram struct {
	Server  string
	Count   uint64
	Sum     float64
	Buckets []uint64 // cumulative, one per bound
}

// AnswerHistograms builds the time-to-answer histogram of every server.
func (s *Store) AnswerHistograms(ctx context.Context, bounds []float64) ([]AnswerHistogram, error) {
	rows, _ := s.pool.Query(ctx, `
		select s.name, width_bucket(extract(epoch from r.answered_at - r.created_at)::float8, $1::float8[]),
		       count(*), sum(extract(epoch from r.answered_at - r.created_at))::float8
		from rounds r join calls c on c.id = r.call_id join servers s on s.id = c.server_id
		where r.answered_at is not null group by 1, 2`, bounds)
	byServer := map[string]*AnswerHistogram{}
	var out []AnswerHistogram
	var server string
	var b int
	var n int64
	var sum float64
	_, err := pgx.ForEachRow(rows, []any{&server, &b, &n, &sum}, func() error {
		h := byServer[server]
		if h == nil {
			h = &AnswerHistogram{Server: server, Buckets: make([]uint64, len(bounds))}
			byServer[server] = h
		}
		h.Count += uint64(n)
		h.Sum += sum
		// width_bucket puts x in b when bounds[b-1] <= x < bounds[b]: it
		// counts in every bucket from b on.
		for i := b; i < len(bounds); i++ {
			h.Buckets[i] += uint64(n)
		}
		return nil
	})
	for _, h := range byServer {
		out = append(out, *h)
	}
	return out, err
}

// JobCount is how many River jobs of a kind are in a state.
type JobCount struct {
	Kind  string `db:"kind"`
	State string `db:"state"`
	N     int64  `db:"n"`
}

// JobQueue counts the River jobs not yet finished, by kind and state.
func (s *Store) JobQueue(ctx context.Context) ([]JobCount, error) {
	rows, _ := s.pool.Query(ctx, queue.JobCounts)
	return pgx.CollectRows(rows, pgx.RowToStructByName[JobCount])
}

// Summary is the dashboard's headline numbers.
type Summary struct {
	Pending       int `db:"pending"`
	Overdue       int `db:"overdue"`
	CallsToday    int `db:"calls_today"`
	FailedToday   int `db:"failed_today"`
	InstancesLive int `db:"instances_live"`
}

// DashboardSummary counts what the dashboard headlines.
func (s *Store) DashboardSummary(ctx context.Context) (*Summary, error) {
	sums, err := readRows[Summary](ctx, s, `
		select (select count(*) from rounds where status = 'pending')::int as pending,
		       (select count(*) from rounds where status = 'pending' and expires_at <= now())::int as overdue,
		       (select count(*) from calls where created_at > now() - interval '1 day')::int as calls_today,
		       (select count(*) from calls where status = 'failed' and updated_at > now() - interval '1 day')::int as failed_today,
		       (select count(*) from instances where stopped_at is null
		          and last_seen_at > now() - 3 * interval_ms * interval '1 millisecond')::int as instances_live`)
	if err != nil {
		return nil, err
	}
	return &sums[0], nil
}

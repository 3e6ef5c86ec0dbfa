package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/store"
)

// series is the same measurement repeated.
type series struct {
	name    string
	results []result
}

func (s series) rates() []float64 {
	var out []float64
	for _, r := range s.results {
		out = append(out, r.perSecond)
	}
	return out
}

func meanSpread(xs []float64) (mean, spread float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	return mean, slices.Max(xs) - slices.Min(xs)
}

// check reports a series that did nothing, or failed.
func (s series) check() error {
	for _, r := range s.results {
		if r.perSecond == 0 || r.errors > 0 {
			return fmt.Errorf("%s: %.1f/s with %d errors (last: %s)", s.name, r.perSecond, r.errors, r.lastError)
		}
	}
	return nil
}

func (s series) print() {
	mean, spread := meanSpread(s.rates())
	var p50, p95, p99 []time.Duration
	errors := 0
	last := ""
	for _, r := range s.results {
		p50, p95, p99 = append(p50, r.p50), append(p95, r.p95), append(p99, r.p99)
		errors += r.errors
		if r.lastError != "" {
			last = r.lastError
		}
	}
	// Per round, the mean over runs; "-" unless every run counted it.
	perRound := func(of func(result) float64, format string) string {
		var xs []float64
		for _, r := range s.results {
			if x := of(r); x >= 0 {
				xs = append(xs, x)
			}
		}
		if len(xs) == 0 || len(xs) != len(s.results) {
			return "-"
		}
		m, _ := meanSpread(xs)
		return fmt.Sprintf(format, m)
	}
	millis := func(d time.Duration) float64 {
		if d < 0 {
			return -1
		}
		return float64(d) / float64(time.Millisecond)
	}
	fmt.Printf("%-36s %9.1f/s  ±%-7.1f %8s %8s %8s %7d %9s %8s %8s %8s\n", s.name, mean, spread/2,
		ms(slices.Max(p50)), ms(slices.Max(p95)), ms(slices.Max(p99)), errors,
		perRound(func(r result) float64 { return r.xacts }, "%.1f"),
		perRound(func(r result) float64 { return millis(r.machine) }, "%.2fms"),
		perRound(func(r result) float64 { return millis(r.app) }, "%.2fms"),
		perRound(func(r result) float64 { return millis(r.gen) }, "%.2fms"))
	if last != "" {
		fmt.Printf("%36s last error: %s\n", "", last)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// header names the columns; per is what the per-unit columns count: "rd"
// (an answered round) or "call".
func header(per string) {
	fmt.Printf("%-36s %11s  %-8s %8s %8s %8s %7s %9s %8s %8s %8s\n", "", "rate", "spread", "p50", "p95", "p99", "errors",
		"xacts/"+per, "cpu/"+per, "app/"+per, "gen/"+per)
}

func measureThroughput(ctx context.Context, o options, f *fleet, demoURL string) error {
	want := map[string]bool{}
	for m := range strings.SplitSeq(o.modes, ",") {
		want[strings.TrimSpace(m)] = true
	}
	repeat := func(name string, mk func(i int) user, read func() usage) series {
		s := series{name: name}
		for range o.runs {
			s.results = append(s.results, measure(ctx, o.users, o.warmup, o.duration, mk, read))
		}
		return s
	}
	xacts := f.xactCounter(ctx)
	defer xacts.close()
	counted := f.usageReader(xacts)
	// The baseline touches neither the database nor the instances.
	uncounted := func() usage { return usage{xacts: -1, machine: machineBusy(), app: -1, gen: processCPU(os.Getpid())} }
	var baseline, api series
	var all []series
	if want["baseline"] || want["api"] || want["html"] || want["half"] {
		fmt.Println()
		fmt.Println("Rates are answered rounds per second (the baseline: MCP requests per second); latency is")
		fmt.Println("from an answer's POST to the next round, or the result, being visible. Max over runs.")
		fmt.Println("xacts/rd: Postgres transactions (pg_stat_database, committed and rolled back) per answered round.")
		fmt.Println("cpu/rd: the whole machine's busy CPU per round (the baseline: per request), every process included;")
		fmt.Println("app/rd: the instances' own CPU per round (/proc); gen/rd: this load generator's, its users and")
		fmt.Println("the demo server. What is left of cpu/rd is mostly Postgres (and PgBouncer when pooled).")
		header("rd")
	}
	if want["baseline"] {
		baseline = repeat("baseline (bare go-sdk)", func(int) user { return baselineUser(demoURL) }, uncounted)
		baseline.print()
		all = append(all, baseline)
	}
	if want["api"] || want["half"] {
		api = repeat("api", func(int) user { return apiUser(f.urls, f.token, nil) }, counted)
		api.print()
		all = append(all, api)
	}
	if want["html"] {
		html := repeat("html pages", func(int) user { return htmlUser(f.urls) }, counted)
		html.print()
		all = append(all, html)
	}
	if want["half"] && len(api.results) > 0 {
		peak, _ := meanSpread(api.rates())
		// One pacer for all users: the whole fleet answers at half the peak.
		half := series{name: fmt.Sprintf("api at %.0f/s (half)", peak/2)}
		for range o.runs {
			pctx, cancel := context.WithCancel(ctx)
			p := newPacer(pctx, peak/2)
			half.results = append(half.results, measure(ctx, o.users, o.warmup, o.duration, func(int) user {
				return apiUser(f.urls, f.token, p)
			}, counted))
			cancel()
		}
		half.print()
		all = append(all, half)
	}
	if len(baseline.results) > 0 && len(api.results) > 0 {
		b, _ := meanSpread(baseline.rates())
		a, _ := meanSpread(api.rates())
		fmt.Printf("\nratio (api answered rounds/s ÷ baseline requests/s): %.2f\n", a/b)
	}
	if want["agents"] {
		all = append(all, measureAgents(ctx, o, f, demoURL, counted, uncounted)...)
	}
	fmt.Printf("instance RSS: %s\n", mib(f.rss()))
	for _, s := range all {
		if err := s.check(); err != nil {
			return err
		}
	}
	return nil
}

func mib(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.0f MiB", x))
	}
	return strings.Join(parts, ", ")
}

// measureScale seeds stored rounds, then times the inbox and a call page
// through the pages, again while the retention deletes the oldest of them,
// and reads the bytes stored per round, the query plans and the instances'
// memory.
func measureScale(ctx context.Context, o options, f *fleet) error {
	rssBefore := f.rss()
	callID, err := seedScale(ctx, o, f)
	if err != nil {
		return err
	}
	r := newPageReader(ctx, o, f, callID)
	header("rd")
	if err := r.readPages(ctx); err != nil {
		return err
	}
	if err := r.readWhileDeleting(ctx, f.db); err != nil {
		return err
	}
	fmt.Printf("instance RSS before seeding: %s; after the reads: %s\n", mib(rssBefore), mib(f.rss()))
	return nil
}

// seedScale stores o.scale rounds and prints how long that took and the
// bytes stored per round. It returns the call whose page is read.
func seedScale(ctx context.Context, o options, f *fleet) (string, error) {
	began := time.Now()
	// A tenth of the rounds (a million of ten) finished long ago, for the
	// retention to delete while the pages are read.
	old := o.scale / 10
	callID, err := seed(ctx, f.db, o.scale, old)
	if err != nil {
		return "", err
	}
	fmt.Printf("seeded %d rounds (%d of them past the retention) in %s\n", o.scale, old, time.Since(began).Round(time.Second))
	if err := printStorage(ctx, f.db, callID); err != nil {
		return "", err
	}
	return callID, nil
}

// pageReader reads the pages measureScale times, on the fleet's instances
// in turn, each page for o.duration at a time.
type pageReader struct {
	o      options
	f      *fleet
	client *http.Client
	pages  []struct{ name, path string }
	// Each page is read by one reader at a time (what a person waits for,
	// with nothing else asking), then by four at once, each asking again as
	// soon as it is answered: on two cores that keeps every core busy, and
	// a request's time is then mostly its wait for one.
	readerCounts []int
}

// newPageReader signs in for the pages; the API takes the fleet's token.
// The inbox and the call are read through their page-shaped API twins and
// the pages both.
func newPageReader(ctx context.Context, o options, f *fleet, callID string) *pageReader {
	client := &http.Client{Transport: httpClient.Transport, Timeout: 30 * time.Second, CheckRedirect: httpClient.CheckRedirect}
	if jar := htmlSession(ctx, f.urls[0]); jar != nil {
		client.Jar = jar
	}
	return &pageReader{o: o, f: f, client: client,
		pages: []struct{ name, path string }{
			{"inbox page", "/inbox"},
			{"call page", "/calls/" + callID},
			{"call API", "/api/v1/calls/" + callID},
		},
		readerCounts: []int{1, 4},
	}
}

// get reads url once and returns how long it took.
func (r *pageReader) get(ctx context.Context, url string) (time.Duration, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+r.f.token)
	began := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return time.Since(began), nil
}

func readersName(n int) string {
	if n == 1 {
		return " (1 reader)"
	}
	return fmt.Sprintf(" (%d readers)", n)
}

// readPage has readers read a page for d, into st.
func (r *pageReader) readPage(ctx context.Context, path string, st *stats, d time.Duration, readers int) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			for ctx.Err() == nil {
				d, err := r.get(ctx, r.f.urls[i%len(r.f.urls)]+path)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					st.failed(ctx, err)
					continue
				}
				st.answered(d)
			}
		})
	}
	wg.Wait()
}

// readPages reads each page o.runs times and prints its figures.
func (r *pageReader) readPages(ctx context.Context) error {
	for _, page := range r.pages {
		for _, readers := range r.readerCounts {
			s := series{name: page.name + readersName(readers)}
			for range r.o.runs {
				st := &stats{}
				st.measuring.Store(true)
				r.readPage(ctx, page.path, st, r.o.duration, readers)
				s.results = append(s.results, st.result(r.o.duration))
			}
			s.print()
			if err := s.check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// readPagesUntil reads the pages in turn, each for o.duration, until a
// turn ends with done closed, and prints each page's figures over all of it.
func (r *pageReader) readPagesUntil(ctx context.Context, suffix string, done <-chan struct{}) error {
	type reading struct {
		st    *stats
		spent time.Duration
	}
	all := make([][]reading, len(r.pages))
	for i := range all {
		for range r.readerCounts {
			st := &stats{}
			st.measuring.Store(true)
			all[i] = append(all[i], reading{st: st})
		}
	}
	for finished := false; !finished; {
		for i, page := range r.pages {
			for k, readers := range r.readerCounts {
				r.readPage(ctx, page.path, all[i][k].st, r.o.duration, readers)
				all[i][k].spent += r.o.duration
			}
		}
		select {
		case <-done:
			finished = true
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
	}
	for i, page := range r.pages {
		for k, readers := range r.readerCounts {
			rd := all[i][k]
			s := series{name: page.name + readersName(readers) + suffix, results: []result{rd.st.result(max(rd.spent, r.o.duration))}}
			s.print()
			if err := s.check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// readWhileDeleting reads the pages again while the retention deletes the
// old calls, batch by batch, with the statement its job runs, until it has
// deleted every one (a million rounds of ten million).
func (r *pageReader) readWhileDeleting(ctx context.Context, db string) error {
	st, err := storeFor(ctx, db)
	if err != nil {
		return err
	}
	var n int
	var delErr error
	deleting := make(chan struct{})
	deleteBegan := time.Now()
	go func() {
		defer close(deleting)
		for ctx.Err() == nil {
			k, err := st.DeleteFinishedCalls(ctx, time.Now().Add(-90*24*time.Hour), 1000)
			n += k
			if err != nil || k == 0 {
				delErr = err
				return
			}
		}
	}()
	err = r.readPagesUntil(ctx, " (deleting)", deleting)
	<-deleting
	fmt.Printf("retention deleted %d calls (%d rounds) in %s while the pages were read\n", n, 2*n,
		time.Since(deleteBegan).Round(time.Millisecond))
	return errors.Join(err, delErr)
}

// htmlSession signs in and returns the cookie jar.
func htmlSession(ctx context.Context, base string) http.CookieJar {
	jar, err := loginJar(ctx, base)
	if err != nil {
		fmt.Println("sign-in for page reads failed:", err)
		return nil
	}
	return jar
}

// seed stores n rounds: answered two-round calls spread over many people,
// the oldest of them (old rounds) finished 100 days ago, and, for the
// measured person, a few pending ones and one call whose page is read. It
// returns that call's id. Each batch is one set-based statement.
func seed(ctx context.Context, db string, n, old int) (string, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	calls := int(math.Ceil(float64(n) / 2))
	oldCalls := old / 2
	const batch = 100_000
	for from := 0; from < calls; from += batch {
		to := min(from+batch, calls)
		_, err := conn.Exec(ctx, `
			with c as (
				insert into calls (server_id, owner, method, target, arguments, status, current_seq, result,
				                   created_at, updated_at, finished_at)
				select (select id from servers where name = 'demo'), 'person' || (g % 5000), 'tools/call',
				       'book_flight', '{}', 'complete', 2,
				       '{"content":[{"type":"text","text":"Booked."}]}', t, t, t
				from generate_series($1::int, $2::int - 1) g,
				     lateral (select case when g >= $3::int - $4::int then now() - interval '100 days' - g * interval '1 second'
				                          else now() - g * interval '1 second' end as t) tt
				returning id, created_at
			)
			insert into rounds (call_id, seq, input_requests, request_state, status, responses, answered_by,
			                    answered_at, expires_at, created_at, outcome, ended_at)
			select c.id, s, '{"seat":{"method":"elicitation/create","params":{"message":"Which class?","requestedSchema":{"type":"object","properties":{"class":{"type":"string","enum":["economy","business"]}}}}}}',
			       '"seeded-state"', 'answered', '{"seat":{"action":"accept","content":{"class":"economy"}}}',
			       'person', c.created_at, c.created_at + interval '1 day', c.created_at, 'answered', c.created_at
			from c cross join generate_series(1, 2) s`, from, to, calls, oldCalls)
		if err != nil {
			return "", err
		}
	}
	var id string
	err = conn.QueryRow(ctx, `
		with c as (
			insert into calls (server_id, owner, method, target, arguments, status, current_seq)
			select (select id from servers where name = 'demo'), 'admin', 'tools/call', 'book_flight', '{}', 'input_required', 1
			from generate_series(1, 20) returning id
		), r as (
			insert into rounds (call_id, seq, input_requests, request_state, status, expires_at)
			select id, 1, '{"seat":{"method":"elicitation/create","params":{"message":"Which class?","requestedSchema":{"type":"object","properties":{"class":{"type":"string","enum":["economy","business"]}}}}}}',
			       '"seeded-state"', 'pending', now() + interval '1 day' from c
		)
		select id::text from c limit 1`).Scan(&id)
	if err != nil {
		return "", err
	}
	// VACUUM refuses a transaction block, and statements sent together are
	// one implicit transaction: send them one by one.
	for _, table := range []string{"calls", "rounds"} {
		if _, err := conn.Exec(ctx, "vacuum analyze "+table); err != nil {
			return "", err
		}
	}
	return id, nil
}

// printStorage prints the bytes stored per round (tables, their indexes
// and TOAST) and the plans of the inbox and call page queries.
func printStorage(ctx context.Context, db, callID string) error {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var rounds, callsBytes, roundsBytes, callsIdx, roundsIdx int64
	err = conn.QueryRow(ctx, `select (select count(*) from rounds),
		pg_table_size('calls'), pg_table_size('rounds'), pg_indexes_size('calls'), pg_indexes_size('rounds')`).
		Scan(&rounds, &callsBytes, &roundsBytes, &callsIdx, &roundsIdx)
	if err != nil {
		return err
	}
	total := callsBytes + roundsBytes + callsIdx + roundsIdx
	fmt.Printf("stored: %d rounds; calls %s + indexes %s, rounds %s + indexes %s; %.0f bytes per round\n",
		rounds, mb(callsBytes), mb(callsIdx), mb(roundsBytes), mb(roundsIdx), float64(total)/float64(rounds))
	for _, q := range []struct{ name, sql string }{
		{"inbox", `explain (analyze, buffers, costs off)
			select r.call_id::text as call_id, r.seq, s.name as server_name, c.method, c.target,
			       r.input_requests, r.created_at, r.expires_at
			from calls c
			join rounds r on r.call_id = c.id and r.seq = c.current_seq
			join servers s on s.id = c.server_id
			where c.owner = 'admin' and c.status = 'input_required' and r.status = 'pending' and r.expires_at > now()
			order by r.expires_at limit 50`},
		{"call page: the call", `explain (analyze, buffers, costs off)
			select c.*, s.name from calls c join servers s on s.id = c.server_id where c.id = '` + callID + `'`},
		{"call page: its rounds", `explain (analyze, buffers, costs off)
			select * from rounds where call_id = '` + callID + `' order by seq`},
		{"retention: one batch", `explain (costs off)
			delete from calls where id in (select id from calls where finished_at < now() - interval '90 days'
			order by finished_at limit 1000 for update skip locked)`},
	} {
		rows, err := conn.Query(ctx, q.sql)
		if err != nil {
			return err
		}
		fmt.Printf("plan, %s:\n", q.name)
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			fmt.Println("    " + line)
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }

// storeFor opens the store over the run's database, for the retention's
// own statement.
func storeFor(ctx context.Context, db string) (*store.Store, error) {
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		return nil, err
	}
	return store.New(pool)
}

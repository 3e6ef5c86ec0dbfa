package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
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
	perRound := "-"
	var xs []float64
	for _, r := range s.results {
		if pr := r.perRound(); pr >= 0 {
			xs = append(xs, pr)
		}
	}
	if len(xs) == len(s.results) && len(xs) > 0 {
		m, _ := meanSpread(xs)
		perRound = fmt.Sprintf("%.1f", m)
	}
	fmt.Printf("%-22s %9.1f/s  ±%-7.1f %8s %8s %8s %7d %9s\n", s.name, mean, spread/2,
		ms(slices.Max(p50)), ms(slices.Max(p95)), ms(slices.Max(p99)), errors, perRound)
	if last != "" {
		fmt.Printf("%22s last error: %s\n", "", last)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func header() {
	fmt.Printf("%-22s %11s  %-8s %8s %8s %8s %7s %9s\n", "", "rate", "spread", "p50", "p95", "p99", "errors", "xacts/rd")
}

func measureThroughput(ctx context.Context, o options, f *fleet, demoURL string) error {
	want := map[string]bool{}
	for m := range strings.SplitSeq(o.modes, ",") {
		want[strings.TrimSpace(m)] = true
	}
	repeat := func(name string, mk func(i int) user, xacts func() int64) series {
		s := series{name: name}
		for range o.runs {
			s.results = append(s.results, measure(ctx, o.users, o.warmup, o.duration, mk, xacts))
		}
		return s
	}
	xacts := f.xactCounter(ctx)
	defer xacts.close()
	fmt.Println()
	fmt.Println("Rates are answered rounds per second (the baseline: MCP requests per second); latency is")
	fmt.Println("from an answer's POST to the next round, or the result, being visible. Max over runs.")
	fmt.Println("xacts/rd: Postgres transactions (pg_stat_database, committed and rolled back) per answered round.")
	header()
	var baseline, api series
	var all []series
	if want["baseline"] {
		baseline = repeat("baseline (bare go-sdk)", func(int) user { return baselineUser(demoURL) }, nil)
		baseline.print()
		all = append(all, baseline)
	}
	if want["api"] || want["half"] {
		api = repeat("api", func(int) user { return apiUser(f.urls, f.token, nil) }, xacts.read)
		api.print()
		all = append(all, api)
	}
	if want["html"] {
		html := repeat("html pages", func(int) user { return htmlUser(f.urls) }, xacts.read)
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
			}, xacts.read))
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
// through the pages, and reads the instances' memory before and after.
func measureScale(ctx context.Context, o options, f *fleet) error {
	rssBefore := f.rss()
	began := time.Now()
	callID, err := seed(ctx, f.db, o.scale)
	if err != nil {
		return err
	}
	fmt.Printf("seeded %d rounds in %s\n", o.scale, time.Since(began).Round(time.Second))
	client := &http.Client{Transport: httpClient.Transport, Timeout: 30 * time.Second, CheckRedirect: httpClient.CheckRedirect}
	get := func(url string) (time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+f.token)
		began := time.Now()
		resp, err := client.Do(req)
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
	// Pages need a session; the API takes the token. The inbox and the call
	// are read through their page-shaped API twins and the pages both.
	jar := htmlSession(ctx, f.urls[0])
	if jar != nil {
		client.Jar = jar
	}
	header()
	for _, page := range []struct{ name, path string }{
		{"inbox page", "/inbox"},
		{"call page", "/calls/" + callID},
		{"call API", "/api/v1/calls/" + callID},
	} {
		s := series{name: page.name}
		for range o.runs {
			st := &stats{}
			st.measuring.Store(true)
			ctx, cancel := context.WithTimeout(ctx, o.duration)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					for ctx.Err() == nil {
						d, err := get(f.urls[i%len(f.urls)] + page.path)
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
			cancel()
			s.results = append(s.results, st.result(o.duration))
		}
		s.print()
		if err := s.check(); err != nil {
			return err
		}
	}
	fmt.Printf("instance RSS before seeding: %s; after the reads: %s\n", mib(rssBefore), mib(f.rss()))
	return nil
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
// and, for the measured person, a few pending ones and one call whose page
// is read. It returns that call's id.
func seed(ctx context.Context, db string, n int) (string, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	calls := int(math.Ceil(float64(n) / 2))
	const batch = 50_000
	for from := 0; from < calls; from += batch {
		to := min(from+batch, calls)
		_, err := conn.Exec(ctx, `
			with c as (
				insert into calls (server_id, owner, method, target, arguments, status, current_seq, result,
				                   created_at, updated_at, finished_at)
				select (select id from servers where name = 'demo'), 'person' || (g % 5000), 'tools/call',
				       'book_flight', '{}', 'complete', 2,
				       '{"content":[{"type":"text","text":"Booked."}]}',
				       now() - g * interval '1 second', now() - g * interval '1 second', now() - g * interval '1 second'
				from generate_series($1::int, $2::int - 1) g
				returning id, created_at
			)
			insert into rounds (call_id, seq, input_requests, request_state, status, responses, answered_by,
			                    answered_at, expires_at, created_at)
			select c.id, s, '{"seat":{"method":"elicitation/create","params":{"message":"Which class?","requestedSchema":{"type":"object","properties":{"class":{"type":"string","enum":["economy","business"]}}}}}}',
			       '"seeded-state"', 'answered', '{"seat":{"action":"accept","content":{"class":"economy"}}}',
			       'person', c.created_at, c.created_at + interval '1 day', c.created_at
			from c cross join generate_series(1, 2) s`, from, to)
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
	_, err = conn.Exec(ctx, "analyze calls; analyze rounds")
	return id, err
}

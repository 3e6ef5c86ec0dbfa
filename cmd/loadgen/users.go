package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Answers for book_flight's two rounds.
const (
	tripAnswers = `{"trip":{"action":"accept","content":{"destination":"Lisbon","date":"2031-05-04"}},"party":{"action":"accept","content":{"passengers":2}}}`
	seatAnswers = `{"seat":{"action":"accept","content":{"class":"business"}}}`
)

// stats gathers one run's measurements.
type stats struct {
	mu        sync.Mutex
	latencies []time.Duration
	errors    int
	lastError string
	measuring atomic.Bool
}

func (s *stats) answered(d time.Duration) {
	if !s.measuring.Load() {
		return
	}
	s.mu.Lock()
	s.latencies = append(s.latencies, d)
	s.mu.Unlock()
}

func (s *stats) failed(ctx context.Context, err error) {
	if !s.measuring.Load() || ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	s.errors++
	s.lastError = err.Error()
	s.mu.Unlock()
}

// result is one run's figures.
type result struct {
	perSecond     float64
	p50, p95, p99 time.Duration
	errors        int
	lastError     string
	// Per answered round (or baseline request), while measuring: Postgres
	// transactions committed or rolled back (pg_stat_database), the whole
	// machine's busy CPU, the instances' CPU; -1 where unknown.
	xacts             float64
	machine, app, gen time.Duration
	answers           int
}

func (s *stats) result(d time.Duration) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := result{perSecond: float64(len(s.latencies)) / d.Seconds(), errors: s.errors, lastError: s.lastError,
		xacts: -1, machine: -1, app: -1, gen: -1, answers: len(s.latencies)}
	slices.Sort(s.latencies)
	r.p50, r.p95, r.p99 = percentile(s.latencies, 50), percentile(s.latencies, 95), percentile(s.latencies, 99)
	return r
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// user is one virtual user's loop: it runs until ctx ends.
type user func(ctx context.Context, st *stats)

// measure runs users for warm-up plus duration and returns the measured part.
// read, when given, reads the counters at the start and the end of the
// measured part, both under load.
func measure(ctx context.Context, n int, warmup, duration time.Duration, mk func(i int) user, read func() usage) result {
	st := &stats{}
	ctx, cancel := context.WithTimeout(ctx, warmup+duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		u := mk(i)
		wg.Go(func() { u(ctx, st) })
	}
	time.Sleep(warmup)
	var before usage
	if read != nil {
		before = read()
	}
	st.measuring.Store(true)
	time.Sleep(duration)
	st.measuring.Store(false)
	r := st.result(duration)
	if read != nil {
		r.xacts, r.machine, r.app, r.gen = spent(before, read(), r.answers)
	}
	cancel()
	wg.Wait()
	return r
}

// pacer hands out permits at a fixed rate, to hold load below the peak.
type pacer struct{ tick <-chan time.Time }

func newPacer(ctx context.Context, perSecond float64) *pacer {
	if perSecond <= 0 {
		return nil
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	context.AfterFunc(ctx, t.Stop)
	return &pacer{tick: t.C}
}

func (p *pacer) wait(ctx context.Context) bool {
	if p == nil {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-p.tick:
		return true
	}
}

var httpClient = &http.Client{
	Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute},
	Timeout:   30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// apiUser books flights through the JSON API, spreading requests over the
// instances as a round-robin balancer would. The latency of a round runs
// from the answer's POST to the next round (or the result) being returned
// by a held GET.
func apiUser(urls []string, token string, pace *pacer) user {
	var next atomic.Uint64
	base := func() string { return urls[next.Add(1)%uint64(len(urls))] }
	do := func(ctx context.Context, method, url, body string) ([]byte, int, error) {
		req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp.StatusCode, err
	}
	type call struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Round  *struct {
			Seq int `json:"seq"`
		} `json:"round"`
	}
	waitRound := func(ctx context.Context, id string, after int) (call, error) {
		for {
			b, status, err := do(ctx, "GET", fmt.Sprintf("%s/api/v1/calls/%s?wait=10s&after_seq=%d", base(), id, after), "")
			if err != nil {
				return call{}, err
			}
			if status != http.StatusOK {
				return call{}, fmt.Errorf("GET call: %d %s", status, b)
			}
			var c call
			if err := json.Unmarshal(b, &c); err != nil {
				return c, err
			}
			if c.Status == "failed" || c.Status == "expired" || c.Status == "cancelled" {
				return c, fmt.Errorf("call %s", c.Status)
			}
			if c.Status == "complete" || c.Round != nil && c.Round.Seq > after {
				return c, nil
			}
		}
	}
	// following reads what a request held with ?wait came back with: the call's
	// next round or end, or (the wait ran out) a reason to wait on.
	following := func(ctx context.Context, b []byte, after int) (call, error) {
		var c call
		if err := json.Unmarshal(b, &c); err != nil {
			return c, err
		}
		if c.Status == "complete" || c.Round != nil && c.Round.Seq > after {
			return c, nil
		}
		return waitRound(ctx, c.ID, after)
	}
	return func(ctx context.Context, st *stats) {
		for ctx.Err() == nil {
			// Each request waits for what follows it: one request a round.
			b, status, err := do(ctx, "POST", base()+"/api/v1/calls?wait=10s", `{"server":"demo","tool":"book_flight","arguments":{}}`)
			if err != nil || status != http.StatusCreated {
				st.failed(ctx, fmt.Errorf("start: %d %v %s", status, err, b))
				continue
			}
			c, err := following(ctx, b, 0)
			if err != nil {
				st.failed(ctx, err)
				continue
			}
			for seq, answers := range []string{tripAnswers, seatAnswers} {
				if !pace.wait(ctx) {
					return
				}
				began := time.Now()
				b, status, err := do(ctx, "POST", fmt.Sprintf("%s/api/v1/calls/%s/rounds/%d?wait=10s", base(), c.ID, seq+1), `{"inputResponses":`+answers+`}`)
				if err != nil || status != http.StatusAccepted {
					st.failed(ctx, fmt.Errorf("answer: %d %v %s", status, err, b))
					break
				}
				if _, err := following(ctx, b, seq+1); err != nil {
					st.failed(ctx, err)
					break
				}
				st.answered(time.Since(began))
			}
		}
	}
}

var (
	csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	roundSeq  = regexp.MustCompile(`data-testid="round-form" data-seq="(\d+)"`)
	liveHref  = regexp.MustCompile(`hx-get="([^"]+/live[^"]*)"`)
)

// htmlUser books flights through the pages, the way a browser does: it
// posts the forms, follows the redirect to the call page, and waits on the
// page's live fragment until the next round's form is there.
func htmlUser(urls []string) user {
	var next atomic.Uint64
	base := func() string { return urls[next.Add(1)%uint64(len(urls))] }
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Transport: httpClient.Transport, Jar: jar, Timeout: 30 * time.Second, CheckRedirect: httpClient.CheckRedirect}
	var csrf string
	do := func(ctx context.Context, method, path string, form url.Values) ([]byte, *http.Response, error) {
		var body io.Reader
		if form != nil {
			form.Set("csrf_token", csrf)
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequestWithContext(ctx, method, base()+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp, err
	}
	login := func(ctx context.Context) error {
		var err error
		csrf, err = signIn(ctx, client, base())
		return err
	}
	// waitForm shows the call page until it holds round seq's form, or the
	// call is done when seq is 0.
	waitForm := func(ctx context.Context, callPath string, seq int) error {
		page, _, err := do(ctx, "GET", callPath, nil)
		for err == nil {
			if seq > 0 {
				if m := roundSeq.FindSubmatch(page); m != nil && string(m[1]) == fmt.Sprint(seq) {
					return nil
				}
			} else if bytes.Contains(page, []byte(`data-status="complete"`)) {
				return nil
			}
			if bytes.Contains(page, []byte(`data-status="failed"`)) {
				return errors.New("the call failed")
			}
			m := liveHref.FindSubmatch(page)
			if m == nil {
				page, _, err = do(ctx, "GET", callPath, nil)
				continue
			}
			page, _, err = do(ctx, "GET", strings.ReplaceAll(string(m[1]), "&amp;", "&"), nil)
		}
		return err
	}
	return func(ctx context.Context, st *stats) {
		if err := login(ctx); err != nil {
			st.failed(ctx, err)
			return
		}
		for ctx.Err() == nil {
			_, resp, err := do(ctx, "POST", "/servers/demo/tools/book_flight", url.Values{})
			if err != nil || resp.StatusCode != http.StatusSeeOther {
				st.failed(ctx, fmt.Errorf("start: %v %v", resp, err))
				continue
			}
			callPath := resp.Header.Get("Location")
			if err := waitForm(ctx, callPath, 1); err != nil {
				st.failed(ctx, err)
				continue
			}
			forms := []url.Values{
				{"q0$action": {"accept"}, "q0.passengers": {"2"}, "q1$action": {"accept"}, "q1.destination": {"Lisbon"}, "q1.date": {"2031-05-04"}},
				{"q0$action": {"accept"}, "q0.class": {"business"}},
			}
			for i, form := range forms {
				began := time.Now()
				_, resp, err := do(ctx, "POST", fmt.Sprintf("%s/rounds/%d", callPath, i+1), form)
				if err != nil || resp.StatusCode != http.StatusSeeOther {
					st.failed(ctx, fmt.Errorf("answer: %v %v", resp, err))
					break
				}
				want := 2
				if i == 1 {
					want = 0
				}
				if err := waitForm(ctx, callPath, want); err != nil {
					st.failed(ctx, err)
					break
				}
				st.answered(time.Since(began))
			}
		}
	}
}

// baselineUser does the same rounds with a bare go-sdk client against the
// same demo server: no pages, no database, no jobs. Each request counts.
func baselineUser(demoURL string) user {
	return func(ctx context.Context, st *stats) {
		client := mcp.NewClient(&mcp.Implementation{Name: "loadgen-baseline", Version: "1"}, &mcp.ClientOptions{
			MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("unused") },
		})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: demoURL, HTTPClient: &http.Client{Transport: httpClient.Transport}}, nil)
		if err != nil {
			st.failed(ctx, err)
			return
		}
		defer cs.Close()
		answers := []mcp.InputResponseMap{
			{
				"trip":  &mcp.ElicitResult{Action: "accept", Content: map[string]any{"destination": "Lisbon", "date": "2031-05-04"}},
				"party": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"passengers": 2}},
			},
			{"seat": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"class": "business"}}},
		}
		for ctx.Err() == nil {
			began := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "book_flight", Arguments: map[string]any{}})
			if err != nil {
				st.failed(ctx, err)
				continue
			}
			st.answered(time.Since(began))
			for _, a := range answers {
				if !res.NeedsInput() {
					st.failed(ctx, errors.New("finished early"))
					break
				}
				began = time.Now()
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "book_flight", Arguments: map[string]any{},
					InputResponses: a, RequestState: res.RequestState})
				if err != nil {
					st.failed(ctx, err)
					break
				}
				st.answered(time.Since(began))
			}
		}
	}
}

// signIn signs a cookie-keeping client in and returns the CSRF token.
func signIn(ctx context.Context, client *http.Client, base string) (string, error) {
	get := func(path string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	page, err := get("/login")
	if err != nil {
		return "", err
	}
	m := csrfField.FindSubmatch(page)
	if m == nil {
		return "", errors.New("no CSRF field on /login")
	}
	form := url.Values{"username": {"admin"}, "password": {adminPassword}, "next": {"/"}, "csrf_token": {string(m[1])}}
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return "", fmt.Errorf("sign-in: %d", resp.StatusCode)
	}
	home, err := get("/")
	if err != nil {
		return "", err
	}
	if m = csrfField.FindSubmatch(home); m == nil {
		return "", errors.New("no CSRF token after signing in")
	}
	return string(m[1]), nil
}

// loginJar signs in and returns the session's cookie jar.
func loginJar(ctx context.Context, base string) (http.CookieJar, error) {
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Transport: httpClient.Transport, Jar: jar, Timeout: 30 * time.Second, CheckRedirect: httpClient.CheckRedirect}
	_, err := signIn(ctx, client, base)
	return jar, err
}

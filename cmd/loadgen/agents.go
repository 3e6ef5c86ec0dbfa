package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The agents mode: MCP agents, each a go-sdk client speaking 2026-07-28
// with its automatic round-trips off, calling the demo's current_time (a
// tool that asks nothing) one call after another, directly against the
// demo server and through Rounds' front door, /mcp/demo on the instances,
// with the fleet's API token.

const (
	agentProtocol = "2026-07-28"
	agentTool     = "current_time"
)

// agentEndpoints are the fleet's front doors to the demo server.
func agentEndpoints(f *fleet) []string {
	var out []string
	for _, u := range f.urls {
		out = append(out, u+"/mcp/demo")
	}
	return out
}

// spreading sends each request to the next endpoint in turn, as a
// round-robin balancer would, with the token when there is one.
type spreading struct {
	endpoints []*url.URL
	token     string
	next      atomic.Uint64
	base      http.RoundTripper
}

func (s *spreading) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	to := s.endpoints[s.next.Add(1)%uint64(len(s.endpoints))]
	req.URL.Scheme, req.URL.Host, req.URL.Path = to.Scheme, to.Host, to.Path
	req.Host = to.Host
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	return s.base.RoundTrip(req)
}

// agentUser is one agent: it connects (server/discover), then calls the
// tool until ctx ends, each call waiting for pace's permit when paced.
func agentUser(endpoints []string, token string, pace *pacer) user {
	return func(ctx context.Context, st *stats) {
		rt := &spreading{token: token, base: httpClient.Transport}
		for _, e := range endpoints {
			u, err := url.Parse(e)
			if err != nil {
				st.failed(ctx, err)
				return
			}
			rt.endpoints = append(rt.endpoints, u)
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "loadgen-agent", Version: "1"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		})
		transport := &mcp.StreamableClientTransport{Endpoint: endpoints[0], HTTPClient: &http.Client{Transport: rt}}
		var cs *mcp.ClientSession
		for ctx.Err() == nil {
			var err error
			if cs, err = client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: agentProtocol}); err == nil {
				break
			}
			st.failed(ctx, fmt.Errorf("connect: %w", err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
		if cs == nil {
			return
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != agentProtocol {
			st.failed(ctx, fmt.Errorf("connected with %s, not %s", v, agentProtocol))
			return
		}
		for pace.wait(ctx) {
			began := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: agentTool, Arguments: map[string]any{}})
			switch {
			case err != nil:
				st.failed(ctx, err)
			case res.IsError || res.NeedsInput() || len(res.Content) == 0:
				st.failed(ctx, errors.New("current_time did not answer with the time"))
			default:
				st.answered(time.Since(began))
			}
		}
	}
}

// apiCallUser starts the same call through the JSON API, held with ?wait
// until it ends, over the instances round-robin: what the front door's
// cost compares with.
func apiCallUser(urls []string, token string) user {
	var next atomic.Uint64
	return func(ctx context.Context, st *stats) {
		for ctx.Err() == nil {
			began := time.Now()
			req, _ := http.NewRequestWithContext(ctx, "POST", urls[next.Add(1)%uint64(len(urls))]+"/api/v1/calls?wait=10s",
				strings.NewReader(`{"server":"demo","tool":"`+agentTool+`","arguments":{}}`))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := httpClient.Do(req)
			if err != nil {
				st.failed(ctx, err)
				continue
			}
			var c struct{ Status string }
			err = json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
			switch {
			case err != nil:
				st.failed(ctx, err)
			case resp.StatusCode != http.StatusCreated || c.Status != "complete":
				st.failed(ctx, fmt.Errorf("start: %d, %s", resp.StatusCode, c.Status))
			default:
				st.answered(time.Since(began))
			}
		}
	}
}

// measureAgents measures the agents directly and through Rounds at full
// load, then both paced at the rate through Rounds peaked at and at half of
// it, and prints what Rounds adds. Each series is printed as it ends.
func measureAgents(ctx context.Context, o options, f *fleet, demoURL string, counted, uncounted func() usage) []series {
	fmt.Println()
	fmt.Printf("Agents: %d go-sdk clients (%s, automatic round-trips off), each calling %s, which asks\n", o.users, agentProtocol, agentTool)
	fmt.Println("nothing, one call after another; directly against the demo server, and through Rounds at /mcp/demo")
	fmt.Println("with an API token, spread over the instances round-robin. Rates are calls per second; latency is a")
	fmt.Println("call's, from its POST to its result; max over runs. xacts/call: Postgres transactions per call.")
	header("call")
	run := func(name string, endpoints []string, token string, read func() usage, rate float64) series {
		s := series{name: name}
		for range o.runs {
			pctx, cancel := context.WithCancel(ctx)
			p := newPacer(pctx, rate)
			s.results = append(s.results, measure(ctx, o.users, o.warmup, o.duration, func(int) user {
				return agentUser(endpoints, token, p)
			}, read))
			cancel()
		}
		s.print()
		return s
	}
	front := agentEndpoints(f)
	direct := run("agents, direct", []string{demoURL}, "", uncounted, 0)
	through := run("agents, through Rounds", front, f.token, counted, 0)
	api := series{name: "the same call, JSON API with ?wait"}
	for range o.runs {
		api.results = append(api.results, measure(ctx, o.users, o.warmup, o.duration, func(int) user {
			return apiCallUser(f.urls, f.token)
		}, counted))
	}
	api.print()
	all := []series{direct, through, api}
	peak, _ := meanSpread(through.rates())
	if peak == 0 {
		return all
	}
	// The same rates both ways, so that what differs is Rounds.
	directPeak := run(fmt.Sprintf("agents, direct at %.0f/s", peak), []string{demoURL}, "", uncounted, peak)
	half := run(fmt.Sprintf("agents, through Rounds at %.0f/s (half)", peak/2), front, f.token, counted, peak/2)
	directHalf := run(fmt.Sprintf("agents, direct at %.0f/s (half)", peak/2), []string{demoURL}, "", uncounted, peak/2)
	all = append(all, directPeak, half, directHalf)
	d, _ := meanSpread(direct.rates())
	fmt.Printf("\nagents: %.1f calls/s direct, %.1f through Rounds: ratio %.2f (target ≥ 0.3)\n", d, peak, peak/d)
	fmt.Printf("agents: Rounds adds %s at p50 at the peak (%s through, %s direct at %.0f/s)\n",
		ms(maxP(through, 50)-maxP(directPeak, 50)), ms(maxP(through, 50)), ms(maxP(directPeak, 50)), peak)
	fmt.Printf("agents: at half the peak, Rounds adds %s at p50 and %s at p99 (%s and %s through, %s and %s direct at %.0f/s)\n",
		ms(maxP(half, 50)-maxP(directHalf, 50)), ms(maxP(half, 99)-maxP(directHalf, 99)),
		ms(maxP(half, 50)), ms(maxP(half, 99)), ms(maxP(directHalf, 50)), ms(maxP(directHalf, 99)), peak/2)
	fmt.Printf("agents: Postgres transactions per call through Rounds: %s at the peak, %s at half (target ≤ 2)\n",
		meanXacts(through), meanXacts(half))
	return all
}

// maxP is a series' p50 or p99, the largest over its runs (as printed).
func maxP(s series, p int) time.Duration {
	var out time.Duration
	for _, r := range s.results {
		if p == 50 {
			out = max(out, r.p50)
		} else {
			out = max(out, r.p99)
		}
	}
	return out
}

// meanXacts is the mean of the runs' transactions per call, or "-".
func meanXacts(s series) string {
	var xs []float64
	for _, r := range s.results {
		if r.xacts < 0 {
			return "-"
		}
		xs = append(xs, r.xacts)
	}
	m, _ := meanSpread(xs)
	return fmt.Sprintf("%.2f", m)
}

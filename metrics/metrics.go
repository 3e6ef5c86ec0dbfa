// Package metrics exports what an operator watches, in Prometheus format.
//
// Two kinds of numbers live here. What this instance does (HTTP requests,
// MCP requests) is counted in the process: sum those across instances.
// What the rounds are (pending, finished by outcome, time to answer) and
// the job queue are read from Postgres at scrape time, so every instance
// reports the same cluster-wide value: take max, not sum, across instances.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-rounds/rounds/store"
)

// AnswerBuckets bound the time-to-answer histogram, in seconds.
var AnswerBuckets = []float64{5, 15, 30, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 72 * 3600}

// Metrics holds the app's own registry and its collectors.
type Metrics struct {
	registry     *prometheus.Registry
	allow        []netip.Prefix
	httpSeconds  *prometheus.HistogramVec
	mcpSeconds   *prometheus.HistogramVec
	mcpErrors    *prometheus.CounterVec
	refusals     *prometheus.CounterVec
	again        *prometheus.CounterVec
	slackRefused *prometheus.CounterVec
	handler      http.Handler
}

// New builds the registry. Scrapes read rounds and jobs from st; allow
// lists the addresses that may scrape without an admin's token.
func New(st *store.Store, allow []netip.Prefix, log *slog.Logger) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		allow:    allow,
		httpSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rounds_http_request_duration_seconds",
			Help:    "HTTP requests this instance served, by route pattern, method and status code.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "code"}),
		mcpSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rounds_mcp_request_duration_seconds",
			Help:    "MCP requests this instance sent, by server, method and outcome (result, input_required, error, too_many_rounds).",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"server", "method", "outcome"}),
		mcpErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rounds_mcp_request_errors_total",
			Help: "MCP requests this instance sent that failed, by server and method.",
		}, []string{"server", "method"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rounds_state_refusals_total",
			Help: "Answers a server refused because it no longer knew the round's requestState, by server and what " +
				"this instance did: asked_afresh (the server was asked again, the answers given again) or failed.",
		}, []string{"server", "decision"}),
		again: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rounds_answered_again_total",
			Help: "Rounds this instance answered with a person's earlier answers after asking a server afresh, by server.",
		}, []string{"server"}),
		slackRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rounds_slack_refused_total",
			Help: "Requests to /slack/interactions this instance refused, by reason: signature, timestamp or size.",
		}, []string{"reason"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpSeconds, m.mcpSeconds, m.mcpErrors, m.refusals, m.again, m.slackRefused,
		&dbCollector{st: st, log: log},
	)
	// A failing database query drops its metrics from the scrape, not the
	// whole scrape.
	m.handler = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		Timeout:       10 * time.Second,
	})
	return m
}

// Registry is the app's registry, for tests and for more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Allowed reports whether addr may scrape without a token.
func (m *Metrics) Allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range m.allow {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ObserveHTTP records a served HTTP request. route is the route pattern,
// never the path, so that ids do not multiply the series.
func (m *Metrics) ObserveHTTP(method, route string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.httpSeconds.WithLabelValues(method, route, strconv.Itoa(code)).Observe(d.Seconds())
}

// ObserveMCP records an MCP request: outcome is one of store's Attempt
// outcomes.
func (m *Metrics) ObserveMCP(server, method, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.mcpSeconds.WithLabelValues(server, method, outcome).Observe(d.Seconds())
	if outcome == store.AttemptError {
		m.mcpErrors.WithLabelValues(server, method).Inc()
	}
}

// StateRefused counts a server's refusal of a round's state, and whether
// the server was asked afresh.
func (m *Metrics) StateRefused(server string, afresh bool) {
	if m == nil {
		return
	}
	decision := "failed"
	if afresh {
		decision = "asked_afresh"
	}
	m.refusals.WithLabelValues(server, decision).Inc()
}

// AnsweredAgain counts a round answered with a person's earlier answers.
func (m *Metrics) AnsweredAgain(server string) {
	if m == nil {
		return
	}
	m.again.WithLabelValues(server).Inc()
}

// SlackRefused counts a request to /slack/interactions refused for reason.
func (m *Metrics) SlackRefused(reason string) {
	if m == nil {
		return
	}
	m.slackRefused.WithLabelValues(reason).Inc()
}

// dbCollector reads the cluster-wide numbers from Postgres at each scrape.
type dbCollector struct {
	st  *store.Store
	log *slog.Logger
}

var (
	pendingDesc = prometheus.NewDesc("rounds_pending",
		"Rounds waiting for answers now, by server (from the database; the same on every instance).",
		[]string{"server"}, nil)
	finishedDesc = prometheus.NewDesc("rounds_finished_total",
		"Rounds that ended, by server and outcome: answered, declined, cancelled or expired "+
			"(from the database; the same on every instance, so aggregate with max, not sum).",
		[]string{"server", "outcome"}, nil)
	answerDesc = prometheus.NewDesc("rounds_time_to_answer_seconds",
		"Time from a round's questions to its answers, by server (from the database).",
		[]string{"server"}, nil)
	jobsDesc = prometheus.NewDesc("rounds_job_queue_depth",
		"River jobs not yet finished, by kind and state (from the database).",
		[]string{"kind", "state"}, nil)
)

func (d *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- finishedDesc
	ch <- answerDesc
	ch <- jobsDesc
}

func (d *dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if pending, err := d.st.PendingByServer(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
	} else {
		for _, p := range pending {
			ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(p.N), p.Server)
		}
	}
	if totals, err := d.st.RoundTotals(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(finishedDesc, err)
	} else {
		for _, t := range totals {
			ch <- prometheus.MustNewConstMetric(finishedDesc, prometheus.CounterValue, float64(t.N), t.Server, t.Outcome)
		}
	}
	if hists, err := d.st.AnswerHistograms(ctx, AnswerBuckets); err != nil {
		ch <- prometheus.NewInvalidMetric(answerDesc, err)
	} else {
		for _, h := range hists {
			buckets := make(map[float64]uint64, len(AnswerBuckets))
			for i, le := range AnswerBuckets {
				buckets[le] = h.Buckets[i]
			}
			ch <- prometheus.MustNewConstHistogram(answerDesc, h.Count, h.Sum, buckets, h.Server)
		}
	}
	if jobs, err := d.st.JobQueue(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
	} else {
		// The app's own kinds are always there, at zero when idle, so a
		// graph of the queue has no gaps.
		depth := map[[2]string]int64{}
		for _, kind := range []string{"mcp_request", "round_expiry"} {
			for _, state := range []string{"available", "scheduled", "retryable", "running"} {
				depth[[2]string{kind, state}] = 0
			}
		}
		for _, j := range jobs {
			depth[[2]string{j.Kind, j.State}] += j.N
		}
		for k, n := range depth {
			ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
		}
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/mcp-rounds/rounds/localproc"
	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/metrics"
	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// Config tunes the engine. Zero values take the documented defaults.
type Config struct {
	// RoundTTL is how long a round stays answerable; default 24h.
	RoundTTL time.Duration
	// MaxRounds caps the rounds of one asking of a call; default 10.
	MaxRounds int
	// MaxRestarts caps how often Rounds asks a server afresh by itself for
	// one call, after the server refused a round's state; default 3,
	// negative for never (see afresh.go).
	MaxRestarts int
	// RequestTimeout bounds one MCP request; default 10s.
	RequestTimeout time.Duration
	// RescueAfter is when a running job is taken for orphaned and run
	// again; default RequestTimeout + 2s. River's rescuer runs on the
	// leader every 30s and when an instance becomes leader, so an orphan
	// is picked up within a minute.
	RescueAfter time.Duration
	// Workers is how many River jobs one instance runs at once, and again
	// how many requests it sends directly (request.go): up to twice as many
	// requests at once in all; default 50. An instance with local servers
	// runs as many again from its own queue (requests for its processes).
	Workers int
	// Capabilities says whether forms and URL pages are declared to every
	// server; its Sampling and Roots are unused: each server's own
	// settings decide those.
	Capabilities mcpclient.Capabilities
	// InstanceID names this process in River, the audit log and the
	// instances list; default NewInstanceID().
	InstanceID string
	// Version is the build's version, for the instances list.
	Version string
	// ExpiryInterval is how often rounds past their deadline are expired;
	// default 30s. HeartbeatInterval is how often the instance says it is
	// alive; default 5s.
	ExpiryInterval    time.Duration
	HeartbeatInterval time.Duration
	// Metrics records MCP requests when set.
	Metrics *metrics.Metrics
	// AddWorkers, when set, adds the workers of jobs other packages own
	// (Slack's posts and updates) to the engine's.
	AddWorkers func(*river.Workers) error
	// HeldTimeout is how long a handshake-era server's mid-call question
	// waits for an answer before it is cancelled; default 10 minutes, a
	// common server-side timeout. A server may have its own.
	HeldTimeout time.Duration
	// Notifier wakes a held call when its question is answered, on any
	// instance; without it the holder only polls. Made with RiverTopics,
	// it carries River's notifications too (see listener.go).
	Notifier *store.Notifier
	// Mail sends round mail; nil means none is sent. PublicURL starts the
	// links in it.
	Mail      *Mail
	PublicURL string
	// MailLinks signs the links a round's mail decides with (one per
	// choice of a yes/no or single-choice round); nil for none.
	MailLinks *maillink.Signer
	// MailBackoff is the wait before each next attempt of a mail the SMTP
	// server did not take; default DefaultMailBackoff.
	MailBackoff []time.Duration
	// WebhookAllowPrivate lets webhooks reach loopback and private
	// addresses. WebhookBackoff is the wait before each next attempt of a
	// failed delivery; default DefaultWebhookBackoff.
	WebhookAllowPrivate bool
	WebhookBackoff      []time.Duration
	// Retention is how long finished calls are kept; default 90 days.
	// AuditRetention is how long audit entries are kept; default 400 days
	// (at least a day). RetentionInterval is how often the retention job
	// runs; default 10 minutes.
	Retention         time.Duration
	AuditRetention    time.Duration
	RetentionInterval time.Duration
	// Auth renews OAuth connections that have run out; without it they
	// are used until the server refuses them.
	Auth *mcpauth.Client
	// RetryWindow is how long a request the server could not take (see
	// mcpclient.Transient) is sent again by itself before the call fails;
	// default 10 minutes, negative for never. RetryBackoff is the first
	// wait between tries, default 1s; each wait is as long as the time
	// already spent trying, up to a minute, or what the server asked for.
	RetryWindow  time.Duration
	RetryBackoff time.Duration
	// Locals are the local servers (stdio) this instance runs (see
	// localproc, and local.go for their calls' jobs).
	// At most StderrLogLines lines of each one's stderr are logged every
	// StderrLogPeriod; default 1000 a minute.
	Locals          *mcpclient.Locals
	StderrLogLines  int
	StderrLogPeriod time.Duration
	// FetchPollInterval is how often an instance looks for jobs it was not
	// told of; default River's (1s). Jobs are announced as they are
	// inserted, so this only matters when an announcement is lost.
	FetchPollInterval time.Duration
	// TaskWaitPoll is how often at most a task is polled while one of its
	// questions waits for a person; default 30s. While it works, it is
	// polled as often as the server asks. A task a person stopped whose
	// server still says it works is polled this often too.
	TaskWaitPoll time.Duration
	// JobStuckThreshold is how long past its timeout a job runs before
	// River says it appears stuck; default River's (10s). Tests shorten it.
	JobStuckThreshold time.Duration
	// TaskWorkers is how many task polls one instance runs at once, in a
	// queue of their own (queue.TaskQueue); default 10. Other jobs never
	// wait for them.
	TaskWorkers int
	// TaskMaxLifetime is how long a task the server gave no lifetime
	// (ttlMs) is followed before its call fails; default 7 days.
	TaskMaxLifetime time.Duration
	// Now is the engine's clock, default time.Now: what the dates it
	// decides on are compared with (deadlines, retries, tokens, cached
	// tools), so a test can set the time rather than wait for it. Timers
	// and River's schedule keep real time.
	Now func() time.Time
}

// The defaults of the settings people most often change; the app's
// configuration starts from them too.
const (
	DefaultRoundTTL       = 24 * time.Hour
	DefaultMaxRounds      = 10
	DefaultMaxRestarts    = 3
	DefaultRequestTimeout = 10 * time.Second
	DefaultHeldTimeout    = 10 * time.Minute
	DefaultRetryWindow    = 10 * time.Minute
	DefaultTaskWaitPoll   = 30 * time.Second
	DefaultTaskWorkers    = 10
	DefaultTaskLifetime   = 7 * 24 * time.Hour
	DefaultRetention      = 90 * 24 * time.Hour
	DefaultAuditRetention = 400 * 24 * time.Hour
)

func (c Config) withDefaults() Config {
	if c.RoundTTL <= 0 {
		c.RoundTTL = DefaultRoundTTL
	}
	if c.MaxRounds <= 0 {
		c.MaxRounds = DefaultMaxRounds
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = DefaultMaxRestarts
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RescueAfter <= c.RequestTimeout {
		c.RescueAfter = c.RequestTimeout + 2*time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 50
	}
	if c.InstanceID == "" {
		c.InstanceID = NewInstanceID()
	}
	if c.ExpiryInterval <= 0 {
		c.ExpiryInterval = 30 * time.Second
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.HeldTimeout <= 0 {
		c.HeldTimeout = DefaultHeldTimeout
	}
	if len(c.MailBackoff) == 0 {
		c.MailBackoff = DefaultMailBackoff
	}
	if len(c.WebhookBackoff) == 0 {
		c.WebhookBackoff = DefaultWebhookBackoff
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.AuditRetention <= 0 {
		c.AuditRetention = DefaultAuditRetention
	}
	c.AuditRetention = max(c.AuditRetention, 24*time.Hour)
	if c.RetentionInterval <= 0 {
		c.RetentionInterval = 10 * time.Minute
	}
	if c.RetryWindow == 0 {
		c.RetryWindow = DefaultRetryWindow
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.TaskWaitPoll <= 0 {
		c.TaskWaitPoll = DefaultTaskWaitPoll
	}
	if c.StderrLogLines <= 0 {
		c.StderrLogLines = localproc.DefaultStderrLogLines
	}
	if c.StderrLogPeriod <= 0 {
		c.StderrLogPeriod = localproc.DefaultStderrLogPeriod
	}
	if c.TaskWorkers <= 0 {
		c.TaskWorkers = DefaultTaskWorkers
	}
	if c.TaskMaxLifetime <= 0 {
		c.TaskMaxLifetime = DefaultTaskLifetime
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Engine owns the River client that works the request jobs.
type Engine struct {
	store *store.Store
	mcp   *mcpclient.Client
	cfg   Config
	log   *slog.Logger
	river *river.Client[pgx.Tx]
	beat  *heartbeat
	// webhooks posts webhook events.
	webhooks *http.Client

	// Sessions held open for handshake-era servers, by job; Stop closes
	// them, since they cannot outlive this process.
	holdMu   sync.Mutex
	holding  map[int64]heldJob
	stopping bool

	// locals runs the local servers' long-lived processes.
	locals *localproc.Supervisor
	// direct sends the requests this instance commits (request.go).
	direct *directSends
}

// New builds an engine over pool. Call Start to begin working jobs.
func New(pool *pgxpool.Pool, st *store.Store, mc *mcpclient.Client, cfg Config, log *slog.Logger) (*Engine, error) {
	e := &Engine{store: st, mcp: mc, cfg: cfg.withDefaults(), log: log, holding: map[int64]heldJob{}}
	e.locals = localproc.New(st, localproc.Config{Locals: e.cfg.Locals, InstanceID: e.cfg.InstanceID,
		StderrLogLines: e.cfg.StderrLogLines, StderrLogPeriod: e.cfg.StderrLogPeriod}, log)
	e.direct = &directSends{slots: make(chan struct{}, e.cfg.Workers)}
	e.webhooks = webhookClient(e.cfg.WebhookAllowPrivate, e.cfg.RequestTimeout)
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &mailWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &webhookWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &requestWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &expiryWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &retentionWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &taskWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &taskCancelWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &escalateWorker{e: e}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &deadlineWorker{e: e}); err != nil {
		return nil, err
	}
	if cfg.AddWorkers != nil {
		if err := cfg.AddWorkers(workers); err != nil {
			return nil, err
		}
	}
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: e.cfg.Workers},
		// Task polls may each take a request's whole timeout, and there may
		// be thousands: they have workers of their own.
		queue.TaskQueue: {MaxWorkers: e.cfg.TaskWorkers}}
	if len(e.cfg.Locals.Names()) > 0 {
		// Retries that must reach this instance's local processes.
		queues[queue.LocalQueue(e.cfg.InstanceID)] = river.QueueConfig{MaxWorkers: e.cfg.Workers}
	}
	rc, err := river.NewClient(newDriver(pool, e.cfg.Notifier), &river.Config{
		ID:           e.cfg.InstanceID,
		PeriodicJobs: e.periodicJobs(),
		Queues:       queues,
		Workers:      workers,
		JobTimeout:   e.cfg.RequestTimeout,
		// Jobs are fetched when their insert's notification arrives: the
		// instance that inserted them hears at once (store.Options.Notifier). The
		// first fetch after a quiet spell is immediate; under load the
		// cooldown gathers the jobs inserted meanwhile into one fetch (a
		// Postgres transaction each), rather than one per job.
		FetchCooldown:        5 * time.Millisecond,
		FetchPollInterval:    e.cfg.FetchPollInterval,
		RescueStuckJobsAfter: e.cfg.RescueAfter,
		JobStuckThreshold:    e.cfg.JobStuckThreshold,
		// A job holding a session for a person's answer is not stuck:
		// River's warning about it is told as what it is (riverlog.go).
		Logger: slog.New(&riverLog{next: log.With("component", "river").Handler(), heldCall: e.heldCall, told: &sync.Map{}}),
	})
	if err != nil {
		return nil, err
	}
	e.river = rc
	if n := e.cfg.Notifier; n != nil {
		// Say which changes to sign-ins this instance has heard of, so the
		// request that made one can wait for every instance (store/authcache.go).
		n.OnAuthHeard(func(seq int64) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := st.AuthHeard(ctx, e.cfg.InstanceID, seq); err != nil {
				log.Warn("recording a change to sign-ins heard", "err", err)
			}
		})
	}
	return e, nil
}

// Start begins working jobs and beating the instance's heartbeat.
func (e *Engine) Start(ctx context.Context) error {
	e.locals.Start(ctx)
	if err := e.river.Start(ctx); err != nil {
		e.locals.Stop()
		return err
	}
	e.startHeartbeat(ctx)
	return nil
}

// Stop finishes the jobs in hand and stops.
func (e *Engine) Stop(ctx context.Context) error {
	e.holdMu.Lock()
	e.stopping = true
	for _, h := range e.holding {
		h.cancel()
	}
	e.holdMu.Unlock()
	e.direct.stop(ctx)
	err := e.river.Stop(ctx)
	e.locals.Stop()
	return errors.Join(err, e.stopHeartbeat(ctx))
}

// Config returns the engine's configuration, defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// MCP returns the engine's MCP client.
func (e *Engine) MCP() *mcpclient.Client { return e.mcp }

// storeTimeout bounds the writes that record what a request came back with.
const storeTimeout = 30 * time.Second

// autoAnswers answers a round that asks only for roots, from the server's
// configured roots, so no person is asked. Any other round gets nil: a
// person answers it, and the roots with it.
func autoAnswers(qs []mcpclient.Question, roots json.RawMessage) json.RawMessage {
	if len(qs) == 0 {
		return nil
	}
	responses := map[string]json.RawMessage{}
	for _, q := range qs {
		if q.Kind != mcpclient.KindRoots {
			return nil
		}
		responses[q.Key] = store.RootsResult(roots)
	}
	b, err := json.Marshal(responses)
	if err != nil {
		return nil
	}
	return b
}

// autoAnswersUnlessAgent is autoAnswers, but for a round that asks the
// agent: an agent that declared roots gives its own, as it would to the
// server directly.
func autoAnswersUnlessAgent(qs []mcpclient.Question, roots json.RawMessage, asks *string) json.RawMessage {
	if asks != nil && *asks == store.AsksAgent {
		return nil
	}
	return autoAnswers(qs, roots)
}

func mcpRoots(raw json.RawMessage) []mcpclient.Root {
	var out []mcpclient.Root
	for _, r := range store.ParseRoots(raw) {
		out = append(out, mcpclient.Root{URI: r.URI, Name: r.Name})
	}
	return out
}

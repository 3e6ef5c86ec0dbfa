package queue

import "github.com/riverqueue/river"

// The jobs of Rounds, by kind. Each kind's worker is in the engine.

// RequestArgs is the job that sends one MCP request: the first request of a
// call (Seq 0) or the retry carrying the answers to round Seq.
type RequestArgs struct {
	CallID string `json:"call_id"`
	Seq    int    `json:"seq"`
}

// Kind names the job for River.
func (RequestArgs) Kind() string { return "mcp_request" }

// InsertOpts lets a job orphaned by a dead instance be rescued and run again.
func (RequestArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 5} }

// TaskArgs is the job that polls a call's task until it ends. It snoozes
// between polls, so one job serves the task's whole life.
type TaskArgs struct {
	CallID string `json:"call_id"`
}

// Kind is River's name for the job.
func (TaskArgs) Kind() string { return "task_poll" }

// TaskPollAttempts is how many failed polls in a row a task survives
// before its call fails (a snoozed poll is not an attempt).
const TaskPollAttempts = 12

// InsertOpts bounds the polls that fail.
func (TaskArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: TaskPollAttempts, Queue: TaskQueue}
}

// TaskCancelArgs is the job that asks the server to stop a call's task,
// once a person stopped the call.
type TaskCancelArgs struct {
	CallID string `json:"call_id"`
}

// Kind is River's name for the job.
func (TaskCancelArgs) Kind() string { return "task_cancel" }

// InsertOpts tries a few times: the server may be down for a moment. A
// stop waits behind the task polls, not behind other jobs.
func (TaskCancelArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, Queue: TaskQueue}
}

// EscalateArgs is the job that escalates round Seq of a call nobody
// answered in time.
type EscalateArgs struct {
	CallID string `json:"call_id"`
	Seq    int    `json:"seq"`
}

// Kind names the job for River.
func (EscalateArgs) Kind() string { return "round_escalate" }

// DeadlineArgs is the job that answers round Seq of a call at its
// deadline, as its on_expiry says.
type DeadlineArgs struct {
	CallID string `json:"call_id"`
	Seq    int    `json:"seq"`
}

// Kind names the job for River.
func (DeadlineArgs) Kind() string { return "round_deadline" }

// Kinds of round mail.
const (
	MailWaiting  = "waiting"
	MailReminder = "reminder"
)

// MailArgs is the job that mails one person about one round: that it
// waits for them, or (a reminder) that a quarter of its time is left.
type MailArgs struct {
	CallID    string `json:"call_id"`
	Seq       int    `json:"seq"`
	Recipient string `json:"recipient"`
	Mail      string `json:"mail"` // MailWaiting or MailReminder
}

// Kind names the job for River.
func (MailArgs) Kind() string { return "round_mail" }

// MailAttempts is how many times a mail is tried: with the engine's
// backoff, about four days. A mail about a round that no longer waits is
// dropped at its next attempt.
const MailAttempts = 100

// InsertOpts retries a mail the SMTP server did not take.
func (MailArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: MailAttempts} }

// WebhookArgs is the job that posts one webhook event; every attempt sends
// the same stored id and body.
type WebhookArgs struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind names the job for River.
func (WebhookArgs) Kind() string { return "webhook_delivery" }

// WebhookAttempts is how many times an event is posted before it is given
// up; the engine's backoff spreads them over more than a day.
const WebhookAttempts = 9

// InsertOpts allows for a receiver that is down for a day.
func (WebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: WebhookAttempts}
}

// ExpiryArgs is the periodic job that expires rounds past their deadline.
type ExpiryArgs struct{}

// Kind names the job for River.
func (ExpiryArgs) Kind() string { return "round_expiry" }

// RetentionArgs is the periodic job that deletes finished calls older than
// RETENTION, and audit entries older than AUDIT_RETENTION.
type RetentionArgs struct{}

// Kind names the job for River.
func (RetentionArgs) Kind() string { return "retention" }

// TaskQueue is River's queue of task polls and stops, worked by workers of
// their own, so that tasks never hold the workers other jobs need.
const TaskQueue = "tasks"

// SlackPostArgs is the job that posts round Seq of a call to Slack: to
// the assignee by direct message, or to their team's channel.
type SlackPostArgs struct {
	CallID string `json:"call_id"`
	Seq    int    `json:"seq"`
}

// Kind names the job for River.
func (SlackPostArgs) Kind() string { return "slack_post" }

// SlackAttempts is how many times a Slack post or update is tried; the
// River's backoff spreads them over about half a day, so an outage of Slack
// delays its messages, never an answer in Rounds.
const SlackAttempts = 12

// InsertOpts retries a post Slack did not take.
func (SlackPostArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: SlackAttempts}
}

// SlackUpdateArgs is the job that updates the Slack messages of round Seq
// of a call to what the round is now: answered (by whom, when), expired,
// escalated or cancelled, its buttons gone.
type SlackUpdateArgs struct {
	CallID string `json:"call_id"`
	Seq    int    `json:"seq"`
}

// Kind names the job for River.
func (SlackUpdateArgs) Kind() string { return "slack_update" }

// InsertOpts retries an update Slack did not take.
func (SlackUpdateArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: SlackAttempts}
}

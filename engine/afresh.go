package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// A server may forget a question before its answer comes back: mcp 2.0
// and FastMCP 4 seal each round's requestState with a time limit (ten
// minutes by default) and a key made when the process starts, and refuse
// it after either runs out (mcpclient.StateExpired). Each request of
// 2026-07-28 stands alone, so Rounds then asks the server afresh: it sends
// the call's first request again, and answers each round the server
// returns with the answers given to the very same questions before, until
// a round differs. That round, and every one after it, goes to a person,
// with what they answered before filled in. Nothing is answered for a
// person that they did not answer.

// freshState is how young a refused state must be for Rounds to take the
// server for one that refuses its own state at once: asking it afresh
// again would only loop.
const freshState = time.Minute

// Sentences for a call that ends because the server forgot its questions.
const (
	forgotten = "The server no longer knew this call's questions when your answers reached it " +
		"(it keeps them for a limited time, and this answer came %s after the question)."
	startAgain = " Start the call again: the server asks afresh, and you answer it, your earlier answers filled in."
	replayOff  = forgotten + " An administrator has set Rounds not to give answers again to this server." + startAgain
	refusesOwn = "The server refused the state of its own question %s after sending it, so asking it afresh would not help." + startAgain
	tooOften   = forgotten + " Rounds asked it afresh %s for this call already, and stops there." + startAgain
	never      = forgotten + " Rounds is set not to ask a server afresh by itself." + startAgain
)

// stateRefused handles the server's refusal of the state a round's answers
// went back with: it asks the server afresh, or ends the call with a
// sentence that says why not. The call's next request, by a retry or at
// once, goes without answers or state.
func (e *Engine) stateRefused(ctx context.Context, a *store.Attempt, o store.Outcome) error {
	c, r := a.Call, a.Round
	age := e.cfg.Now().Sub(r.CreatedAt)
	refusal := store.StateRefusal{Age: age, Server: c.ServerName, Instance: e.cfg.InstanceID}
	automatic := r.AnsweredBy != nil && (*r.AnsweredBy == store.AnsweredAgain || *r.AnsweredBy == store.AnsweredAutomatically)
	switch {
	case !c.ServerReplay:
		refusal.Message = fmt.Sprintf(replayOff, HumanDuration(age))
	case automatic && age < freshState:
		refusal.Message = fmt.Sprintf(refusesOwn, HumanDuration(age))
	case e.cfg.MaxRestarts < 0:
		refusal.Message = fmt.Sprintf(never, HumanDuration(age))
	case c.Restarts >= e.cfg.MaxRestarts:
		refusal.Message = fmt.Sprintf(tooOften, HumanDuration(age), times(c.Restarts))
	default:
		refusal.Afresh = true
	}
	e.cfg.Metrics.StateRefused(c.ServerName, refusal.Afresh)
	return e.store.RefuseState(ctx, c.ID, r.Seq, refusal, o)
}

// answeredBefore returns the round whose answers answer next again, or
// nil: the round at next's place in the asking before, when it asked the
// very same questions and was answered, and every round of this asking so
// far was answered again. After the first round that went to a person,
// what the server asks may hang on their new answer, so nothing more is
// answered for them.
func answeredBefore(a *store.Attempt, next *mcpclient.Round) *store.Round {
	before := a.Before
	if before == nil || !a.Call.ServerReplay || before.Status != store.RoundAnswered || before.Responses == nil {
		return nil
	}
	// A person's retry of a call that stopped asks them anew, their
	// earlier answers filled in: only Rounds' own asking afresh gives them.
	if !(a.Afresh() && a.Round.AskedAfresh) && !a.Round.AnsweredAgain() {
		return nil
	}
	if !mcpclient.SameQuestions(before.InputRequests, next.InputRequests) {
		return nil
	}
	return before
}

// HumanDuration says a duration in a person's words: "11 minutes",
// "40 seconds", "2 hours 5 minutes", "3 days".
func HumanDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d < time.Minute:
		return plural(max(int64(d/time.Second), 1), "second")
	case d < time.Hour:
		return plural(int64(d/time.Minute), "minute")
	case d < 24*time.Hour:
		h, m := int64(d/time.Hour), int64(d%time.Hour/time.Minute)
		if m == 0 {
			return plural(h, "hour")
		}
		return plural(h, "hour") + " " + plural(m, "minute")
	default:
		return plural(int64(d/(24*time.Hour)), "day")
	}
}

// times says how many times: "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

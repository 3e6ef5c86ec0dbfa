package agents

import (
	"context"
	"encoding/json"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// answerRound answers round seq of call callID with an agent's
// inputResponses, checked as the API checks a person's (but for roots,
// which are the agent's own: round.AgentAnswer), once mine says
// the call, as the answer's transaction reads it, is the agent's to
// answer. A round no longer waiting for the agent is errUsedState (or
// round.ErrNotWaiting); answers that do not fit are errUnfit, with the
// checked answer saying why. detail goes into the audit entry.
func (d *Door) answerRound(ctx context.Context, q *Request, callID string, seq int, responses json.RawMessage,
	mine func(*store.Call) bool, detail map[string]any) (*store.Call, *round.Answer, error) {
	var a *round.Answer
	call, err := d.o.Engine.Answer(ctx, store.Answer{CallID: callID, Seq: seq, Person: q.Who.User.Name,
		Decide: func(at store.Answering) (store.Decision, error) {
			if !mine(at.Call) || at.Round.Status != store.RoundPending || at.Round.Asks == nil || *at.Round.Asks != store.AsksAgent {
				return store.Decision{}, errUsedState
			}
			var err error
			if a, err = round.AgentAnswer(at.Call, at.Round, responses); err != nil {
				return store.Decision{}, err
			}
			if !a.Fits() {
				return store.Decision{}, errUnfit
			}
			outcome, counts := round.Outcome(a.Responses)
			more := map[string]any{"seq": at.Round.Seq, "server": at.Call.ServerName,
				"accept": counts.Accept, "decline": counts.Decline, "cancel": counts.Cancel}
			for k, v := range detail {
				more[k] = v
			}
			entry := q.audit("round."+outcome, at.Call.ID, more)
			return store.Decision{Responses: a.Responses, By: q.Who.User.Name, Refusal: a.Refusal, Audit: []store.AuditEntry{*entry}}, nil
		}})
	return call, a, err
}

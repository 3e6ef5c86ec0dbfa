package agents

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

// OutcomeURIPrefix starts the URI of a call's outcome: an agent reads the
// resource rounds://calls/{id} on any server at Rounds to learn how a call
// that went on in Rounds ended. Rounds answers it itself; the server behind
// never sees it.
const OutcomeURIPrefix = "rounds://calls/"

// askAgent answers with the round's questions for the agent to answer:
// an input_required result with the server's inputRequests as they are,
// and a requestState of Rounds' own.
func (d *Door) askAgent(q *Request, call *store.Call, r *store.Round) error {
	state, err := d.seal(q, call.ID, r.Seq)
	if err != nil {
		return err
	}
	return q.ResultOf(map[string]any{"resultType": "input_required", "inputRequests": r.InputRequests, "requestState": state})
}

// outcome answers resources/read of rounds://calls/{id}: the call's result
// as JSON text once it ended, else where it stands. Only its owner, whom
// its rounds are assigned to, and admins may read it.
func (d *Door) outcome(q *Request, id string) error {
	call, err := d.o.Store.CallShown(q.Ctx, id)
	if err == nil {
		err = d.mayRead(q.Ctx, q.Who.User, call)
	}
	if isNotFound(err) {
		return &RPCError{Status: http.StatusOK, Code: -32602, Message: "There is no call " + id + " you may read.",
			Data: map[string]string{"uri": OutcomeURIPrefix + id}}
	}
	if err != nil {
		return err
	}
	body := map[string]any{"call": call.ID, "status": call.Status, "server": call.ServerName}
	switch {
	case call.Status == store.CallComplete:
		body["result"] = call.Result
	case call.Finished():
		if call.Error != nil {
			body["error"] = *call.Error
		}
	default:
		body["message"] = waitingFor(call, nil) + ". Read this resource again later, or open " + d.o.PublicURL + "/calls/" + url.PathEscape(call.ID) + "."
	}
	text, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return q.ResultOf(q.cacheable(map[string]any{"resultType": "complete", "contents": []map[string]string{{
		"uri": OutcomeURIPrefix + call.ID, "mimeType": "application/json", "text": string(text)}}}))
}

// mayRead says whether user may read call: its owner, whom its rounds are
// assigned to, or an admin; anyone else finds nothing.
func (d *Door) mayRead(ctx context.Context, u *store.User, call *store.Call) error {
	if u.IsAdmin || call.Owner == u.Name {
		return nil
	}
	if call.Assignee != nil {
		ok, err := d.o.Store.IsAssignee(ctx, *call.Assignee, u.Name)
		if err != nil || ok {
			return err
		}
	}
	return store.ErrNotFound
}

// cancelled handles notifications/cancelled: the call the named request
// started is cancelled.
func (d *Door) cancelled(q *Request) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(q.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.Ctx), 10*time.Second)
	defer cancel()
	id, err := d.o.Store.AgentCall(ctx, q.Who.User.Name, string(p.RequestID), q.Who.TokenID, q.Who.OAuthClient)
	if err != nil {
		if !isNotFound(err) {
			d.o.Log.WarnContext(ctx, "finding the call an agent cancelled", "err", err)
		}
		return
	}
	_ = d.cancelCall(ctx, q, id)
}

// isConflict reports a store.ErrConflict (a call already ended).
func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }

// pathEscape escapes a server's name for a URL path.
func pathEscape(s string) string { return url.PathEscape(s) }

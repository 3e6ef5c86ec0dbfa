package agents

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// askKey is the key that seals the ids of the questions asked of agents.
func (d *Door) askKey() []byte { return askIDKey(d.o.StateKey) }

// askOnStream asks a session's agent the round's questions on the open
// request's stream: one JSON-RPC request each, as the server wrote it.
func (d *Door) askOnStream(q *Request, call *store.Call, r *store.Round) error {
	qs, err := mcpclient.ParseQuestions(r.InputRequests)
	if err != nil {
		return err
	}
	s := q.startStream()
	for _, question := range qs {
		id, err := askID{Call: call.ID, Seq: r.Seq, Key: question.Key}.seal(d.askKey(), q.session.ID)
		if err != nil {
			return err
		}
		b, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      string          `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params,omitempty"`
		}{"2.0", id, question.Method, question.Params})
		if err != nil {
			return err
		}
		if err := s.event(b); err != nil {
			return err
		}
	}
	return nil
}

// answerTimeout bounds the storing of an agent's answer, which goes on if
// the agent hangs up meanwhile.
const answerTimeout = 30 * time.Second

// answered takes a session's agent's response to a question Rounds asked
// it. Each answer is kept; the one that completes the round answers it,
// on whichever instance it arrives, and the instance holding the stream
// hears the call move on. A round answered meanwhile (in Rounds, or past
// its deadline) takes the answer as late, with 202 all the same.
func (d *Door) answered(q *Request, result json.RawMessage, rpcErr *wireError) {
	var id string
	_ = json.Unmarshal(q.ID, &id)
	ask, err := openAskID(d.askKey(), q.session.ID, id)
	if err != nil {
		q.Error(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "This response answers no question Rounds asked in this session.", nil)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.Ctx), answerTimeout)
	defer cancel()
	err = d.takeAnswer(ctx, q, ask, result, rpcErr)
	var re *RPCError
	switch {
	case errors.As(err, &re):
		q.Error(http.StatusBadRequest, re.Code, re.Message, re.Data)
	case err != nil && !isConflict(err) && !isNotFound(err):
		q.fail(err)
	default:
		q.W.WriteHeader(http.StatusAccepted)
	}
}

// takeAnswer keeps the answer to one question, and answers the round once
// it has them all.
func (d *Door) takeAnswer(ctx context.Context, q *Request, ask askID, result json.RawMessage, rpcErr *wireError) error {
	r, err := d.o.Store.Round(ctx, ask.Call, ask.Seq)
	if err != nil {
		return err
	}
	if r.Status != store.RoundPending || r.Asks == nil || *r.Asks != store.AsksAgent {
		return nil
	}
	qs, err := mcpclient.ParseQuestions(r.InputRequests)
	if err != nil {
		return err
	}
	var keys []string
	kind := ""
	for _, question := range qs {
		keys = append(keys, question.Key)
		if question.Key == ask.Key {
			kind = question.Kind
		}
	}
	entry, said, ok := responseEntry(kind, result, rpcErr)
	if !ok {
		return invalidParams("The response to " + ask.Key + " must be a JSON object, as the request's method gives it.")
	}
	all, err := d.o.Store.AgentAnswerPart(ctx, ask.Call, ask.Seq, keys, ask.Key, entry)
	if err != nil || all == nil {
		return err
	}
	responses, err := mcpclient.MarshalRaw(all)
	if err != nil {
		return err
	}
	detail := map[string]any{}
	if said != "" {
		detail["agent_said"] = said
	}
	mine := func(c *store.Call) bool { return c.Agent != nil && c.Agent.Session == q.session.ID }
	_, a, err := d.answerRound(ctx, q, ask.Call, ask.Seq, responses, mine, detail)
	if !errors.Is(err, errUnfit) {
		return err
	}
	// An answer that does not fit its question cannot be asked again (the
	// agent answered): it stands refused, and the audit says why.
	for _, question := range a.Questions {
		if _, bad := a.Misfit[question.Key]; bad {
			all[question.Key] = refusalOf(question)
		}
	}
	if responses, err = mcpclient.MarshalRaw(all); err != nil {
		return err
	}
	detail["agent_unfit"] = a.Misfit.String()
	_, _, err = d.answerRound(ctx, q, ask.Call, ask.Seq, responses, mine, detail)
	return err
}

// refusalOf is what stands in for an answer of the agent's that does not
// fit the question: it is cancelled (a sampling request declined, no
// roots given), and the server decides what follows.
func refusalOf(q round.Question) json.RawMessage {
	switch q.Kind {
	case mcpclient.KindSampling:
		return json.RawMessage(`{"action":"decline"}`)
	case mcpclient.KindRoots:
		return json.RawMessage(`{"roots":[]}`)
	}
	return json.RawMessage(`{"action":"cancel"}`)
}

// sessionCancelled handles a session's notifications/cancelled: the call
// that the named request of this session started is cancelled, as the
// API's cancel does, and its page says the agent stopped it.
func (d *Door) sessionCancelled(q *Request) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(q.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.Ctx), 10*time.Second)
	defer cancel()
	id, err := d.o.Store.AgentRequestCall(ctx, q.session.ID, string(p.RequestID))
	if err != nil {
		if !isNotFound(err) {
			d.o.Log.WarnContext(ctx, "finding the call an agent cancelled", "err", err)
		}
		return
	}
	_ = d.cancelCall(ctx, q, id)
}

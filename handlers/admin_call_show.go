package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// adminCallShow shows one call of anyone: each round's questions and
// answers (personal data, so the view is audited), who answered and when,
// and every request attempt with its error and duration.
func (h *Handler) adminCallShow(c echo.Context) error {
	vm, err := h.adminCallVM(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	vm.Notice = adminNotices[c.QueryParam("done")]
	h.audit(c, "admin.call.viewed", vm.ID, nil)
	return render(c, http.StatusOK, views.AdminCallPage(*vm))
}

func (h *Handler) adminCallVM(ctx context.Context, id string) (*views.AdminCallVM, error) {
	call, err := h.store.Call(ctx, id)
	if err != nil {
		return nil, err
	}
	rounds, err := h.store.Rounds(ctx, call.ID)
	if err != nil {
		return nil, err
	}
	attempts, err := h.store.Attempts(ctx, call.ID)
	if err != nil {
		return nil, err
	}
	base := "/admin/calls/" + call.ID
	vm := &views.AdminCallVM{
		ID: call.ID, Server: call.ServerName, Owner: call.Owner, Method: call.Method, Target: call.Target,
		Status: call.Status, Created: call.CreatedAt, Updated: call.UpdatedAt, Retryable: call.Retryable,
		RetryAction: base + "/retry", PersonHref: "/calls/" + call.ID,
	}
	if call.Error != nil {
		vm.Error = *call.Error
	}
	if vm.Reach, err = h.reachVM(ctx, call); err != nil {
		return nil, err
	}
	if call.Status == store.CallInputRequired {
		choices, err := h.assigneeChoices(ctx)
		if err != nil {
			return nil, err
		}
		vm.Reassign = views.ReassignVM{Action: base + "/assignee", Assignee: vm.Reach.Assignee, Choices: choices}
		if vm.Reassign.Assignee == "" {
			vm.Reassign.Assignee = call.Owner
		}
	}
	bySeq := map[int][]views.AttemptVM{}
	for _, a := range attempts {
		av := views.AttemptVM{
			Instance: a.Instance, Started: a.StartedAt, Outcome: a.Outcome,
			Duration: (time.Duration(a.DurationMs) * time.Millisecond).String(),
		}
		if a.Error != nil {
			av.Error = *a.Error
		}
		bySeq[a.Seq] = append(bySeq[a.Seq], av)
	}
	vm.First = bySeq[0]
	for i := range rounds {
		r := &rounds[i]
		rv := views.AdminRoundVM{
			Seq: r.Seq, Status: r.Status, Created: r.CreatedAt, ExpiresAt: r.ExpiresAt, AnsweredAt: r.AnsweredAt,
			Pending:      r.Status == store.RoundPending && r.Seq == call.CurrentSeq,
			ExpireAction: base + "/rounds/" + strconv.Itoa(r.Seq) + "/expire",
			CancelAction: base + "/rounds/" + strconv.Itoa(r.Seq) + "/cancel",
			Attempts:     bySeq[r.Seq],
			Questions:    adminQuestions(r),
		}
		if r.AnsweredBy != nil {
			rv.AnsweredBy = *r.AnsweredBy
		}
		rv.Outcome = roundOutcome(r)
		vm.Rounds = append(vm.Rounds, rv)
	}
	return vm, nil
}

// adminQuestions lists a round's questions with the answers given, if any.
// The request state is not read.
func adminQuestions(r *store.Round) []views.AdminQuestionVM {
	qs, _ := mcpclient.ParseQuestions(r.InputRequests)
	var answers map[string]struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	var raw map[string]json.RawMessage
	if r.Responses != nil {
		_ = json.Unmarshal(r.Responses, &answers)
		_ = json.Unmarshal(r.Responses, &raw)
	}
	out := make([]views.AdminQuestionVM, 0, len(qs))
	for _, q := range qs {
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(q.Params, &p)
		if p.Message == "" {
			p.Message = kindSummary(q)
		}
		qv := views.AdminQuestionVM{Key: q.Key, Kind: q.Kind, Message: p.Message}
		if a, ok := answers[q.Key]; ok {
			qv.Action = a.Action
			var pretty bytes.Buffer
			if len(a.Content) > 0 && json.Indent(&pretty, a.Content, "", "  ") == nil {
				qv.Content = pretty.String()
			}
			if q.Kind == mcpclient.KindRoots {
				// A roots answer has no content: it is the roots.
				qv.Content = prettyJSON(raw[q.Key])
			}
		}
		out = append(out, qv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// roundOutcome is how a round ended, worded as rounds.outcome words it.
func roundOutcome(r *store.Round) string {
	switch r.Status {
	case store.RoundPending:
		return ""
	case store.RoundAnswered:
		var answers map[string]struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(r.Responses, &answers)
		declined := 0
		for _, a := range answers {
			switch a.Action {
			case actionCancel:
				return store.OutcomeCancelled
			case actionDecline:
				declined++
			}
		}
		if len(answers) > 0 && declined == len(answers) {
			return store.OutcomeDeclined
		}
		return store.OutcomeAnswered
	}
	return r.Status
}

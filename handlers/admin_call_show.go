package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
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
			Questions:    views.AdminQuestions(r),
		}
		if r.AnsweredBy != nil {
			rv.AnsweredBy = *r.AnsweredBy
		}
		rv.Outcome = roundOutcome(r)
		vm.Rounds = append(vm.Rounds, rv)
	}
	return vm, nil
}

// roundOutcome is how a round ended, worded as rounds.outcome words it.
func roundOutcome(r *store.Round) string {
	switch r.Status {
	case store.RoundPending:
		return ""
	case store.RoundAnswered:
		outcome, _ := round.Outcome(r.Responses)
		return outcome
	}
	return r.Status
}

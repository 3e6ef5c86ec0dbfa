package handlers

import (
	"cmp"
	"context"
	"hash/fnv"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// callShow renders the call page: status, the current round's questions,
// earlier rounds and the result.
func (h *Handler) callShow(c echo.Context) error {
	ctx := c.Request().Context()
	vm, _, waiting, err := h.callViewFor(ctx, c.Param("id"), h.person(c))
	if err != nil {
		return err
	}
	countedWaiting(c, waiting) // read with the call, in its batch
	noPrefetch(c)
	return render(c, http.StatusOK, views.CallPage(*vm))
}

// callLive renders the part of the call page that htmx refreshes while the
// server works. With ?wait= it is held until the call's status or round
// differs from ?seen=STATUS:SEQ, so pages do not poll.
func (h *Handler) callLive(c echo.Context) error {
	ctx := c.Request().Context()
	wait, err := waitParams(c)
	if err != nil {
		return err
	}
	// Listen before reading, so no change falls in between.
	w := h.watch(c.Param("id"), wait)
	if w != nil {
		defer w.stop()
	}
	vm, call, err := h.callView(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	seen := c.QueryParam("seen")
	if w != nil && liveMark(call) == seen {
		next, _, err := w.until(ctx, call, func(call *store.Call) bool {
			return liveMark(call) != seen
		})
		if err != nil {
			return err
		}
		if liveMark(next) != seen {
			if vm, _, err = h.callView(ctx, call.ID); err != nil {
				return err
			}
		}
	}
	noPrefetch(c)
	return render(c, http.StatusOK, views.CallBody(*vm))
}

// noPrefetch asks the browser not to look up the hosts of the page's links
// ahead of a click: a URL-mode question's URL is not to be touched, not
// even by DNS, before the person chooses to open it.
func noPrefetch(c echo.Context) {
	c.Response().Header().Set("X-DNS-Prefetch-Control", "off")
}

// liveMark names what the live view shows: the status and the round.
func liveMark(call *store.Call) string {
	mark := call.Status + ":" + strconv.Itoa(call.CurrentSeq)
	if call.RetryAt != nil {
		mark += ":" + strconv.FormatInt(call.RetryAt.Unix(), 10)
	}
	if p := call.RunningProgress(); p != nil {
		// The live view moves with the server's progress too.
		h := fnv.New32a()
		_, _ = h.Write(call.Progress)
		mark += ":p" + strconv.FormatUint(uint64(h.Sum32()), 36)
	}
	return mark
}

// ownedCall returns a call if the signed-in person may see it (see
// mayOpen). Anyone else gets the same not-found as for a call that does
// not exist.
func (h *Handler) ownedCall(ctx context.Context, id string) (*store.Call, error) {
	call, err := h.store.Call(ctx, id)
	if err != nil {
		return nil, err
	}
	ok, err := h.mayOpen(ctx, call)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFoundErr("call")
	}
	return call, nil
}

// mayOpen reports whether the signed-in person may open, draft and answer
// call: its owner, an admin, whom its rounds are assigned to (the
// person, or a member of the team), or the delegate of that person while
// they are away. An answer decides the same from what
// its own transaction read (see answer).
func (h *Handler) mayOpen(ctx context.Context, call *store.Call) (bool, error) {
	if mayAccess(ctx, call.Owner) {
		return true, nil
	}
	u, _ := ctx.Value(userCtxKey{}).(*store.User)
	if u == nil {
		return false, nil
	}
	if call.Method == mcpclient.MethodCallTool {
		if asked, err := h.store.AskedOfApproval(ctx, call.ID, u.Name); err != nil || asked {
			return asked, err
		}
	}
	if call.Assignee != nil {
		if ok, err := h.store.IsAssignee(ctx, *call.Assignee, u.Name); ok || err != nil {
			return ok, err
		}
	}
	// The delegate of the person away whose rounds these are.
	_, ok, err := h.store.ActingFor(ctx, u.Name, []string{store.AskedOf(call)}, time.Now())
	return ok, err
}

// startedCall returns a call if person started it, or is an admin: what
// only they may do, such as retrying it, the assignee may not.
func (h *Handler) startedCall(ctx context.Context, id string) (*store.Call, error) {
	call, err := h.store.Call(ctx, id)
	if err != nil {
		return nil, err
	}
	if !mayAccess(ctx, call.Owner) {
		return nil, notFoundErr("call")
	}
	return call, nil
}

func (h *Handler) callVM(ctx context.Context, id string) (*views.CallVM, error) {
	vm, _, err := h.callView(ctx, id)
	return vm, err
}

// callView reads a call for its page, in one read, and returns the page's
// view model and the call.
func (h *Handler) callView(ctx context.Context, id string) (*views.CallVM, *store.Call, error) {
	vm, call, _, err := h.callViewFor(ctx, id, "")
	return vm, call, err
}

// callViewFor is callView that also counts, in the same read, the rounds
// waiting for person (none counted for "").
func (h *Handler) callViewFor(ctx context.Context, id, person string) (*views.CallVM, *store.Call, int, error) {
	call, rounds, draft, waiting, err := h.store.CallPageWaiting(ctx, id, person)
	if err != nil {
		return nil, nil, 0, err
	}
	if ok, err := h.mayOpen(ctx, call); err != nil {
		return nil, nil, 0, err
	} else if !ok {
		return nil, nil, 0, notFoundErr("call")
	}
	href := "/calls/" + call.ID
	vm := &views.CallVM{
		ID: call.ID, Href: href, Server: call.ServerName, Method: call.Method,
		Target: cmp.Or(call.Title, call.Target), Name: machineName(call),
		Status: call.Status, Created: call.CreatedAt, Retryable: call.Retryable,
		RetryHref: href + "/retry", LiveHref: href + "/live?wait=25s&seen=" + url.QueryEscape(liveMark(call)),
		Live: call.Status == store.CallQueued || call.Status == store.CallRunning,
	}
	if vm.Reach, err = h.reachVM(ctx, call); err != nil {
		return nil, nil, 0, err
	}
	if vm.Approval, err = h.approvalVM(ctx, call, signedIn(ctx)); err != nil {
		return nil, nil, 0, err
	}
	if call.Error != nil {
		vm.Error = *call.Error
	}
	if p := call.RunningProgress(); p != nil {
		vm.Progress = &views.ProgressVM{Message: p.Message, Value: p.Progress, Waiting: p.Waiting}
		if p.Total != nil {
			vm.Progress.Max = *p.Total
		}
	}
	if call.IsTask() {
		vm.Task = &views.TaskVM{ExpiresAt: call.TaskExpiresAt, StoppedAt: call.TaskStoppedAt}
	}
	callActions(ctx, vm, call)
	if call.RetryAt != nil && vm.Live {
		vm.Retry = &views.RetryVM{At: *call.RetryAt}
		if call.RetryReason != nil {
			vm.Retry.Reason = *call.RetryReason
		}
	}
	for i := range rounds {
		r := &rounds[i]
		before := round.Before(rounds, r)
		if r.Seq == call.CurrentSeq && call.Status == store.CallInputRequired && r.Status == store.RoundPending {
			var prev *store.Round
			if i > 0 {
				prev = &rounds[i-1]
			}
			prev = round.FillFrom(r, prev, before)
			current, err := pendingRoundVM(ctx, call, r, prev, draft)
			if err != nil {
				return nil, nil, 0, err
			}
			if before != nil {
				current.AskedBefore = before.Seq
				current.Changed = !mcpclient.SameQuestions(before.InputRequests, r.InputRequests)
			}
			if current.Plan, err = h.roundPlanVM(ctx, r); err != nil {
				return nil, nil, 0, err
			}
			if vm.HandOn, err = h.handOnVM(ctx, call, r); err != nil {
				return nil, nil, 0, err
			}
			current.Handed = handedVM(r)
			vm.Current = current
			vm.WatchHref = watchHref(call.ID, r.Seq)
			continue
		}
		if r.Seq == call.CurrentSeq && r.Outcome != nil {
			vm.Outcome = *r.Outcome
		}
		vm.History = append(vm.History, historyRoundVM(ctx, call, r, before))
	}
	agentReach(ctx, vm, call, rounds)
	// Started again, a call whose server forgot its questions, or whose
	// held session ended, asks afresh: what was answered is filled in.
	if last := len(rounds) - 1; call.Status == store.CallFailed && call.Retryable && last >= 0 &&
		(rounds[last].StateExpiredAt != nil || rounds[last].HeldBy != nil) {
		vm.RetryLabel = "Start again with your answers filled in"
	}
	if call.Status == store.CallComplete {
		vm.Result = views.Result(call.Method, call.Result, href+"/contents/")
	}
	return vm, call, waiting, nil
}

// callActions offers what may be done to the call from its page: stop it,
// start it again over a session, connect to its server.
func callActions(ctx context.Context, vm *views.CallVM, call *store.Call) {
	href := vm.Href
	if (call.Status == store.CallQueued || call.Status == store.CallRunning || call.Status == store.CallApprovalRequired) &&
		mayAccess(ctx, call.Owner) {
		vm.StopHref = href + "/stop"
	}
	if call.AsksOverSession && call.Finished() {
		vm.AgainHref = href + "/again"
	}
	if call.Status == store.CallAuthorizationRequired && (call.ServerOAuthMode != store.OAuthShared || isAdmin(ctx)) {
		vm.ConnectHref = "/servers/" + url.PathEscape(call.ServerName) + "/connect?call=" + url.QueryEscape(call.ID)
	}
}

// historyRoundVM is an ended round as the call's history shows it: how
// it ended, who answered and for whom, and what Rounds did about it.
func historyRoundVM(ctx context.Context, call *store.Call, r, before *store.Round) views.RoundVM {
	h := views.RoundVM{
		Seq: r.Seq, Status: r.Status, Outcome: deref(r.Outcome), AnsweredAt: r.AnsweredAt, ExpiresAt: r.ExpiresAt, AnsweredBy: answeredBy(r),
		Questions: views.Answered(r, call.ServerName, views.ZoneOf(ctx).Name), Held: r.HeldBy != nil, URLCompleted: r.URLCompletedAt,
		AnsweredFor: deref(r.AnsweredFor), Handed: handedVM(r),
	}
	if r.StateExpiredAt != nil {
		h.StateRefused, h.StateAge = r.StateExpiredAt, engine.HumanDuration(r.StateExpiredAt.Sub(r.CreatedAt))
		h.AskedAfresh = r.AskedAfresh
	}
	if before != nil && r.AnsweredAgain() {
		h.SameAs, h.AnsweredAgain = before.Seq, true
	}
	return h
}

// pendingRoundVM builds the answer form of a pending round, filled in with
// its draft when there is one, else with the answers given to the same
// questions in the previous round prev (nil for the first).
func pendingRoundVM(ctx context.Context, call *store.Call, r, prev *store.Round, draft *store.Draft) (*views.RoundVM, error) {
	qs, err := round.Parse(r)
	if err != nil {
		return nil, err
	}
	round.InZone(qs, views.ZoneOf(ctx).Name)
	var actions []string
	if draft != nil {
		actions = round.FromDraft(qs, draft.Form)
		round.Prefill(qs, prev, false)
	} else {
		round.Prefill(qs, prev, true)
	}
	vm := currentRoundVM(call, r, qs, actions)
	if draft != nil {
		vm.DraftSaved = &draft.UpdatedAt
	}
	return vm, nil
}

// currentRoundVM builds the answer form of a pending round, posting to the
// round's page, with its roots answered from the server's settings. qs and
// actions carry what the person posted, when re-rendering after a failed
// check.
func currentRoundVM(call *store.Call, r *store.Round, qs []round.Question, actions []string) *views.RoundVM {
	round.WithRoots(qs, call)
	vm := views.RoundForm(r, call.ServerName, qs, actions)
	vm.Action = "/calls/" + call.ID + "/rounds/" + strconv.Itoa(r.Seq)
	vm.DraftAction = vm.Action + "/draft"
	return vm
}

// machineName is a call's tool or prompt name, shown beside its title when
// the server gave one that differs.
func machineName(call *store.Call) string {
	if call.Title == "" || call.Title == call.Target {
		return ""
	}
	return call.Target
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

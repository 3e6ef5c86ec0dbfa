package handlers

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

const adminPageSize = 50

// ages are the "within the last …" choices of the admin filters.
var ages = []struct {
	value, label string
	d            time.Duration
}{
	{"1h", "In the last hour", time.Hour},
	{"24h", "In the last day", 24 * time.Hour},
	{"7d", "In the last week", 7 * 24 * time.Hour},
	{"30d", "In the last 30 days", 30 * 24 * time.Hour},
}

func ageParam(v string) (time.Duration, bool) {
	for _, a := range ages {
		if a.value == v {
			return a.d, true
		}
	}
	return 0, false
}

func ageOptions() []views.OptionVM {
	var out []views.OptionVM
	for _, a := range ages {
		out = append(out, views.OptionVM{Value: a.value, Label: a.label})
	}
	return out
}

var callStatuses = []string{
	store.CallQueued, store.CallRunning, store.CallInputRequired, store.CallApprovalRequired, store.CallComplete,
	store.CallFailed, store.CallCancelled, store.CallExpired,
}

// adminCalls lists the calls of everyone, filtered by status, server, user
// and age, fifty to a page, read by key.
func (h *Handler) adminCalls(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	f := store.CallFilter{
		Status: q.Get("status"), Server: q.Get("server"), Owner: q.Get("user"), Agent: strings.TrimSpace(q.Get("agent")),
		Sort: q.Get("sort"), Page: keyset(q, adminPageSize),
	}
	if f.Sort != store.CallsOldest {
		f.Sort = store.CallsNewest
	}
	now := time.Now()
	switch age := q.Get("age"); age {
	case "older1d":
		f.StartedBefore = now.Add(-24 * time.Hour)
	case "older7d":
		f.StartedBefore = now.Add(-7 * 24 * time.Hour)
	default:
		if d, ok := ageParam(age); ok {
			f.StartedAfter = now.Add(-d)
		}
	}
	calls, err := h.store.AdminCalls(ctx, f)
	if err != nil {
		return err
	}
	servers, err := h.store.AdminServers(ctx)
	if err != nil {
		return err
	}
	vm := views.AdminCallsVM{
		Status: f.Status, Server: f.Server, User: f.Owner, Agent: f.Agent, Age: q.Get("age"), Sort: f.Sort,
		Ages: append(ageOptions(), views.OptionVM{Value: "older1d", Label: "More than a day ago"},
			views.OptionVM{Value: "older7d", Label: "More than a week ago"}),
		Sorts:  []views.OptionVM{{Value: store.CallsNewest, Label: "Newest first"}, {Value: store.CallsOldest, Label: "Oldest first"}},
		Notice: endNotice(q),
	}
	for _, s := range callStatuses {
		vm.Statuses = append(vm.Statuses, views.OptionVM{Value: s, Label: statusText(s)})
	}
	for _, s := range servers {
		vm.Servers = append(vm.Servers, s.Name)
	}
	calls, vm.PrevHref, vm.NextHref = paged(calls, f.Page, "/admin/calls", q,
		func(a store.AdminCall) store.Cursor { return store.Cursor{At: a.CreatedAt, ID: a.ID} })
	for _, call := range calls {
		vm.Rows = append(vm.Rows, adminCallRow(call))
	}
	return render(c, http.StatusOK, views.AdminCallsPage(vm))
}

func adminCallRow(call store.AdminCall) views.AdminCallRowVM {
	row := views.AdminCallRowVM{
		ID: call.ID, Href: "/admin/calls/" + call.ID, Target: round.Preview(call.Target, round.PreviewName), Server: call.ServerName, Owner: call.Owner,
		Status: call.Status, Created: call.CreatedAt, ExpiresAt: call.ExpiresAt,
	}
	if call.RoundStatus != nil {
		row.RoundStatus = *call.RoundStatus
	}
	if call.AgentName != nil {
		row.Agent = *call.AgentName
	}
	if call.Status == store.CallInputRequired && row.RoundStatus == store.RoundPending {
		row.WaitingFor = call.Owner
		if call.RoundAsks != nil && *call.RoundAsks == store.AsksAgent {
			row.WaitingFor = "the agent, " + row.Agent
		}
	}
	return row
}

// statusText words a call status for a filter.
func statusText(s string) string {
	switch s {
	case store.CallInputRequired:
		return "Waiting for answers"
	case store.CallRunning:
		return "Running"
	}
	return string(s[0]-'a'+'A') + s[1:]
}

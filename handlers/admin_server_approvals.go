package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// approvalsVM is a server's approval rules as its admin page shows them,
// with the people and teams they ask who cannot answer now.
func (h *Handler) approvalsVM(ctx context.Context, s *store.Server) (views.AdminApprovalsVM, error) {
	vm := views.AdminApprovalsVM{Action: "/admin/servers/" + url.PathEscape(s.Name) + "/approvals", FromFile: s.ApprovalsFromFile}
	p, err := s.Policy()
	if err != nil {
		// Stored rules a newer Rounds no longer reads: shown as stored,
		// with the reason, to be mended.
		vm.Text, vm.Error = string(s.Approvals), err.Error()
		return vm, nil
	}
	vm.Text, vm.Rules = p.Text(), ruleVMs(p)
	if vm.Unanswerable, err = h.store.Unanswerable(ctx, p); err != nil {
		return vm, err
	}
	var tools []struct{ Name string }
	_ = json.Unmarshal(s.Tools, &tools)
	for _, t := range tools {
		vm.Try.Tools = append(vm.Try.Tools, t.Name)
	}
	return vm, nil
}

func ruleVMs(p *approvals.Policy) []views.ApprovalRuleVM {
	var out []views.ApprovalRuleVM
	for _, r := range p.Rules() {
		tools := strings.Join(r.Tools, ", ")
		if r.Destructive {
			tools = "every destructive tool (one not marked read-only or non-destructive)"
		}
		out = append(out, views.ApprovalRuleVM{Tools: tools, When: r.When, Asks: r.Asks()})
	}
	return out
}

// adminServerApprovals saves a server's approval rules (op=save), or tries
// the rules typed against a sample call without saving anything (op=try).
func (h *Handler) adminServerApprovals(c echo.Context) error {
	ctx := c.Request().Context()
	vm, err := h.adminServerVM(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	a := &vm.Approvals
	fromFile := a.FromFile
	if !fromFile {
		a.Text = c.FormValue("rules")
	}
	policy, perr := approvals.Parse(json.RawMessage(a.Text))
	if c.FormValue("op") == "try" {
		h.tryApprovals(ctx, c, a, policy, perr)
		return render(c, http.StatusOK, views.AdminServerPage(*vm))
	}
	if fromFile {
		a.Error = store.ErrApprovalsFromFile
		return render(c, http.StatusConflict, views.AdminServerPage(*vm))
	}
	if perr != nil {
		a.Error = "Not saved: " + perr.Error()
		return render(c, http.StatusUnprocessableEntity, views.AdminServerPage(*vm))
	}
	entry := h.userAudit(c, "server.approvals", vm.Name, map[string]any{"rules": len(policy.Rules())})
	err = h.store.SetServerApprovals(ctx, vm.Name, policy, *entry)
	if errors.Is(err, store.ErrConflict) {
		a.Error = err.Error()
		return render(c, http.StatusConflict, views.AdminServerPage(*vm))
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, vm.Base+"?done=approvals#approvals")
}

// tryApprovals fills in what the rules would do with the sample call the
// form describes.
func (h *Handler) tryApprovals(ctx context.Context, c echo.Context, a *views.AdminApprovalsVM, p *approvals.Policy, perr error) {
	t := &a.Try
	t.Tool, t.Args = strings.TrimSpace(c.FormValue("try_tool")), c.FormValue("try_args")
	t.Caller, t.Teams, t.Agent = strings.TrimSpace(c.FormValue("try_caller")), c.FormValue("try_teams"), strings.TrimSpace(c.FormValue("try_agent"))
	if perr != nil {
		a.Error = "These rules cannot be tried: " + perr.Error()
		return
	}
	call, notes, err := h.sampleCall(ctx, t, c.Param("server"))
	if err != nil {
		t.Error = err.Error()
		return
	}
	rule, i, evalErr := p.Match(call)
	switch {
	case rule == nil:
		t.Result = "No rule matches: the call would run without asking anyone."
	case evalErr != nil:
		t.Result = fmt.Sprintf("Rule %d applies: it would ask %s.", i+1, rule.Asks())
		cause := evalErr
		if u := errors.Unwrap(evalErr); u != nil {
			cause = u
		}
		notes = append(notes, fmt.Sprintf("Its condition could not be evaluated for this call (%s), so the rule applies: asking is the safe side.", cause))
	default:
		t.Result = fmt.Sprintf("Rule %d applies: it would ask %s.", i+1, rule.Asks())
	}
	t.Notes = notes
}

// sampleCall reads the sample call of the try form. The caller's teams are
// those typed, or else those of the caller's account; the tool's
// annotations are those of the server's tools as last listed.
func (h *Handler) sampleCall(ctx context.Context, t *views.ApprovalTryVM, server string) (approvals.Call, []string, error) {
	call := approvals.Call{Tool: t.Tool, Args: map[string]any{}, Caller: approvals.Caller{Name: t.Caller, Agent: t.Agent}}
	var notes []string
	if t.Tool == "" {
		return call, nil, errors.New("Give the name of a tool.")
	}
	if args := strings.TrimSpace(t.Args); args != "" {
		dec := json.NewDecoder(strings.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&call.Args); err != nil || call.Args == nil || dec.More() {
			return call, nil, errors.New(`Give the arguments as a JSON object, such as {"amount": 5000}, or leave them empty.`)
		}
	}
	for team := range strings.SplitSeq(t.Teams, ",") {
		if team = strings.TrimSpace(team); team != "" {
			call.Caller.Teams = append(call.Caller.Teams, team)
		}
	}
	if strings.TrimSpace(t.Teams) == "" && t.Caller != "" {
		if _, err := h.store.UserByName(ctx, t.Caller); err == nil {
			teams, err := h.store.TeamsOf(ctx, t.Caller)
			if err != nil {
				return call, nil, err
			}
			call.Caller.Teams = teams
			notes = append(notes, fmt.Sprintf("%s's teams, from their account: %s.", t.Caller, listOrNone(teams)))
		} else {
			notes = append(notes, fmt.Sprintf("There is no account named %s: the caller is in no team.", t.Caller))
		}
	}
	s, err := h.store.AdminServer(ctx, server)
	if err != nil {
		return call, nil, err
	}
	ann, known := toolAnnotations(s.Tools, t.Tool)
	call.Annotations = ann
	switch {
	case !known:
		notes = append(notes, fmt.Sprintf("%s is not among the server's tools as last listed: taken as having no annotations, so destructive.", t.Tool))
	case ann.Destructive():
		notes = append(notes, fmt.Sprintf("%s counts as destructive: its annotations do not mark it read-only or non-destructive.", t.Tool))
	default:
		notes = append(notes, fmt.Sprintf("%s does not count as destructive: its annotations mark it read-only or non-destructive.", t.Tool))
	}
	return call, notes, nil
}

// toolAnnotations finds a tool among a server's cached tools, with its
// annotations.
func toolAnnotations(tools json.RawMessage, name string) (*approvals.Annotations, bool) {
	var list []json.RawMessage
	_ = json.Unmarshal(tools, &list)
	i := slices.IndexFunc(list, func(raw json.RawMessage) bool {
		var t struct{ Name string }
		return json.Unmarshal(raw, &t) == nil && t.Name == name
	})
	if i < 0 {
		return nil, false
	}
	return approvals.AnnotationsOf(list[i]), true
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

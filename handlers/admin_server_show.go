package handlers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// checkTimeout bounds a check or a tools refresh from the admin pages.
const checkTimeout = 10 * time.Second

// adminServerShow shows one server: check, settings, tools, availability.
func (h *Handler) adminServerShow(c echo.Context) error {
	vm, err := h.adminServerVM(c.Request().Context(), c.Param("server"))
	if err != nil {
		return err
	}
	vm.Notice = adminNotices[c.QueryParam("done")]
	return render(c, http.StatusOK, views.AdminServerPage(*vm))
}

func (h *Handler) adminServerVM(ctx context.Context, name string) (*views.AdminServerVM, error) {
	s, err := h.store.AdminServer(ctx, name)
	if err != nil {
		return nil, err
	}
	vm := &views.AdminServerVM{
		Name: s.Name, URL: s.URL, Enabled: s.Enabled, Header: h.store.MaskedHeader(&s.Server),
		HeaderName: s.HeaderName, DefaultTTL: shortDuration(h.settings.RoundTTL), Calls: s.Calls,
		Protocol: s.ProtocolVersion, Base: "/admin/servers/" + url.PathEscape(s.Name),
		Sampling: s.Sampling, Roots: s.Roots, RootsText: rootsText(store.ParseRoots(s.RootsList)),
		ProtocolPin: cmp.Or(s.Protocol, mcpclient.ProtocolAuto),
		OAuth: views.AdminOAuthVM{Action: "/admin/servers/" + url.PathEscape(s.Name) + "/oauth", Mode: s.OAuthMode,
			ClientID: s.OAuthClientID, HasSecret: s.OAuthClientSecretEnc != nil, Required: s.OAuthRequired},
	}
	if s.RoundTTL > 0 {
		vm.RoundTTL = shortDuration(s.RoundTTL)
	}
	vm.DefaultMaxTasks = store.DefaultMaxTasks
	if s.MaxTasks != nil {
		vm.MaxTasks = strconv.Itoa(*s.MaxTasks)
	}
	if vm.TasksHeld, vm.TasksWaiting, err = h.store.ServerTaskLoad(ctx, s.ID); err != nil {
		return nil, err
	}
	if vm.Local, vm.IsLocal, err = h.localProcessesVM(ctx, &s.Server); err != nil {
		return nil, err
	}
	if vm.Deadlines, err = h.adminDeadlinesVM(ctx, s.Name); err != nil {
		return nil, err
	}
	vm.Replay = s.ReplayAnswers
	vm.AgentQuestions = s.AgentQuestions
	if vm.Approvals, err = h.approvalsVM(ctx, &s.Server); err != nil {
		return nil, err
	}
	life, err := h.store.ServerStateLife(ctx, s.ID, stateLifeSpan)
	if err != nil {
		return nil, err
	}
	if life.Refused > 0 && life.YoungestRefused != nil {
		vm.StateLife = &views.StateLifeVM{Refused: life.Refused, Days: int(stateLifeSpan / (24 * time.Hour)),
			YoungestRefused: engine.HumanDuration(*life.YoungestRefused)}
		if life.OldestAccepted != nil {
			vm.StateLife.OldestAccepted = engine.HumanDuration(*life.OldestAccepted)
		}
	}
	learnt, err := h.store.ToolProtocols(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	for _, l := range learnt {
		vm.Learnt = append(vm.Learnt, views.LearntVM{Tool: l.Tool, Protocol: l.Protocol, Reason: l.Reason, At: l.LearntAt})
	}
	if s.Tools != nil && s.ToolsExpiresAt != nil {
		vm.ToolsUntil = s.ToolsExpiresAt
		var tools []struct{ Name, Title string }
		_ = json.Unmarshal(s.Tools, &tools)
		for _, t := range tools {
			vm.Tools = append(vm.Tools, views.ToolVM{Name: t.Name, Title: cmp.Or(t.Title, t.Name)})
		}
	}
	return vm, nil
}

// maxMaxTasks is the most tasks at once the admin page takes for a server.
const maxMaxTasks = 100000

// maxTasksField reads the server form's tasks at once, when it has the
// field: zero for the default. What is wrong with it goes in vm.
func maxTasksField(c echo.Context, vm *views.AdminServerVM) (int, bool) {
	if !c.Request().PostForm.Has("max_tasks") {
		return 0, false
	}
	vm.MaxTasks = strings.TrimSpace(c.FormValue("max_tasks"))
	if vm.MaxTasks == "" {
		return 0, true
	}
	n, err := strconv.Atoi(vm.MaxTasks)
	if (err != nil || n < 1 || n > maxMaxTasks) && vm.Error == "" {
		vm.Error = fmt.Sprintf("Give the tasks at once as a whole number from 1 to %d, or leave it empty.", maxMaxTasks)
	}
	return n, true
}

// agentQuestionsField reads the server form's who answers agents'
// questions, when it has the field, and checks it: what is wrong with it
// goes in vm.
func (h *Handler) agentQuestionsField(c echo.Context, vm *views.AdminServerVM) (bool, error) {
	if !c.Request().PostForm.Has("agent_questions") {
		return false, nil
	}
	vm.AgentQuestions = strings.TrimSpace(c.FormValue("agent_questions"))
	err := h.store.CheckAgentQuestions(c.Request().Context(), vm.AgentQuestions)
	if errors.Is(err, store.ErrInvalid) {
		if vm.Error == "" {
			vm.Error = err.Error()
		}
		return true, nil
	}
	return true, err
}

// stateLifeSpan is how far back the server page looks for the answers a
// server refused because it had forgotten its questions.
const stateLifeSpan = 30 * 24 * time.Hour

// adminServerUpdate saves a server's URL, round lifetime and credentials.
func (h *Handler) adminServerUpdate(c echo.Context) error {
	ctx := c.Request().Context()
	vm, err := h.adminServerVM(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	rawURL, ttlText := strings.TrimSpace(c.FormValue("url")), strings.TrimSpace(c.FormValue("round_ttl"))
	headerName, headerValue := strings.TrimSpace(c.FormValue("header_name")), c.FormValue("header_value")
	remove := c.FormValue("header_remove") != ""
	checked := rawURL
	if vm.IsLocal {
		// A program's command comes from the servers file only: its
		// stdio: URL stays, and is no web address to check.
		rawURL, checked = vm.URL, "http://local.invalid/"
	}
	vm.URL, vm.RoundTTL, vm.HeaderName = rawURL, ttlText, headerName
	vm.Error = checkServerForm(vm.Name, checked, headerName, headerValue, true)
	var ttl time.Duration
	if ttlText != "" && vm.Error == "" {
		ttl, err = time.ParseDuration(strings.ReplaceAll(ttlText, " ", ""))
		if err != nil || ttl < time.Second {
			vm.Error = "Give the round lifetime as a duration of at least a second, such as 90s, 30m or 48h; or leave it empty."
		}
	}
	pin := c.FormValue("protocol")
	if pin != "" {
		if pin != mcpclient.ProtocolAuto && !mcpclient.KnownRevision(pin) && vm.Error == "" {
			vm.Error = "Choose Automatic or one of the listed protocol revisions."
		}
		vm.ProtocolPin = pin
	}
	// The sampling and roots settings are saved when the form has them.
	features := c.FormValue("features") != ""
	var roots []store.Root
	if features {
		vm.Sampling, vm.Roots, vm.RootsText = c.FormValue("sampling") != "", c.FormValue("roots") != "", c.FormValue("roots_list")
		var rootsErr error
		if roots, rootsErr = parseRootsText(vm.RootsText); rootsErr != nil && vm.Error == "" {
			vm.Error = rootsErr.Error()
		}
	}
	maxTasks, maxTasksForm := maxTasksField(c, vm)
	agentQuestions, err := h.agentQuestionsField(c, vm)
	if err != nil {
		return err
	}
	replayWas, replayForm := vm.Replay, c.FormValue("replay_form") != ""
	if replayForm {
		vm.Replay = c.FormValue("replay") != ""
	}
	if vm.Error != "" {
		return render(c, http.StatusUnprocessableEntity, views.AdminServerPage(*vm))
	}
	if replayForm && vm.Replay != replayWas {
		if err := h.store.SetServerReplay(ctx, vm.Name, vm.Replay); err != nil {
			return err
		}
		h.audit(c, "server.replay", vm.Name, map[string]any{"replay": vm.Replay})
	}
	if err := h.store.UpdateServer(ctx, vm.Name, rawURL, ttl); err != nil {
		return err
	}
	if agentQuestions {
		if err := h.store.SetServerAgentQuestions(ctx, vm.Name, vm.AgentQuestions); err != nil {
			return err
		}
	}
	if maxTasksForm {
		if err := h.store.SetServerMaxTasks(ctx, vm.Name, maxTasks); err != nil {
			return err
		}
	}
	if features {
		if err := h.store.SetServerFeatures(ctx, vm.Name, vm.Sampling, vm.Roots); err != nil {
			return err
		}
		if err := h.store.SetServerRoots(ctx, vm.Name, roots); err != nil {
			return err
		}
		h.audit(c, "server.features", vm.Name, map[string]any{"sampling": vm.Sampling, "roots": vm.Roots, "root_count": len(roots)})
	}
	if pin != "" {
		if err := h.store.SetServerProtocol(ctx, vm.Name, pin); err != nil {
			return err
		}
	}
	h.audit(c, "server.updated", vm.Name, map[string]any{"url": rawURL, "round_ttl": shortDuration(ttl), "protocol": vm.ProtocolPin,
		"max_tasks": vm.MaxTasks, "agent_questions": vm.AgentQuestions})
	if err := h.saveServerHeader(c, vm.Name, remove, headerName, headerValue); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, vm.Base+"?done=saved")
}

// saveServerHeader removes a server's credentials, or sets them when a
// value was typed, with its audit entry.
func (h *Handler) saveServerHeader(c echo.Context, server string, remove bool, name, value string) error {
	ctx := c.Request().Context()
	switch {
	case remove:
		if err := h.store.SetServerHeader(ctx, server, "", ""); err != nil {
			return err
		}
		h.audit(c, "server.credentials_removed", server, nil)
	case value != "":
		if err := h.store.SetServerHeader(ctx, server, name, value); err != nil {
			return err
		}
		h.audit(c, "server.credentials_set", server, map[string]any{"header": canonicalHeader(name)})
	}
	return nil
}

// adminServerCheck asks the server who it is and shows the answer.
func (h *Handler) adminServerCheck(c echo.Context) error {
	ctx := c.Request().Context()
	vm, err := h.adminServerVM(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	srv, err := h.mcpServer(ctx, vm.Name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	d, err := h.engine.MCP().Discover(ctx, srv)
	h.audit(c, "server.checked", vm.Name, map[string]any{"ok": err == nil})
	if err != nil {
		vm.CheckError = mcpclient.WithDetail("The server could not be checked.", err)
		return render(c, http.StatusOK, views.AdminServerPage(*vm))
	}
	var caps bytes.Buffer
	if len(d.Capabilities) == 0 || json.Indent(&caps, d.Capabilities, "", "  ") != nil {
		caps.WriteString("{}")
	}
	vm.Discovery = &views.DiscoveryVM{
		Protocol: d.Protocol, ServerName: d.ServerName, Version: d.Version,
		Instructions: d.Instructions, Capabilities: caps.String(),
	}
	return render(c, http.StatusOK, views.AdminServerPage(*vm))
}

// adminServerRefresh drops the cached tools and lists them again.
func (h *Handler) adminServerRefresh(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("server")
	if err := h.store.ClearServerTools(ctx, name); err != nil {
		return err
	}
	h.audit(c, "server.tools_refreshed", name, nil)
	s, err := h.store.AdminServer(ctx, name)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if _, err := h.catalog.Tools(lctx, signedIn(lctx), &s.Server); err != nil {
		vm, verr := h.adminServerVM(ctx, name)
		if verr != nil {
			return verr
		}
		vm.Error = mcpclient.WithDetail("The tools could not be listed.", err)
		return render(c, http.StatusOK, views.AdminServerPage(*vm))
	}
	return c.Redirect(http.StatusSeeOther, "/admin/servers/"+url.PathEscape(name)+"?done=refreshed")
}

// adminServerEnable enables or disables a server.
func (h *Handler) adminServerEnable(c echo.Context) error {
	name := c.Param("server")
	enabled := c.FormValue("enabled") == "true"
	if err := h.store.SetServerEnabled(c.Request().Context(), name, enabled); err != nil {
		return err
	}
	done := map[bool]string{true: "enabled", false: "disabled"}[enabled]
	h.audit(c, "server."+done, name, nil)
	return c.Redirect(http.StatusSeeOther, "/admin/servers/"+url.PathEscape(name)+"?done="+done)
}

// adminServerDelete removes a server no call used.
func (h *Handler) adminServerDelete(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("server")
	err := h.store.DeleteServer(ctx, name)
	if errors.Is(err, store.ErrConflict) {
		vm, verr := h.adminServerVM(ctx, name)
		if verr != nil {
			return verr
		}
		vm.Error = err.Error()
		return render(c, http.StatusConflict, views.AdminServerPage(*vm))
	}
	if err != nil {
		return err
	}
	h.audit(c, "server.removed", name, nil)
	return c.Redirect(http.StatusSeeOther, "/admin/servers?done=removed")
}

// mcpServer is how the engine reaches a server, credentials included.
func (h *Handler) mcpServer(ctx context.Context, name string) (mcpclient.Server, error) {
	s, err := h.store.AdminServer(ctx, name)
	if err != nil {
		return mcpclient.Server{}, err
	}
	// A pinned server is checked with the revision it is pinned to.
	return h.store.MCPServer(&s.Server, h.settings.Capabilities)
}

// rootsText writes roots one a line, as the admin page edits them: the
// URI, then the name.
func rootsText(roots []store.Root) string {
	var b strings.Builder
	for _, r := range roots {
		b.WriteString(strings.TrimSpace(r.URI + " " + r.Name))
		b.WriteByte('\n')
	}
	return b.String()
}

// parseRootsText reads the admin page's roots: one file:// URI a line,
// optionally followed by a space and a name.
func parseRootsText(text string) ([]store.Root, error) {
	roots := []store.Root{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		uri, name, _ := strings.Cut(line, " ")
		root, err := store.NewRoot(uri, strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("Roots, line %d: %v. Write one file:// URI a line, then a space and a name if you like.", n+1, err)
		}
		roots = append(roots, root)
	}
	if len(roots) > 100 {
		return nil, errors.New("Give at most 100 roots.")
	}
	return roots, nil
}

// adminServerForget forgets that a tool (or every tool, without one) asks
// over a session: its next calls take the server's setting again.
func (h *Handler) adminServerForget(c echo.Context) error {
	ctx := c.Request().Context()
	s, err := h.store.AdminServer(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	tool := c.FormValue("tool")
	if err := h.store.ForgetToolProtocol(ctx, s.ID, tool); err != nil {
		return err
	}
	h.audit(c, "server.learnt_forgotten", s.Name, map[string]any{"tool": tool})
	return c.Redirect(http.StatusSeeOther, "/admin/servers/"+url.PathEscape(s.Name)+"?done=forgotten")
}

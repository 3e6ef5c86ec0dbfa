package handlers

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/views"
)

// The home page lists a server's tools in short, like every list (see
// round.Preview).
const (
	listServerTools = 50  // tools listed per server on the home page
	listToolName    = 256 // bytes of the longest tool name the home page lists
)

// homeShow lists the servers with their tools, and the person's recent calls.
func (h *Handler) homeShow(c echo.Context) error {
	ctx := c.Request().Context()
	servers, err := h.store.Servers(ctx)
	if err != nil {
		return err
	}
	vm := views.HomeVM{Servers: make([]views.ServerVM, len(servers))}
	// Servers are asked in parallel, each with a deadline, so one slow
	// server does not hold the page.
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() {
			srv := &servers[i]
			s := views.ServerVM{Name: srv.Name, URL: srv.URL, Href: "/servers/" + url.PathEscape(srv.Name)}
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			tools, err := h.catalog.Tools(tctx, signedIn(tctx), srv)
			if err != nil {
				s.Error = mcpclient.WithDetail(toolsUnlisted, err)
			}
			for _, t := range tools {
				if len(s.Tools) == listServerTools || len(t.Name) > listToolName {
					// Left to the server's page, which has them all: a name
					// is linked whole, so a long one is not listed here.
					s.MoreTools++
					continue
				}
				title := t.Title
				if title == "" && t.Annotations != nil {
					title = t.Annotations.Title
				}
				if title == "" {
					title = t.Name
				}
				s.Tools = append(s.Tools, views.ToolVM{
					Name: t.Name, Title: round.Preview(title, round.PreviewName), Description: round.Preview(t.Description, round.PreviewText),
					Href: "/servers/" + url.PathEscape(srv.Name) + "/tools/" + url.PathEscape(t.Name),
				})
			}
			vm.Servers[i] = s
		})
	}
	wg.Wait()
	calls, err := h.store.Calls(ctx, h.person(c), 10)
	if err != nil {
		return err
	}
	ids := make([]string, len(calls))
	for i, call := range calls {
		ids[i] = call.ID
	}
	outcomes, err := h.store.LastOutcomes(ctx, ids)
	if err != nil {
		return err
	}
	for _, call := range calls {
		vm.Recent = append(vm.Recent, views.CallSummary{
			Href: "/calls/" + call.ID, Server: call.ServerName, Target: round.Preview(cmp.Or(call.Title, call.Target), round.PreviewName),
			Status: call.Status, Created: call.CreatedAt, Outcome: outcomes[call.ID],
		})
	}
	return render(c, http.StatusOK, views.HomePage(vm))
}

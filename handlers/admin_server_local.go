package handlers

import (
	"context"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// localProcessesVM is how a local (stdio) server's processes run on every
// instance, as each last said; nil for a server over HTTP.
func (h *Handler) localProcessesVM(ctx context.Context, srv *store.Server) ([]views.LocalProcessVM, bool, error) {
	if _, local := srv.Local(); !local {
		return nil, false, nil
	}
	rows, err := h.store.LocalProcesses(ctx, srv.Name)
	if err != nil {
		return nil, true, err
	}
	out := make([]views.LocalProcessVM, 0, len(rows))
	for _, r := range rows {
		p := views.LocalProcessVM{Instance: r.Instance, Gone: r.InstanceGone, Running: r.Running, Since: r.StartedAt,
			Restarts: r.Restarts, Stderr: r.Stderr, Shared: r.Shared, Sessions: r.Sessions, MaxSessions: r.MaxSessions}
		if r.PID != nil {
			p.PID = *r.PID
		}
		if r.LastExit != nil {
			p.LastExit = *r.LastExit
		}
		out = append(out, p)
	}
	return out, true, nil
}

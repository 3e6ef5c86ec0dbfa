package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/views"
)

// adminInstances lists the instances by their heartbeats, marking the
// silent ones.
func (h *Handler) adminInstances(c echo.Context) error {
	list, err := h.store.Instances(c.Request().Context())
	if err != nil {
		return err
	}
	self := h.settings.InstanceID
	var vm views.AdminInstancesVM
	for _, i := range list {
		state := "live"
		switch {
		case i.StoppedAt != nil:
			state = "stopped"
		case i.Silent():
			state = "silent"
		}
		vm.Rows = append(vm.Rows, views.InstanceRowVM{
			ID: i.ID, Version: i.Version, Hostname: i.Hostname, PID: i.PID, Started: i.StartedAt,
			LastSeen: i.LastSeenAt, Interval: shortDuration(time.Duration(i.IntervalMs) * time.Millisecond),
			Jobs: i.JobsRunning, State: state, Leader: i.Leader, Self: i.ID == self,
		})
	}
	return render(c, http.StatusOK, views.AdminInstancesPage(vm))
}

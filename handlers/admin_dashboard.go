package handlers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// Buckets of the dashboard's charts.
var (
	answerBounds  = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 12 * time.Hour}
	answerLabels  = []string{"under 10 s", "10 s – 1 min", "1 – 5 min", "5 – 30 min", "30 min – 2 h", "2 – 12 h", "12 h or more"}
	pendingBounds = []time.Duration{5 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour}
	pendingLabels = []string{"under 5 min", "5 min – 1 h", "1 – 6 h", "6 – 24 h", "1 – 3 days", "3 days or more"}
)

// outcomeNames words the outcomes for charts, with the class that colours them.
var outcomeNames = map[string]string{
	store.OutcomeAnswered: "Answered", store.OutcomeDeclined: "Declined",
	store.OutcomeCancelled: "Cancelled", store.OutcomeExpired: "Expired",
}

// adminDashboard shows the headline numbers and the charts.
func (h *Handler) adminDashboard(c echo.Context) error {
	ctx := c.Request().Context()
	sum, err := h.store.DashboardSummary(ctx)
	if err != nil {
		return err
	}
	vm := views.AdminDashboardVM{
		Pending: sum.Pending, Overdue: sum.Overdue, CallsToday: sum.CallsToday,
		FailedToday: sum.FailedToday, InstancesLive: sum.InstancesLive,
	}
	now := time.Now().UTC()
	for _, build := range []func(context.Context, time.Time) (views.ChartVM, error){
		h.roundsPerHourChart, h.answerTimeChart, h.serverRatesChart, h.pendingAgeChart,
	} {
		chart, err := build(ctx, now)
		if err != nil {
			return err
		}
		vm.Charts = append(vm.Charts, chart)
	}
	speed, err := h.answerSpeedCharts(ctx, now)
	if err != nil {
		return err
	}
	vm.Charts = append(vm.Charts, speed...)
	return render(c, http.StatusOK, views.AdminDashboardPage(vm))
}

func (h *Handler) roundsPerHourChart(ctx context.Context, now time.Time) (views.ChartVM, error) {
	first := now.Truncate(time.Hour).Add(-23 * time.Hour)
	counts, err := h.store.RoundsPerHour(ctx, first)
	if err != nil {
		return views.ChartVM{}, err
	}
	chart := views.ChartVM{
		ID: "rounds-per-hour", Title: "Rounds ended per hour, last 24 hours",
		CategoryHeader: "Hour (UTC)", Stacked: true, ZeroRowsNote: "hours when no round ended are left out",
	}
	index := map[string]int{}
	for i, o := range store.Outcomes {
		index[o] = i
		chart.Series = append(chart.Series, views.SeriesVM{Name: outcomeNames[o], Class: "bar-" + o, Values: make([]float64, 24)})
	}
	for i := range 24 {
		chart.Categories = append(chart.Categories, first.Add(time.Duration(i)*time.Hour).Format("15:00"))
	}
	totals := make([]int, len(store.Outcomes))
	for _, hc := range counts {
		i := int(hc.Hour.Sub(first) / time.Hour)
		o, ok := index[hc.Outcome]
		if i < 0 || i >= 24 || !ok {
			continue
		}
		chart.Series[o].Values[i] += float64(hc.N)
		totals[o] += hc.N
	}
	chart.Desc = fmt.Sprintf("Stacked bars: the rounds that ended in each hour, by how they ended. In all, %d answered, %d declined, %d cancelled and %d expired.",
		totals[0], totals[1], totals[2], totals[3])
	return chart, nil
}

func (h *Handler) answerTimeChart(ctx context.Context, now time.Time) (views.ChartVM, error) {
	counts, err := h.store.AnswerTimes(ctx, now.Add(-7*24*time.Hour), answerBounds)
	if err != nil {
		return views.ChartVM{}, err
	}
	chart := views.ChartVM{
		ID: "time-to-answer", Title: "Time to answer, last 7 days",
		CategoryHeader: "Time from question to answer", Categories: answerLabels,
		Series: []views.SeriesVM{{Name: "Rounds", Class: "bar-answered", Values: floats(counts)}},
	}
	chart.Desc = fmt.Sprintf("Bars: how many of the %d rounds answered, declined or cancelled in the last 7 days took how long, from the question to the answer.", total(counts))
	return chart, nil
}

func (h *Handler) serverRatesChart(ctx context.Context, now time.Time) (views.ChartVM, error) {
	rows, err := h.store.OutcomesByServer(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		return views.ChartVM{}, err
	}
	chart := views.ChartVM{
		ID: "server-rates", Title: "Decline and cancel rates by server, last 7 days",
		CategoryHeader: "Server (rounds ended)", Unit: "%",
		Series: []views.SeriesVM{{Name: "Declined", Class: "bar-declined"}, {Name: "Cancelled", Class: "bar-cancelled"}},
	}
	for _, r := range rows {
		chart.Categories = append(chart.Categories, fmt.Sprintf("%s (%d)", r.Server, r.Total()))
		chart.Series[0].Values = append(chart.Series[0].Values, percent(r.Declined, r.Total()))
		chart.Series[1].Values = append(chart.Series[1].Values, percent(r.Cancelled, r.Total()))
	}
	chart.Desc = fmt.Sprintf("Paired bars for each of %d servers: the share of its ended rounds that people declined, and that they cancelled.", len(rows))
	return chart, nil
}

func (h *Handler) pendingAgeChart(ctx context.Context, _ time.Time) (views.ChartVM, error) {
	counts, err := h.store.PendingAges(ctx, pendingBounds)
	if err != nil {
		return views.ChartVM{}, err
	}
	chart := views.ChartVM{
		ID: "pending-age", Title: "Rounds waiting, by age",
		CategoryHeader: "Waiting for", Categories: pendingLabels,
		Series: []views.SeriesVM{{Name: "Rounds", Class: "bar-pending", Values: floats(counts)}},
	}
	chart.Desc = fmt.Sprintf("Bars: the %d rounds waiting for answers now, by how long they have waited.", total(counts))
	return chart, nil
}

func floats(ns []int) []float64 {
	out := make([]float64, len(ns))
	for i, n := range ns {
		out[i] = float64(n)
	}
	return out
}

func total(ns []int) int {
	sum := 0
	for _, n := range ns {
		sum += n
	}
	return sum
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(int(float64(n)*1000/float64(of)+0.5)) / 10
}

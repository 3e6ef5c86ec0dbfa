package handlers

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// speedWindow is how far back the time-to-answer charts look.
const speedWindow = 30 * 24 * time.Hour

// answerSpeedCharts are time to answer (median and 90th percentile) per
// server and per team, and the rounds nobody answered in time, over the
// last 30 days.
func (h *Handler) answerSpeedCharts(ctx context.Context, now time.Time) ([]views.ChartVM, error) {
	since := now.Add(-speedWindow)
	byServer, err := h.store.AnswerSpeedByServer(ctx, since)
	if err != nil {
		return nil, err
	}
	byTeam, err := h.store.AnswerSpeedByTeam(ctx, since)
	if err != nil {
		return nil, err
	}
	unanswered, err := h.store.UnansweredByServer(ctx, since)
	if err != nil {
		return nil, err
	}
	late := views.ChartVM{
		ID: "unanswered", Title: "Rounds nobody answered in time, last 30 days",
		CategoryHeader: "Server",
		Series: []views.SeriesVM{{Name: "Escalated", Class: "bar-pending"}, {Name: "Expired", Class: "bar-expired"},
			{Name: "Answered by Rounds at the deadline", Class: "bar-declined"}},
	}
	var escalated, expired, atDeadline int
	for _, u := range unanswered {
		late.Categories = append(late.Categories, u.Server)
		late.Series[0].Values = append(late.Series[0].Values, float64(u.Escalated))
		late.Series[1].Values = append(late.Series[1].Values, float64(u.Expired))
		late.Series[2].Values = append(late.Series[2].Values, float64(u.AtDeadline))
		escalated, expired, atDeadline = escalated+u.Escalated, expired+u.Expired, atDeadline+u.AtDeadline
	}
	late.Desc = fmt.Sprintf("Bars for each server: the rounds that escalated to someone else, that expired, and that Rounds answered at their deadline. In all, %d escalated, %d expired and %d were answered at the deadline.",
		escalated, expired, atDeadline)
	return []views.ChartVM{
		speedChart("speed-by-server", "Time to answer by server, last 30 days", "Server (rounds answered)", byServer),
		speedChart("speed-by-team", "Time to answer by team, last 30 days", "Team (rounds answered)", byTeam),
		late,
	}, nil
}

func speedChart(id, title, header string, rows []store.AnswerSpeed) views.ChartVM {
	// One unit for the chart, the one its slowest rounds read best in.
	unit, name, per := " s", "seconds", 1.0
	for _, r := range rows {
		switch {
		case r.P90 >= 2*3600 && per < 3600:
			unit, name, per = " h", "hours", 3600
		case r.P90 >= 120 && per < 60:
			unit, name, per = " min", "minutes", 60
		}
	}
	chart := views.ChartVM{ID: id, Title: title, CategoryHeader: header, Unit: unit,
		Series: []views.SeriesVM{{Name: "Median", Class: "bar-answered"}, {Name: "90th percentile", Class: "bar-pending"}}}
	total := 0
	for _, r := range rows {
		chart.Categories = append(chart.Categories, fmt.Sprintf("%s (%d)", r.Key, r.N))
		chart.Series[0].Values = append(chart.Series[0].Values, tenths(r.Median/per))
		chart.Series[1].Values = append(chart.Series[1].Values, tenths(r.P90/per))
		total += r.N
	}
	chart.Desc = fmt.Sprintf("Paired bars for each of %d: the median time from a question to a person's answer, and the time within which 9 in 10 were answered, in %s, over %d rounds.",
		len(rows), name, total)
	return chart
}

// tenths rounds to one decimal.
func tenths(v float64) float64 {
	return float64(int(v*10+0.5)) / 10
}

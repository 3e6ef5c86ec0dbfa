package views

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Zone is the time zone a person sees times in, and where it came from:
// "account" (chosen on the account page), "browser" (the browser said so)
// or "" (neither: UTC).
type Zone struct {
	Loc    *time.Location
	Name   string
	Source string
}

type zoneKey struct{}

// WithZone tells the views which time zone to show times in.
func WithZone(ctx context.Context, z Zone) context.Context {
	return context.WithValue(ctx, zoneKey{}, z)
}

// ZoneOf returns the person's time zone; UTC when none is known.
func ZoneOf(ctx context.Context) Zone {
	if z, ok := ctx.Value(zoneKey{}).(Zone); ok && z.Loc != nil {
		return z
	}
	return Zone{Loc: time.UTC, Name: "UTC"}
}

// fmtTime is a time in the person's zone, to the minute, with the zone's
// abbreviation.
func fmtTime(ctx context.Context, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(ZoneOf(ctx).Loc).Format("2006-01-02 15:04 MST")
}

// fmtTimeSec is fmtTime to the second, for logs and audit trails.
func fmtTimeSec(ctx context.Context, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(ZoneOf(ctx).Loc).Format("2006-01-02 15:04:05 MST")
}

// isoTime is a time for a <time datetime> attribute.
func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// fromNow says how far t is from now, as people say it: "in 23 h",
// "in 5 min", "2 days ago", "now".
func fromNow(t time.Time) string {
	return relative(time.Until(t))
}

func relative(d time.Duration) string {
	past := d < 0
	d = time.Duration(math.Abs(float64(d)))
	var s string
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Round(time.Hour)/time.Hour))
	default:
		s = fmt.Sprintf("%d days", int(d.Round(24*time.Hour)/(24*time.Hour)))
	}
	if past {
		return s + " ago"
	}
	return "in " + s
}

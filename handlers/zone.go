package handlers

import (
	"regexp"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/views"
)

// zoneCookie is where the browser says which time zone it is in (app.js
// sets it from Intl on every page).
const zoneCookie = "tz"

var zoneSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*$`)

// loadZone loads an IANA time zone name, refusing anything else ("Local",
// paths, overlong names).
func loadZone(name string) (*time.Location, bool) {
	if name == "" || len(name) > 64 || name == "Local" || !zoneSyntax.MatchString(name) {
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	return loc, err == nil
}

// zone is the time zone the person sees times in: the one chosen on the
// account page, else the browser's, else UTC.
func zone(c echo.Context) views.Zone {
	if u := user(c); u != nil && u.TimeZone != "" {
		if loc, ok := loadZone(u.TimeZone); ok {
			return views.Zone{Loc: loc, Name: u.TimeZone, Source: "account"}
		}
	}
	if ck, err := c.Cookie(zoneCookie); err == nil {
		if loc, ok := loadZone(ck.Value); ok {
			return views.Zone{Loc: loc, Name: ck.Value, Source: "browser"}
		}
	}
	return views.Zone{Loc: time.UTC, Name: "UTC"}
}

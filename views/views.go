// Package views holds the templ components that render every page.
package views

import "strconv"

func refreshContent(seconds int) string { return strconv.Itoa(seconds) }

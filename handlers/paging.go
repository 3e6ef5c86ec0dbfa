package handlers

import (
	"net/url"

	"github.com/mcp-rounds/rounds/store"
)

// keyset reads which page of a list is asked for: after=CURSOR is the page
// following that call, before=CURSOR the page preceding it, neither the
// first. One row more than the page is read, to know whether more follow.
func keyset(q url.Values, size int) store.Keyset {
	k := store.Keyset{Limit: size + 1, Forward: true}
	if c, ok := store.ParseCursor(q.Get("after")); ok {
		k.Cursor = &c
	} else if c, ok := store.ParseCursor(q.Get("before")); ok {
		k.Cursor, k.Forward = &c, false
	}
	return k
}

// paged trims the extra row keyset read and makes the links to the pages
// before and after this one (empty where there is none), keeping the
// page's other query parameters.
func paged[T any](rows []T, k store.Keyset, path string, q url.Values, key func(T) store.Cursor) (page []T, prev, next string) {
	size := k.Limit - 1
	more := len(rows) > size
	if more {
		if k.Forward {
			rows = rows[:size]
		} else {
			rows = rows[1:]
		}
	}
	if len(rows) == 0 {
		return rows, "", ""
	}
	link := func(param string, c store.Cursor) string {
		out := url.Values{}
		for k, v := range q {
			if k != "after" && k != "before" {
				out[k] = v
			}
		}
		out.Set(param, c.String())
		return path + "?" + out.Encode()
	}
	if (k.Forward && more) || (!k.Forward && k.Cursor != nil) {
		next = link("after", key(rows[len(rows)-1]))
	}
	if (!k.Forward && more) || (k.Forward && k.Cursor != nil) {
		prev = link("before", key(rows[0]))
	}
	return rows, prev, next
}

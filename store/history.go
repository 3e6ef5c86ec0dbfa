package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cursor marks an end of a page of calls: the sort key and the id of the
// call there. Pages are read by key, never by offset, so a page costs the
// same however far back it is, and calls started meanwhile shift nothing.
type Cursor struct {
	At time.Time
	ID string
}

// String is the cursor as it goes into a URL.
func (c Cursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 10) + "_" + c.ID
}

// ParseCursor reads a cursor from a URL; ok is false for anything else.
func ParseCursor(s string) (c Cursor, ok bool) {
	at, id, found := strings.Cut(s, "_")
	micros, err := strconv.ParseInt(at, 10, 64)
	if !found || err != nil || !isUUID(id) {
		return Cursor{}, false
	}
	return Cursor{At: time.UnixMicro(micros), ID: id}, true
}

// Keyset is where a page starts: after the cursor in the sort order
// (Forward), or before it (the page before, read backwards and turned
// round). A zero cursor is the first page.
type Keyset struct {
	Cursor  *Cursor
	Forward bool
	Limit   int
}

// keysetSQL adds the page's bound and order to a query over calls c, sorted
// by col (a column of calls) and then id, descending unless asc. It returns
// the clause for the WHERE, the ORDER BY … LIMIT, and whether the rows come
// back reversed.
func keysetSQL(col string, asc bool, k Keyset, args *[]any) (where, order string, reversed bool) {
	desc := !asc
	// Reading the page before the cursor means walking the other way.
	if k.Cursor != nil && !k.Forward {
		desc, reversed = !desc, true
	}
	where = "true"
	if k.Cursor != nil {
		*args = append(*args, k.Cursor.At, k.Cursor.ID)
		op := ">"
		if desc {
			op = "<"
		}
		where = fmt.Sprintf("(c.%s, c.id) %s ($%d, $%d::uuid)", col, op, len(*args)-1, len(*args))
	}
	dir := "asc"
	if desc {
		dir = "desc"
	}
	*args = append(*args, k.Limit)
	order = fmt.Sprintf("order by c.%s %s, c.id %s limit $%d", col, dir, dir, len(*args))
	return where, order, reversed
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// likePattern makes a search for text anywhere, with % and _ taken as they
// are.
func likePattern(q string) string {
	q = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.TrimSpace(q))
	if q == "" {
		return ""
	}
	return "%" + q + "%"
}

// HistoryFilter narrows a person's calls.
type HistoryFilter struct {
	Status string
	// Query is searched for in the tool (or prompt, or resource), the
	// server's name, and the text of the questions the server asked.
	Query string
	Page  Keyset
}

// History returns a page of an owner's calls, newest first.
func (s *Store) History(ctx context.Context, owner string, f HistoryFilter) ([]Call, error) {
	args := []any{owner, f.Status, likePattern(f.Query)}
	where, order, reversed := keysetSQL("created_at", false, f.Page, &args)
	calls, err := readRows[Call](ctx, s, `select `+callColumns+`
		from calls c join servers s on s.id = c.server_id
		where c.owner = $1 and ($2 = '' or c.status = $2)
		  and ($3 = '' or c.target ilike $3 or s.name ilike $3 or exists (
		      select 1 from rounds r, json_each(r.input_requests) q
		      where r.call_id = c.id and q.value->'params'->>'message' ilike $3))
		  and `+where+` `+order, args...)
	if reversed {
		reverse(calls)
	}
	return calls, err
}

// isUUID reports whether s is a UUID in its usual text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case !strings.ContainsRune("0123456789abcdefABCDEF", r):
			return false
		}
	}
	return true
}

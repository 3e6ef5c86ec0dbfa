package round

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// Prefill brings a re-asked question's earlier answer back: when the server
// asks again (it did not accept an answer), each question it asked in the
// previous round too is filled in with what the person sent then, and
// where the server's new message says why, that reason is shown beside the
// one field it names. With fill false (a draft filled the form) only the
// reasons are shown.
func Prefill(qs []Question, prev *store.Round, fill bool) {
	if prev == nil || prev.Status != store.RoundAnswered {
		return
	}
	before, err := Parse(prev)
	if err != nil {
		return
	}
	var given map[string]Response
	if json.Unmarshal(prev.Responses, &given) != nil {
		return
	}
	for i := range qs {
		q := &qs[i]
		if q.Form == nil || q.Form.Fallback {
			continue
		}
		a, ok := given[q.Key]
		if !ok || a.Action != ActionAccept || len(a.Content) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(a.Content))
		dec.UseNumber()
		var content map[string]any
		if dec.Decode(&content) != nil {
			continue
		}
		if fill {
			q.Form.Prefill(content)
		}
		for _, b := range before {
			if b.Key == q.Key {
				blameField(q, reasonFor(b.Message, q.Message))
			}
		}
	}
}

// reasonFor is what a re-asked question's message adds to the message it
// had before: "Please try again: Date must be in the future." before the
// same question. It is "" when the message did not just gain a sentence.
func reasonFor(before, now string) string {
	before, now = strings.TrimSpace(before), strings.TrimSpace(now)
	if before == "" || now == before {
		return ""
	}
	if r, ok := strings.CutSuffix(now, before); ok {
		return strings.TrimSpace(r)
	}
	if r, ok := strings.CutPrefix(now, before); ok {
		return strings.TrimSpace(r)
	}
	return ""
}

// blameField shows reason beside the one field whose label it names. When
// it names none or several, the reason stays in the question's message,
// where it is already shown.
func blameField(q *Question, reason string) {
	if reason == "" {
		return
	}
	lower := strings.ToLower(reason)
	found := -1
	for i, fd := range q.Form.Fields {
		if fd.Label == "" || !strings.Contains(lower, strings.ToLower(fd.Label)) {
			continue
		}
		if found >= 0 {
			return
		}
		found = i
	}
	if found >= 0 {
		q.Form.Fields[found].Error = "The server says: " + reason
	}
}

// FillFrom picks the round whose answers fill in r's form: the round just
// before it (prev) when that asked any of the same questions (the server
// asking again, with a reason), else the round at r's place before the
// server was asked afresh (before), else prev.
func FillFrom(r, prev, before *store.Round) *store.Round {
	if before == nil || (prev != nil && prev.Asking == r.Asking && sharesKey(r, prev)) {
		return prev
	}
	if sharesKey(r, before) {
		return before
	}
	return prev
}

// sharesKey reports whether two rounds ask a question under the same key.
func sharesKey(a, b *store.Round) bool {
	keys := map[string]bool{}
	for _, k := range mcpclient.ObjectKeys(a.InputRequests) {
		keys[k] = true
	}
	for _, k := range mcpclient.ObjectKeys(b.InputRequests) {
		if keys[k] {
			return true
		}
	}
	return false
}

// Before returns the round at r's place in the asking before r's: the
// round r repeats, or would, after the server was asked afresh. Nil in a
// call's first asking.
func Before(rounds []store.Round, r *store.Round) *store.Round {
	if r.Asking == 0 {
		return nil
	}
	for i := range rounds {
		if b := &rounds[i]; b.Asking == r.Asking-1 && b.Position == r.Position {
			return b
		}
	}
	return nil
}

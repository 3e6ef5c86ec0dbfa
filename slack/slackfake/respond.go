package slackfake

import (
	"encoding/json"
	"io"
	"net/http"
)

// serveResponseURL takes a post to a block_actions payload's response_url:
// replace_original replaces the message, delete_original deletes it, and
// anything else is shown to the person who pressed (kept as an ephemeral).
// Each post is recorded as a call of method "response_url".
func (f *Fake) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	err := json.Unmarshal(b, &body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Method: "response_url", Args: body, At: f.Now()})
	if err != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	ch, ts := r.PathValue("channel"), r.PathValue("ts")
	var m *Message
	for i, x := range f.messages {
		if x.Channel == ch && x.TS == ts {
			m = x
			if body["delete_original"] == true {
				f.messages = append(f.messages[:i], f.messages[i+1:]...)
				_, _ = io.WriteString(w, "ok")
				return
			}
		}
	}
	if m == nil {
		http.Error(w, "message_not_found", http.StatusNotFound)
		return
	}
	blocks, e := f.blocksArg("response_url", body)
	if e != nil {
		http.Error(w, e.code, http.StatusBadRequest)
		return
	}
	text, _ := body["text"].(string)
	if body["replace_original"] == true {
		m.Text, m.Blocks = text, blocks
		m.Updated++
	} else {
		f.ephemerals = append(f.ephemerals, Ephemeral{Channel: ch, Text: text, Blocks: blocks})
	}
	_, _ = io.WriteString(w, "ok")
}

package mcpclient

import (
	"encoding/json"
	"fmt"
)

// Limits on what a server may ask in one round. Past them the call fails
// with a LimitError, before anything is stored or shown: one server must
// not make a person's pages, or the database, as large as it likes.
const (
	MaxRoundBytes = 1 << 20   // a round's inputRequests, as sent
	MaxQuestions  = 32        // input requests in one round
	MaxMessage    = 16 << 10  // one question's message, in bytes
	MaxSchema     = 256 << 10 // one question's requestedSchema, as sent
)

// LimitError is a round larger than this client accepts.
type LimitError struct{ What string }

func (e *LimitError) Error() string { return "the server sent " + e.What }

// checkRound refuses a round past the limits.
func checkRound(raw json.RawMessage, qs []Question) error {
	if len(qs) > MaxQuestions {
		return &LimitError{What: fmt.Sprintf("%d questions in one round; this client accepts at most %d", len(qs), MaxQuestions)}
	}
	for _, q := range qs {
		if err := checkQuestion(q.Key, q.Params); err != nil {
			return err
		}
	}
	if len(raw) > MaxRoundBytes {
		return &LimitError{What: fmt.Sprintf("a round of %s; this client accepts at most %s", size(len(raw)), size(MaxRoundBytes))}
	}
	return nil
}

// checkHeld refuses a question asked on a held session, which is a round of
// its own, as a round's inputRequests are refused: past the limits, or with
// text Postgres cannot keep (the history's search reads its message in SQL).
func checkHeld(key string, params json.RawMessage) error {
	if err := checkStorable(params, "its questions", true); err != nil {
		return err
	}
	if err := checkQuestion(key, params); err != nil {
		return err
	}
	if len(params) > MaxRoundBytes {
		return &LimitError{What: fmt.Sprintf("a question (%q) of %s; this client accepts at most %s", key, size(len(params)), size(MaxRoundBytes))}
	}
	return nil
}

// checkQuestion refuses a question whose message or schema is too large.
func checkQuestion(key string, params json.RawMessage) error {
	if params == nil {
		return nil
	}
	var p struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil // the question's own checks say what is wrong
	}
	if len(p.Message) > MaxMessage {
		return &LimitError{What: fmt.Sprintf("a question (%q) with a message of %s; this client shows at most %s", key, size(len(p.Message)), size(MaxMessage))}
	}
	if len(p.RequestedSchema) > MaxSchema {
		return &LimitError{What: fmt.Sprintf("a question (%q) with a schema of %s; this client accepts at most %s", key, size(len(p.RequestedSchema)), size(MaxSchema))}
	}
	return nil
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

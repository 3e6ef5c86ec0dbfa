package round

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// A sampling request is answered by a person, who writes the reply a model
// would give. A declined one is not answered at all: the spec has no
// refusal to send back ("the client does not need to replay the initial
// call"), so the call ends there and the server is not asked again.

// Messages for sampling and roots questions.
const (
	replyRequired   = "Write the reply, or choose Decline."
	refusedSampling = "You declined the server's sampling request, so the request was not sent again: " +
		"a declined sampling request ends the call."
	rootsGiven = "Roots are answered from this server's settings; leave this answer out."
)

// ReplyName is the posted name of sampling question i's reply.
func ReplyName(i int) string { return fmt.Sprintf("q%d.reply", i) }

// ReplyID is the id of sampling question i's reply, for a link to it.
func ReplyID(i int) string { return fmt.Sprintf("q%d-reply", i) }

// Sampling is a sampling/createMessage request's params, read loosely: a
// field of an unexpected shape is shown as the server sent it.
type Sampling struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	SystemPrompt     string          `json:"systemPrompt"`
	MaxTokens        json.Number     `json:"maxTokens"`
	Temperature      *json.Number    `json:"temperature"`
	StopSequences    []string        `json:"stopSequences"`
	IncludeContext   string          `json:"includeContext"`
	Metadata         json.RawMessage `json:"metadata"`
	ModelPreferences *struct {
		Hints []struct {
			Name string `json:"name"`
		} `json:"hints"`
		CostPriority         *json.Number `json:"costPriority"`
		SpeedPriority        *json.Number `json:"speedPriority"`
		IntelligencePriority *json.Number `json:"intelligencePriority"`
	} `json:"modelPreferences"`
	Tools []struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
	ToolChoice *struct {
		Mode string `json:"mode"`
	} `json:"toolChoice"`
}

// parseSampling reads a sampling request for the person to answer, and a
// one-line summary of it for lists. ok is false when it cannot be read.
func parseSampling(params json.RawMessage) (*Sampling, string, bool) {
	var p Sampling
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if params == nil || dec.Decode(&p) != nil {
		return nil, "", false
	}
	last := ""
	for _, m := range p.Messages {
		if m.Role != "user" {
			continue
		}
		blocks, _ := Blocks(m.Content)
		for _, b := range blocks {
			if b.Type == "text" {
				last = b.Text
			}
		}
	}
	summary := "Write the model's reply (sampling)"
	if last != "" {
		if r := []rune(strings.Join(strings.Fields(last), " ")); len(r) > 80 {
			last = string(r[:79]) + "…"
		}
		summary = "Write the model's reply to “" + last + "”"
	}
	return &p, summary, true
}

// Content is a content block as a server sends it, in a result or in a
// message of a conversation.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MIMEType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Title    string `json:"title"`
	Resource *struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
	} `json:"resource"`
}

// Blocks reads a message's content, which is one block or a list of them.
// ok is false when it is neither.
func Blocks(content json.RawMessage) ([]Content, bool) {
	var blocks []Content
	if err := json.Unmarshal(content, &blocks); err != nil {
		var one Content
		if err := json.Unmarshal(content, &one); err != nil {
			return nil, false
		}
		blocks = []Content{one}
	}
	return blocks, true
}

// samplingReply is the CreateMessageResult a person's reply is sent as.
func samplingReply(text string) map[string]any {
	return map[string]any{
		"role":       "assistant",
		"content":    map[string]any{"type": "text", "text": text},
		"model":      "human",
		"stopReason": "endTurn",
	}
}

// NeverSent reports whether the answers given to round r were never sent:
// a declined sampling request among its questions qs ended the call.
func NeverSent(r *store.Round, qs []Question) bool {
	return r.Status == store.RoundAnswered && r.HeldBy == nil && refused(qs, r.Responses)
}

// refused reports whether the person declined a sampling question of the
// round, in the inputResponses about to be stored.
func refused(qs []Question, responses json.RawMessage) bool {
	var given map[string]struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(responses, &given)
	for _, q := range qs {
		if q.Kind == mcpclient.KindSampling && given[q.Key].Action != "" {
			return true
		}
	}
	return false
}

// WithRoots gives a round's roots/list questions the answer from the
// call's server settings, to show and to send.
func WithRoots(qs []Question, call *store.Call) {
	for i := range qs {
		if qs[i].Kind != mcpclient.KindRoots {
			continue
		}
		qs[i].Roots = store.ParseRoots(call.ServerRootsList)
		qs[i].Auto = store.RootsResult(call.ServerRootsList)
	}
}

// KindSummary names a question that has no message of its own, for lists.
func KindSummary(q mcpclient.Question) string {
	switch q.Kind {
	case mcpclient.KindSampling:
		if _, summary, ok := parseSampling(q.Params); ok {
			return summary
		}
		return "Write the model's reply (sampling)"
	case mcpclient.KindRoots:
		return "Which folders the server may look at (roots): answered automatically"
	}
	return ""
}

// postedReply reads a sampling question's posted reply.
func postedReply(values url.Values, i int) string {
	return values.Get(ReplyName(i))
}

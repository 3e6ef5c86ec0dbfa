package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Kinds of input request.
const (
	KindForm     = "form"     // elicitation/create, form mode
	KindURL      = "url"      // elicitation/create, URL mode
	KindSampling = "sampling" // sampling/createMessage
	KindRoots    = "roots"    // roots/list
)

// Question is one input request of a round.
type Question struct {
	Key    string
	Method string
	Kind   string
	// Params is the request's params as sent; nil when it sent none, which
	// the schema allows (for example {"method":"roots/list"}).
	Params json.RawMessage
}

// ParseQuestions reads an inputRequests object without the go-sdk's typed
// decoding, which fails on an input request that has no params.
// The questions come in the order the server wrote them.
func ParseQuestions(raw json.RawMessage) ([]Question, error) {
	var m map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("the server sent inputRequests that are not an object of requests: %w", err)
	}
	qs := make([]Question, 0, len(m))
	for _, key := range ObjectKeys(raw) {
		r := m[key]
		q := Question{Key: key, Method: r.Method}
		if len(r.Params) > 0 && string(r.Params) != "null" {
			q.Params = r.Params
		}
		switch r.Method {
		case "elicitation/create":
			var p struct {
				Mode string `json:"mode"`
			}
			if q.Params != nil {
				if err := json.Unmarshal(q.Params, &p); err != nil {
					return nil, fmt.Errorf("input request %q: params are not an object", key)
				}
			}
			switch p.Mode {
			case "", "form":
				q.Kind = KindForm
			case "url":
				q.Kind = KindURL
			default:
				return nil, fmt.Errorf("input request %q asks for elicitation in an unknown mode %q", key, p.Mode)
			}
		case "sampling/createMessage":
			q.Kind = KindSampling
		case "roots/list":
			q.Kind = KindRoots
		default:
			return nil, fmt.Errorf("input request %q has an unsupported method %q", key, r.Method)
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// ObjectKeys lists the keys of a JSON object in the order they are written
// (a Go map would lose it), each once: nil for anything but an object, and
// the keys read so far of one that breaks off.
func ObjectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		key, _ := tok.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	return keys
}

// UndeclaredError is a round asking for a kind of input this client did not
// declare. The spec forbids it; we fail the call rather than hang.
type UndeclaredError struct {
	Key, Kind string
}

func (e *UndeclaredError) Error() string {
	what := map[string]string{
		KindForm:     "a form (elicitation)",
		KindURL:      "a URL-mode elicitation",
		KindSampling: "sampling (sampling/createMessage)",
		KindRoots:    "roots (roots/list)",
	}[e.Kind]
	return fmt.Sprintf("the server asked for %s in input request %q, which this client did not declare for this server", what, e.Key)
}

func (caps Capabilities) check(qs []Question) error {
	for _, q := range qs {
		ok := map[string]bool{
			KindForm:     caps.FormElicitation,
			KindURL:      caps.URLElicitation,
			KindSampling: caps.Sampling,
			KindRoots:    caps.Roots,
		}[q.Kind]
		if !ok {
			return &UndeclaredError{Key: q.Key, Kind: q.Kind}
		}
	}
	return nil
}

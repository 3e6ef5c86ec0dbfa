package round

import (
	"encoding/json"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// AgentAnswer checks an agent's inputResponses for round r of call as
// APIAnswer checks a program's, but for roots: an agent asked a round
// (rounds.asks = agent) declared roots, so the ListRootsResult it gives
// is its answer, kept as given; roots it leaves out are answered from the
// server's settings, as for a person.
func AgentAnswer(call *store.Call, r *store.Round, raw json.RawMessage) (*Answer, error) {
	qs, err := waiting(call, r)
	if err != nil {
		return nil, err
	}
	var given map[string]json.RawMessage
	if json.Unmarshal(raw, &given) != nil || given == nil {
		return APIAnswer(call, r, raw)
	}
	own := map[string]json.RawMessage{}
	misfit := FieldErrors{}
	for _, q := range qs {
		v, ok := given[q.Key]
		if q.Kind != mcpclient.KindRoots || !ok {
			continue
		}
		var roots struct {
			Roots []struct {
				URI string `json:"uri"`
			} `json:"roots"`
		}
		if json.Unmarshal(v, &roots) != nil || roots.Roots == nil {
			misfit[q.Key] = map[string]string{"": "An answer to roots/list must be a ListRootsResult: {\"roots\": [...]}."}
		}
		own[q.Key] = v
		delete(given, q.Key)
	}
	rest, err := mcpclient.MarshalRaw(given)
	if err != nil {
		return nil, err
	}
	a, err := APIAnswer(call, r, rest)
	if err != nil || len(own) == 0 {
		return a, err
	}
	for k, v := range misfit {
		if a.Misfit == nil {
			a.Misfit = FieldErrors{}
		}
		a.Misfit[k], a.Responses = v, nil
	}
	if !a.Fits() {
		return a, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(a.Responses, &all); err != nil {
		return nil, err
	}
	for k, v := range own {
		all[k] = v
	}
	if a.Responses, err = mcpclient.MarshalRaw(all); err != nil {
		return nil, err
	}
	return a, nil
}

package round

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// refusedAtDeadline ends a call whose sampling request nobody answered and
// Rounds declined at the deadline.
const refusedAtDeadline = "Nobody answered by the deadline, so Rounds declined the server's sampling request: " +
	"a declined sampling request ends the call."

// DeadlineAnswer is the answer Rounds gives for a round nobody answered,
// as its plan's on_expiry says ("decline" or "cancel"): that action for
// every question, checked as an answer from the API would be. A sampling
// request can only be declined; roots are answered from the server's
// settings as always.
func DeadlineAnswer(call *store.Call, r *store.Round, onExpiry string) (*Answer, error) {
	if onExpiry != store.OnExpiryDecline && onExpiry != store.OnExpiryCancel {
		return nil, fmt.Errorf("no answer for on_expiry %q", onExpiry)
	}
	qs, err := waiting(call, r)
	if err != nil {
		return nil, err
	}
	given := map[string]json.RawMessage{}
	for _, q := range qs {
		switch q.Kind {
		case mcpclient.KindRoots:
		case mcpclient.KindSampling:
			given[q.Key] = json.RawMessage(`{"action":"decline"}`)
		default:
			given[q.Key] = json.RawMessage(`{"action":"` + onExpiry + `"}`)
		}
	}
	raw, err := mcpclient.MarshalRaw(given)
	if err != nil {
		return nil, err
	}
	a, err := APIAnswer(call, r, raw)
	if err != nil {
		return nil, err
	}
	if !a.Fits() {
		return nil, fmt.Errorf("the deadline's answer does not fit: %v", a.Misfit)
	}
	if a.Refusal != "" {
		a.Refusal = refusedAtDeadline
	}
	return a, nil
}

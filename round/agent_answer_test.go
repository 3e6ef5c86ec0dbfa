package round

import (
	"encoding/json"
	"strings"
	"testing"
)

// An agent's roots are its answer, kept as given; left out, they come from
// the server's settings; anything but a ListRootsResult does not fit.
func TestAgentAnswer(t *testing.T) {
	t.Parallel()
	reply := `{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"agent"}`
	settings := `{"roots":[{"uri":"file:///srv/data","name":"Data"}]}`
	for _, tt := range []struct {
		name, body, roots, misfit string
	}{
		{"OwnRoots", `{"capital":` + reply + `,"roots":{"roots":[{"uri":"file:///work"}]},"trip":{"action":"decline"}}`, `{"roots":[{"uri":"file:///work"}]}`, ""},
		{"NoRoots", `{"capital":` + reply + `,"trip":{"action":"decline"}}`, settings, ""},
		{"ErrRoots", `{"capital":` + reply + `,"roots":{"action":"accept"},"trip":{"action":"decline"}}`, "", "roots: An answer to roots/list must be"},
		{"ErrOther", `{"roots":{"roots":[]},"trip":{"action":"decline"}}`, "", "capital: Answer this question"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call, r := multipleRound(t)
			a, err := AgentAnswer(call, r, json.RawMessage(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.misfit != "" {
				if a.Fits() || !strings.Contains(a.Misfit.String(), tt.misfit) {
					t.Fatalf("fits = %v, misfit %q; want it to say %q", a.Fits(), a.Misfit.String(), tt.misfit)
				}
				return
			}
			var got map[string]json.RawMessage
			if !a.Fits() || json.Unmarshal(a.Responses, &got) != nil {
				t.Fatalf("fits = %v, misfit %v", a.Fits(), a.Misfit)
			}
			if string(got["roots"]) != tt.roots || len(got) != 3 {
				t.Errorf("inputResponses = %s, want roots %s", a.Responses, tt.roots)
			}
		})
	}
}

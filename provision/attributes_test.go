package provision

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/elimity-com/scim/schema"
)

// TestHidden: what RFC 7643 marks returned "never" or writeOnly in the
// User, enterprise User and Group schemas is the User's password alone,
// and it is taken out in any case, beside what is kept.
func TestHidden(t *testing.T) {
	user := hiddenOf(schema.CoreUserSchema(), schema.ExtensionEnterpriseUser())
	if got := user.names(); !slices.Equal(got, []string{"password"}) {
		t.Errorf("hidden of a User: %v, want [password]", got)
	}
	if got := hiddenOf(schema.CoreGroupSchema()).names(); len(got) != 0 {
		t.Errorf("hidden of a Group: %v, want nothing", got)
	}
	var attrs map[string]any
	_ = json.Unmarshal([]byte(`{"userName":"a","PASSWORD":"x","password":"y","name":{"password":"kept: not the User's"}}`), &attrs)
	user.scrub(attrs)
	if b, _ := json.Marshal(attrs); string(b) != `{"name":{"password":"kept: not the User's"},"userName":"a"}` {
		t.Errorf("scrubbed: %s", b)
	}
}

package forms

import (
	"encoding/json"
	"net/url"
	"os"
	"testing"
)

// MustNew builds a form for a schema written as a string.
func MustNew(tb testing.TB, schema, prefix string) *Form {
	tb.Helper()
	f, err := New(json.RawMessage(schema), prefix)
	if err != nil {
		tb.Fatalf("New(%s): %v", schema, err)
	}
	return f
}

// MustFixture reads testdata/<path> and returns its requestedSchema.
func MustFixture(tb testing.TB, path string) json.RawMessage {
	tb.Helper()
	b, err := os.ReadFile("testdata/" + path)
	if err != nil {
		tb.Fatal(err)
	}
	var params struct {
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(b, &params); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return params.RequestedSchema
}

// MustJSON marshals v compactly.
func MustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal %#v: %v", v, err)
	}
	return string(b)
}

// post builds posted values from name, value pairs.
func post(pairs ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		v.Add(pairs[i], pairs[i+1])
	}
	return v
}

// browserPost is what a browser submits for the form as it stands: every
// control with its current value, the hidden markers, and the time zone.
func browserPost(f *Form) url.Values {
	v := url.Values{}
	if f.Fallback {
		v.Set(f.JSONName(), f.JSON)
		return v
	}
	if f.HasDateTime() {
		v.Set(f.TimeZoneName(), f.TimeZone)
	}
	for _, fd := range f.Fields {
		switch fd.Kind {
		case KindCheckbox:
			v.Set(fd.PresentName(), "1")
			if fd.Checked {
				v.Set(fd.InputName, "true")
			}
		case KindCheckboxes:
			v.Set(fd.PresentName(), "1")
			for _, x := range fd.Values {
				v.Add(fd.InputName, x)
			}
		default:
			v.Set(fd.InputName, fd.Value)
		}
	}
	return v
}

func fieldErrors(f *Form) map[string]string {
	out := map[string]string{}
	for _, fd := range f.Fields {
		if fd.Error != "" {
			out[fd.Name] = fd.Error
		}
	}
	return out
}

func intp(n int) *int { return &n }

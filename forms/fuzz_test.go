package forms

import (
	"encoding/json"
	"errors"
	"net/url"
	"testing"
)

// FuzzDecode feeds arbitrary schemas and posted bodies through New and
// Decode. Neither may panic; New refuses only with its documented errors;
// IDs stay safe; content always marshals; and content Decode accepts comes
// back unchanged through Fill and a browser's post.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), "q.n=1.0")
	f.Add([]byte(`{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}`), "q.at=1900-01-01T00%3A00&q.%24tz=Europe%2FParis")
	f.Fuzz(func(t *testing.T, schema []byte, body string) {
		form, err := New(schema, "q.")
		if err != nil {
			for _, want := range []error{ErrSchemaTooLarge, ErrSchemaTooDeep, ErrSchemaMalformed, ErrTooManyFields} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("New: unexpected error %v", err)
		}
		names := map[string]bool{}
		for _, fd := range form.Fields {
			if !safeID.MatchString(fd.ID) {
				t.Fatalf("unsafe ID %q", fd.ID)
			}
			names[fd.Name] = true
		}
		values, _ := url.ParseQuery(body)
		content, ok := form.Decode(values)
		b, err := json.Marshal(content)
		if err != nil {
			t.Fatalf("content does not marshal: %v", err)
		}
		if !form.Fallback {
			for name := range content {
				if !names[name] {
					t.Fatalf("content has %q, which is no field", name)
				}
			}
		}
		if !ok {
			return
		}
		// An optional boolean not submitted comes back false: a browser
		// always posts the marker.
		for _, fd := range form.Fields {
			if _, has := content[fd.Name]; !has && fd.Kind == KindCheckbox {
				content[fd.Name] = false
			}
		}
		b, _ = json.Marshal(content)
		again, err := New(schema, "q.")
		if err != nil {
			t.Fatal(err)
		}
		if err := again.SetTimeZone(form.TimeZone); err != nil {
			t.Fatalf("SetTimeZone(%q): %v", form.TimeZone, err)
		}
		again.Fill(content)
		content2, ok2 := again.Decode(browserPost(again))
		b2, _ := json.Marshal(content2)
		if !ok2 || string(b) != string(b2) {
			t.Fatalf("round trip:\n first %s\nsecond %s (ok %v, %v %q)", b, b2, ok2, fieldErrors(again), again.Errors)
		}
	})
}

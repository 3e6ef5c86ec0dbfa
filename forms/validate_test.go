package forms

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
)

func TestValidate(t *testing.T) {
	colors := string(MustFixture(t, "spec/titled-multi-select.json"))
	tests := []struct {
		name    string
		schema  string
		content any
		want    map[string]string
	}{
		{"OK", string(MustFixture(t, "spec/elicit-multiple-fields.json")),
			map[string]any{"name": "Monalisa Octocat", "email": "octocat@github.com", "age": 30}, nil},
		{"Required", string(MustFixture(t, "spec/elicit-multiple-fields.json")),
			map[string]any{"age": 17.5}, map[string]string{"name": "Answer this question", "email": "Answer this question", "age": "Must be at least 18"}},
		{"EnumNotOffered", string(MustFixture(t, "spec/untitled-single-select.json")),
			map[string]any{"color": "Purple"}, map[string]string{"color": "Choose one of the offered options"}},
		{"OneOfNotOffered", string(MustFixture(t, "spec/titled-single-select.json")),
			map[string]any{"color": "Red"}, map[string]string{"color": "Choose one of the offered options"}},
		{"ItemNotOffered", colors, map[string]any{"colors": []string{"#FF0000", "Red"}}, map[string]string{"colors": "Choose one of the offered options"}},
		{"GoSliceOfStrings", colors, map[string]any{"colors": []string{"#FF0000"}}, nil},
		{"MaxItems", colors, map[string]any{"colors": []string{"#FF0000", "#00FF00", "#0000FF"}}, map[string]string{"colors": "Choose at most 2"}},
		{"MinItems", colors, map[string]any{"colors": []string{}}, map[string]string{"colors": "Choose at least one"}},
		{"Unique", `{"type":"object","properties":{"t":{"type":"array","uniqueItems":true,"items":{"enum":["a","b"]}}}}`,
			map[string]any{"t": []string{"a", "a"}}, map[string]string{"t": "Choose each option only once"}},
		{"IntegerType", string(MustFixture(t, "seeds/scalar-int.json")), map[string]any{"value": 1.5}, map[string]string{"value": "Enter a whole number"}},
		{"IntegerOnePointZero", string(MustFixture(t, "seeds/scalar-int.json")), map[string]any{"value": 1.0}, nil},
		{"StringType", string(MustFixture(t, "seeds/scalar-str.json")), map[string]any{"value": 5}, map[string]string{"value": "Enter text"}},
		{"BooleanType", string(MustFixture(t, "seeds/scalar-bool.json")), map[string]any{"value": "yes"}, map[string]string{"value": "Enter true or false"}},
		{"Exclusive", `{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1.5}}}`,
			map[string]any{"x": 0}, map[string]string{"x": "Must be more than 0"}},
		{"ExclusiveMax", `{"type":"object","properties":{"x":{"type":"number","exclusiveMaximum":1.5}}}`,
			map[string]any{"x": 1.5}, map[string]string{"x": "Must be less than 1.5"}},
		{"MultipleOf", `{"type":"object","properties":{"x":{"type":"number","multipleOf":0.5}}}`,
			map[string]any{"x": 0.7}, map[string]string{"x": "Must be a multiple of 0.5"}},
		{"OneCharacter", `{"type":"object","properties":{"s":{"type":"string","minLength":1}}}`,
			map[string]any{"s": ""}, map[string]string{"s": "Must be at least 1 character"}},
		{"AdditionalProperties", `{"type":"object","properties":{},"additionalProperties":false}`,
			map[string]any{"x": 1}, map[string]string{"": "The server does not accept answers to questions it did not ask"}},
		{"MinProperties", `{"type":"object","properties":{"a":{"type":"string"}},"minProperties":1}`,
			map[string]any{}, map[string]string{"": "Answer at least 1 question"}},
		{"DateTimeFormat", `{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}`,
			map[string]any{"at": "2026-07-28T14:30"}, map[string]string{"at": "Enter a date and time"}},
		{"ECMAOnlyPatternNotEnforced", `{"type":"object","properties":{"s":{"type":"string","pattern":"^(?=a)a$"}}}`,
			map[string]any{"s": "b"}, nil},
		{"LocalRef", `{"type":"object","$defs":{"P":{"type":"string","maxLength":2}},"properties":{"p":{"$ref":"#/$defs/P"}}}`,
			map[string]any{"p": "abc"}, map[string]string{"p": "Must be at most 2 characters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(json.RawMessage(tt.schema), tt.content)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateNeverLoadsRefs(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, schema string }{
		{"HTTPRef", `{"type":"object","properties":{"a":{"$ref":"` + srv.URL + `/s.json"}}}`},
		{"FileRef", `{"type":"object","properties":{"a":{"$ref":"file://` + file + `"}}}`},
		{"RelativeRefAgainstHTTPID", `{"$id":"` + srv.URL + `/root.json","type":"object","properties":{"a":{"$ref":"s.json"}}}`},
		{"MetaSchema", `{"$schema":"` + srv.URL + `/meta.json","type":"object","properties":{"a":{"type":"string"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate(json.RawMessage(tt.schema), map[string]any{"a": "x"})
			if !errors.Is(err, ErrSchemaUnusable) {
				t.Errorf("Validate err = %v, want ErrSchemaUnusable", err)
			}
			f := MustNew(t, tt.schema, "q.")
			if _, ok := f.Decode(browserPost(f)); !ok && len(f.Errors) > 0 {
				t.Errorf("decoding a form over an uncheckable schema: %q", f.Errors)
			}
			if hits.Load() != 0 {
				t.Fatalf("the test server was fetched %d times", hits.Load())
			}
		})
	}
}

func TestValidateMissingSchema(t *testing.T) {
	if _, err := Validate(nil, map[string]any{}); !errors.Is(err, ErrNoSchema) {
		t.Errorf("err = %v, want ErrNoSchema", err)
	}
	if _, err := Validate(json.RawMessage(`{"type":"object"}`), map[string]any{"f": func() {}}); err == nil {
		t.Error("content that is not JSON accepted")
	}
}

// A property the compiler rejects (unknown type) does not stop the others
// being checked.
func TestSalvage(t *testing.T) {
	f := MustNew(t, `{"$schema":"https://example.invalid/meta","type":"object","properties":{"n":{"type":"integer","maximum":3},"w":{"type":"wibble"}},"required":["n"]}`, "q.")
	if f.Fields[1].Kind != KindJSON {
		t.Fatalf("w is %s", f.Fields[1].Kind)
	}
	_, ok := f.Decode(post("q.n", "4", "q.w", `{"any": "thing"}`))
	if ok || f.Fields[0].Error != "Must be at most 3" || f.Fields[1].Error != "" {
		t.Errorf("ok %v errors %v", ok, fieldErrors(f))
	}
	if _, ok := f.Decode(post("q.w", `1`)); ok || f.Fields[0].Error != "Answer this question" {
		t.Errorf("ok %v errors %v", ok, fieldErrors(f))
	}
}

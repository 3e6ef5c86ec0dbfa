package forms

import (
	"net/url"
	"path/filepath"
	"reflect"
	"testing"
)

// TestFixtures runs every schema in testdata/spec (the specification's
// examples) and testdata/seeds (what fastmcp servers send for each kind of
// response_type) through New and Decode.
func TestFixtures(t *testing.T) {
	tests := map[string]struct {
		kinds   []Kind
		empty   bool
		values  url.Values
		content string
	}{
		"spec/string-email.json": {[]Kind{KindEmail}, false,
			post("q.displayName", "ada@example.com"), `{"displayName":"ada@example.com"}`},
		"spec/number.json": {[]Kind{KindNumber}, false,
			post("q.displayName", "42.5"), `{"displayName":42.5}`},
		"spec/boolean.json": {[]Kind{KindCheckbox}, false,
			post("q.displayName$present", "1", "q.displayName", "true"), `{"displayName":true}`},
		"spec/untitled-single-select.json": {[]Kind{KindRadio}, false,
			post("q.color", "Blue"), `{"color":"Blue"}`},
		"spec/titled-single-select.json": {[]Kind{KindRadio}, false,
			post("q.color", "#0000FF"), `{"color":"#0000FF"}`},
		"spec/legacy-titled-enum.json": {[]Kind{KindRadio}, false,
			post("q.color", "#0000FF"), `{"color":"#0000FF"}`},
		"spec/untitled-multi-select.json": {[]Kind{KindCheckboxes}, false,
			post("q.colors$present", "1", "q.colors", "Blue"), `{"colors":["Blue"]}`},
		"spec/titled-multi-select.json": {[]Kind{KindCheckboxes}, false,
			post("q.colors$present", "1", "q.colors", "#0000FF", "q.colors", "#FF0000"), `{"colors":["#FF0000","#0000FF"]}`},
		"spec/elicit-single-field.json": {[]Kind{KindText}, false,
			post("q.name", "octocat"), `{"name":"octocat"}`},
		"spec/elicit-multiple-fields.json": {[]Kind{KindText, KindEmail, KindNumber}, false,
			post("q.name", "Monalisa Octocat", "q.email", "octocat@github.com", "q.age", "30"),
			`{"age":30,"email":"octocat@github.com","name":"Monalisa Octocat"}`},

		"seeds/scalar-str.json":  {[]Kind{KindText}, false, post("q.value", "Ada"), `{"value":"Ada"}`},
		"seeds/scalar-int.json":  {[]Kind{KindInteger}, false, post("q.value", "42"), `{"value":42}`},
		"seeds/scalar-bool.json": {[]Kind{KindCheckbox}, false, post("q.value$present", "1"), `{"value":false}`},
		"seeds/literal.json":     {[]Kind{KindRadio}, false, post("q.value", "high"), `{"value":"high"}`},
		"seeds/enum.json":        {[]Kind{KindRadio}, false, post("q.value", "low"), `{"value":"low"}`},
		"seeds/titled-dict.json": {[]Kind{KindRadio}, false, post("q.value", "medium"), `{"value":"medium"}`},
		"seeds/list-of-list.json": {[]Kind{KindCheckboxes}, false,
			post("q.value$present", "1", "q.value", "feature", "q.value", "bug"), `{"value":["bug","feature"]}`},
		"seeds/list-of-dict.json": {[]Kind{KindCheckboxes}, false,
			post("q.value$present", "1"), `{"value":[]}`},
		"seeds/dataclass.json": {[]Kind{KindText, KindText, KindRadio, KindText}, false,
			post("q.title", "Ship", "q.description", "Ship it", "q.priority", "high", "q.due_date", "Friday"),
			`{"description":"Ship it","due_date":"Friday","priority":"high","title":"Ship"}`},
		"seeds/pydantic-defaults.json": {[]Kind{KindText, KindText, KindRadio, KindNumber, KindInteger, KindEmail, KindCheckbox, KindCheckboxes}, false,
			post("q.title", "Ship", "q.urgent$present", "1", "q.tags$present", "1"), `{"title":"Ship","urgent":false}`},
		"seeds/none.json":             {nil, true, post(), `{}`},
		"seeds/confirm-deletion.json": {[]Kind{KindCheckbox}, false, post("q.confirm$present", "1", "q.confirm", "true"), `{"confirm":true}`},
		"seeds/user-info.json": {[]Kind{KindText, KindInteger}, false,
			post("q.name", "Ada", "q.age", "36"), `{"age":36,"name":"Ada"}`},
	}
	// The schemas of servers' questions; testdata/slack holds the Slack
	// modals they become (package slack's golden files), not schemas.
	seeds, _ := filepath.Glob("testdata/seeds/*.json")
	spec, _ := filepath.Glob("testdata/spec/*.json")
	files := append(seeds, spec...)
	if len(files) != len(tests) {
		t.Errorf("%d fixtures, %d expectations", len(files), len(tests))
	}
	for _, file := range files {
		name, _ := filepath.Rel("testdata", file)
		t.Run(name, func(t *testing.T) {
			tt, ok := tests[filepath.ToSlash(name)]
			if !ok {
				t.Fatal("no expectation for this fixture")
			}
			f, err := New(MustFixture(t, name), "q.")
			if err != nil {
				t.Fatal(err)
			}
			if f.Fallback || f.Empty != tt.empty {
				t.Fatalf("Fallback %v (%s), Empty %v", f.Fallback, f.FallbackReason, f.Empty)
			}
			var kinds []Kind
			for _, fd := range f.Fields {
				kinds = append(kinds, fd.Kind)
			}
			if !reflect.DeepEqual(kinds, tt.kinds) {
				t.Errorf("kinds = %v, want %v", kinds, tt.kinds)
			}
			content, ok := f.Decode(tt.values)
			if !ok || MustJSON(t, content) != tt.content {
				t.Errorf("Decode = %s, %v (%v %q); want %s", MustJSON(t, content), ok, fieldErrors(f), f.Errors, tt.content)
			}
		})
	}
}

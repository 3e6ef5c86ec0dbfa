package forms

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

const (
	textSchema     = `{"type":"object","properties":{"name":{"type":"string","minLength":3,"maxLength":5},"nick":{"type":"string"}},"required":["name"]}`
	integerSchema  = `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10}},"required":["n"]}`
	numberSchema   = `{"type":"object","properties":{"x":{"type":"number","minimum":-1,"maximum":100}}}`
	boolSchema     = `{"type":"object","properties":{"ok":{"type":"boolean"},"must":{"type":"boolean"}},"required":["must"]}`
	radioSchema    = `{"type":"object","properties":{"color":{"type":"string","enum":["Red","Green","Blue"]}},"required":["color"]}`
	titledSchema   = `{"type":"object","properties":{"color":{"type":"string","oneOf":[{"const":"#FF0000","title":"Red"},{"const":"#00FF00","title":"Green"}]}}}`
	multiSchema    = `{"type":"object","properties":{"tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["bug","feature","docs"]}}},"required":["tags"]}`
	optMultiSchema = `{"type":"object","properties":{"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},"default":["a"]}}}`
	formatSchema   = `{"type":"object","properties":{"email":{"type":"string","format":"email"},"site":{"type":"string","format":"uri"},"day":{"type":"string","format":"date"},"code":{"type":"string","pattern":"^[A-Z]{3}$"},"digits":{"type":"string","pattern":"[0-9]"}}}`
	dateTimeSchema = `{"type":"object","properties":{"at":{"type":"string","format":"date-time"}},"required":["at"]}`
	jsonSchema     = `{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	textareaSchema = `{"type":"object","properties":{"notes":{"type":"string","maxLength":1000}}}`
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name        string
		schema      string
		values      url.Values
		wantContent string            // compact JSON of the content
		wantOK      bool              // ok from Decode
		wantErrors  map[string]string // every field error, by property name
		wantForm    string            // a substring of the form-level errors ("" for none)
	}{
		{name: "TextOK", schema: textSchema, values: post("q.name", "Ada", "q.nick", " Al "),
			wantContent: `{"name":"Ada","nick":" Al "}`, wantOK: true},
		{name: "EmptyOptionalIsAbsent", schema: textSchema, values: post("q.name", "Ada", "q.nick", ""),
			wantContent: `{"name":"Ada"}`, wantOK: true},
		{name: "MissingOptionalIsAbsent", schema: textSchema, values: post("q.name", "Ada"),
			wantContent: `{"name":"Ada"}`, wantOK: true},
		{name: "EmptyRequired", schema: textSchema, values: post("q.name", ""),
			wantContent: `{}`, wantErrors: map[string]string{"name": "Answer this question"}},
		{name: "MissingRequired", schema: textSchema, values: post(),
			wantContent: `{}`, wantErrors: map[string]string{"name": "Answer this question"}},
		{name: "TooShort", schema: textSchema, values: post("q.name", "Al"),
			wantContent: `{"name":"Al"}`, wantErrors: map[string]string{"name": "Must be at least 3 characters"}},
		{name: "TooLong", schema: textSchema, values: post("q.name", "Adalbert"),
			wantContent: `{"name":"Adalbert"}`, wantErrors: map[string]string{"name": "Must be at most 5 characters"}},
		{name: "LengthCountsCharactersNotBytes", schema: textSchema, values: post("q.name", "ÉÉÉÉÉ"),
			wantContent: `{"name":"ÉÉÉÉÉ"}`, wantOK: true},

		{name: "Integer", schema: integerSchema, values: post("q.n", "7"), wantContent: `{"n":7}`, wantOK: true},
		{name: "IntegerOnePointZero", schema: integerSchema, values: post("q.n", "1.0"), wantContent: `{"n":1}`, wantOK: true},
		{name: "IntegerExponent", schema: integerSchema, values: post("q.n", "1e1"), wantContent: `{"n":10}`, wantOK: true},
		{name: "IntegerSpaces", schema: integerSchema, values: post("q.n", " 3 "), wantContent: `{"n":3}`, wantOK: true},
		{name: "IntegerOnePointFive", schema: integerSchema, values: post("q.n", "1.5"),
			wantContent: `{}`, wantErrors: map[string]string{"n": "Enter a whole number"}},
		{name: "IntegerText", schema: integerSchema, values: post("q.n", "seven"),
			wantContent: `{}`, wantErrors: map[string]string{"n": "Enter a whole number"}},
		{name: "IntegerBelowMinimum", schema: integerSchema, values: post("q.n", "0"),
			wantContent: `{"n":0}`, wantErrors: map[string]string{"n": "Must be at least 1"}},
		{name: "IntegerAboveMaximum", schema: integerSchema, values: post("q.n", "11"),
			wantContent: `{"n":11}`, wantErrors: map[string]string{"n": "Must be at most 10"}},

		{name: "NumberKeepsDigits", schema: numberSchema, values: post("q.x", "0.1000000000000000055511151231257827"),
			wantContent: `{"x":0.1000000000000000055511151231257827}`, wantOK: true},
		{name: "NumberNormalisedToJSON", schema: numberSchema, values: post("q.x", "+.50"),
			wantContent: `{"x":0.50}`, wantOK: true},
		{name: "NumberLeadingZeros", schema: numberSchema, values: post("q.x", "-007."),
			wantContent: `{"x":-7}`, wantErrors: map[string]string{"x": "Must be at least -1"}},
		{name: "NumberText", schema: numberSchema, values: post("q.x", "abc"),
			wantContent: `{}`, wantErrors: map[string]string{"x": "Enter a number"}},
		{name: "NumberComma", schema: numberSchema, values: post("q.x", "1,5"),
			wantContent: `{}`, wantErrors: map[string]string{"x": "Enter a number"}},
		{name: "NumberInfinity", schema: numberSchema, values: post("q.x", "Infinity"),
			wantContent: `{}`, wantErrors: map[string]string{"x": "Enter a number"}},
		{name: "NumberHugeExponent", schema: numberSchema, values: post("q.x", "1e999999"),
			wantContent: `{}`, wantErrors: map[string]string{"x": "Enter a number"}},
		{name: "NumberAboveMaximum", schema: numberSchema, values: post("q.x", "100.5"),
			wantContent: `{"x":100.5}`, wantErrors: map[string]string{"x": "Must be at most 100"}},

		{name: "BooleanUnchecked", schema: boolSchema, values: post("q.ok$present", "1", "q.must$present", "1"),
			wantContent: `{"must":false,"ok":false}`, wantOK: true},
		{name: "BooleanChecked", schema: boolSchema, values: post("q.ok$present", "1", "q.ok", "true", "q.must$present", "1", "q.must", "true"),
			wantContent: `{"must":true,"ok":true}`, wantOK: true},
		{name: "BooleanNotSubmitted", schema: boolSchema, values: post("q.must$present", "1"),
			wantContent: `{"must":false}`, wantOK: true},
		{name: "BooleanRequiredNotSubmitted", schema: boolSchema, values: post(),
			wantContent: `{}`, wantErrors: map[string]string{"must": "Answer this question"}},

		{name: "RadioOK", schema: radioSchema, values: post("q.color", "Green"), wantContent: `{"color":"Green"}`, wantOK: true},
		{name: "RadioUnknownValue", schema: radioSchema, values: post("q.color", "Purple"),
			wantContent: `{}`, wantErrors: map[string]string{"color": "Choose one of the offered options"}},
		{name: "RadioRequiredEmpty", schema: radioSchema, values: post("q.color", ""),
			wantContent: `{}`, wantErrors: map[string]string{"color": "Choose an option"}},
		{name: "TitledPostsConst", schema: titledSchema, values: post("q.color", "#00FF00"), wantContent: `{"color":"#00FF00"}`, wantOK: true},
		{name: "TitledTitleIsNotAValue", schema: titledSchema, values: post("q.color", "Green"),
			wantContent: `{}`, wantErrors: map[string]string{"color": "Choose one of the offered options"}},
		{name: "TitledOptionalNoAnswer", schema: titledSchema, values: post("q.color", ""), wantContent: `{}`, wantOK: true},

		{name: "MultiSelect", schema: multiSchema, values: post("q.tags$present", "1", "q.tags", "docs", "q.tags", "bug"),
			wantContent: `{"tags":["bug","docs"]}`, wantOK: true},
		{name: "MultiSelectDuplicatesCollapse", schema: multiSchema, values: post("q.tags$present", "1", "q.tags", "bug", "q.tags", "bug"),
			wantContent: `{"tags":["bug"]}`, wantOK: true},
		{name: "MultiSelectBelowMinItems", schema: multiSchema, values: post("q.tags$present", "1"),
			wantContent: `{"tags":[]}`, wantErrors: map[string]string{"tags": "Choose at least one"}},
		{name: "MultiSelectAboveMaxItems", schema: multiSchema, values: post("q.tags$present", "1", "q.tags", "bug", "q.tags", "feature", "q.tags", "docs"),
			wantContent: `{"tags":["bug","feature","docs"]}`, wantErrors: map[string]string{"tags": "Choose at most 2"}},
		{name: "MultiSelectUnknownValue", schema: multiSchema, values: post("q.tags$present", "1", "q.tags", "bug", "q.tags", "wontfix"),
			wantContent: `{}`, wantErrors: map[string]string{"tags": "Choose only the offered options"}},
		{name: "MultiSelectRequiredNotSubmitted", schema: multiSchema, values: post(),
			wantContent: `{}`, wantErrors: map[string]string{"tags": "Answer this question"}},
		{name: "MultiSelectOptionalNoneIsAbsent", schema: optMultiSchema, values: post("q.tags$present", "1"),
			wantContent: `{}`, wantOK: true},
		{name: "MultiSelectTitled", schema: optMultiSchema, values: post("q.tags$present", "1", "q.tags", "b"),
			wantContent: `{"tags":["b"]}`, wantOK: true},

		{name: "FormatsOK", schema: formatSchema,
			values:      post("q.email", " ada@example.com ", "q.site", "https://example.com/x", "q.day", "2026-07-28", "q.code", "ABC", "q.digits", "a1"),
			wantContent: `{"code":"ABC","day":"2026-07-28","digits":"a1","email":"ada@example.com","site":"https://example.com/x"}`, wantOK: true},
		{name: "EmailFormat", schema: formatSchema, values: post("q.email", "ada.example.com"),
			wantContent: `{"email":"ada.example.com"}`, wantErrors: map[string]string{"email": "Enter an email address"}},
		{name: "URIFormat", schema: formatSchema, values: post("q.site", "example.com"),
			wantContent: `{"site":"example.com"}`, wantErrors: map[string]string{"site": "Enter a full web address, like https://example.com"}},
		{name: "DateWrongShape", schema: formatSchema, values: post("q.day", "28/07/2026"),
			wantContent: `{}`, wantErrors: map[string]string{"day": "Enter a date, like 2026-07-28"}},
		{name: "DateImpossible", schema: formatSchema, values: post("q.day", "2026-02-30"),
			wantContent: `{}`, wantErrors: map[string]string{"day": "Enter a date, like 2026-07-28"}},
		{name: "PatternMismatch", schema: formatSchema, values: post("q.code", "abc", "q.digits", "abc"),
			wantContent: `{"code":"abc","digits":"abc"}`, wantErrors: map[string]string{"code": "Not in the expected format", "digits": "Not in the expected format"}},

		{name: "DateTimeUTCByDefault", schema: dateTimeSchema, values: post("q.at", "2026-07-28T14:30"),
			wantContent: `{"at":"2026-07-28T14:30:00Z"}`, wantOK: true},
		{name: "DateTimeIANAZone", schema: dateTimeSchema, values: post("q.at", "2026-07-28T14:30", "q.$tz", "Europe/Paris"),
			wantContent: `{"at":"2026-07-28T14:30:00+02:00"}`, wantOK: true},
		{name: "DateTimeWinterZone", schema: dateTimeSchema, values: post("q.at", "2026-01-15T09:05:30", "q.$tz", "America/New_York"),
			wantContent: `{"at":"2026-01-15T09:05:30-05:00"}`, wantOK: true},
		{name: "DateTimeOffset", schema: dateTimeSchema, values: post("q.at", "2026-07-28T14:30", "q.$tz", "+05:30"),
			wantContent: `{"at":"2026-07-28T14:30:00+05:30"}`, wantOK: true},
		{name: "DateTimeUnknownZone", schema: dateTimeSchema, values: post("q.at", "2026-07-28T14:30", "q.$tz", "Mars/Olympus"),
			wantContent: `{"at":"2026-07-28T14:30:00Z"}`, wantForm: "is unknown, so times are taken as UTC"},
		{name: "DateTimeLocalZoneRefused", schema: dateTimeSchema, values: post("q.at", "2026-07-28T14:30", "q.$tz", "Local"),
			wantContent: `{"at":"2026-07-28T14:30:00Z"}`, wantForm: "is unknown"},
		{name: "DateTimeBad", schema: dateTimeSchema, values: post("q.at", "tomorrow"),
			wantContent: `{}`, wantErrors: map[string]string{"at": "Enter a date and time, like 2026-07-28T14:30"}},

		{name: "JSONFieldValid", schema: jsonSchema, values: post("q.address", `{"city": "Paris"}`),
			wantContent: `{"address":{"city":"Paris"}}`, wantOK: true},
		{name: "JSONFieldValidated", schema: jsonSchema, values: post("q.address", `{"town": "Paris"}`),
			wantContent: `{"address":{"town":"Paris"}}`, wantErrors: map[string]string{"address": "Fill in every part of this answer"}},
		{name: "JSONFieldWrongType", schema: jsonSchema, values: post("q.address", `"Paris"`),
			wantContent: `{"address":"Paris"}`, wantErrors: map[string]string{"address": "Enter a JSON object"}},
		{name: "JSONFieldNotJSON", schema: jsonSchema, values: post("q.address", `{city: Paris}`),
			wantContent: `{}`, wantErrors: map[string]string{"address": `Enter valid JSON, for example "text", 42, true, ["a", "b"] or {"key": "value"}`}},
		{name: "JSONFieldTooDeep", schema: jsonSchema, values: post("q.address", strings.Repeat("[", MaxDepth+1)+strings.Repeat("]", MaxDepth+1)),
			wantContent: `{}`, wantErrors: map[string]string{"address": "This answer is nested too deeply"}},

		{name: "TextareaLineEndings", schema: textareaSchema, values: post("q.notes", "a\r\nb\r\n"),
			wantContent: `{"notes":"a\nb\n"}`, wantOK: true},
		{name: "InvalidUTF8Replaced", schema: textareaSchema, values: post("q.notes", "a\xffb"),
			wantContent: "{\"notes\":\"a\ufffdb\"}", wantOK: true},
		{name: "EmptySchema", schema: `{"type":"object","properties":{}}`, values: post("q.x", "ignored"),
			wantContent: `{}`, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := MustNew(t, tt.schema, "q.")
			content, ok := f.Decode(tt.values)
			if got := MustJSON(t, content); got != tt.wantContent {
				t.Errorf("content = %s, want %s", got, tt.wantContent)
			}
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v (field errors %v, form errors %q)", ok, tt.wantOK, fieldErrors(f), f.Errors)
			}
			wantErrors := tt.wantErrors
			if wantErrors == nil {
				wantErrors = map[string]string{}
			}
			if got := fieldErrors(f); !reflect.DeepEqual(got, wantErrors) {
				t.Errorf("field errors = %q, want %q", got, wantErrors)
			}
			formErrs := strings.Join(f.Errors, "\n")
			if tt.wantForm == "" && formErrs != "" || !strings.Contains(formErrs, tt.wantForm) {
				t.Errorf("form errors = %q, want %q", formErrs, tt.wantForm)
			}
			if tt.wantOK {
				// What Decode accepts, the exported Validate accepts too.
				if errs, err := Validate(json.RawMessage(tt.schema), content); err != nil || len(errs) != 0 {
					t.Errorf("Validate(content) = %v, %v", errs, err)
				}
			}
		})
	}
}

func TestDecodeKeepsWhatWasTyped(t *testing.T) {
	f := MustNew(t, `{"type":"object","properties":{
		"n":{"type":"integer"},"x":{"type":"number","default":5},"ok":{"type":"boolean","default":true},
		"tags":{"type":"array","items":{"enum":["a","b","c"]},"default":["a"]},"at":{"type":"string","format":"date-time"}}}`, "q.")
	_, ok := f.Decode(post("q.n", "1.5", "q.x", "", "q.ok$present", "1", "q.tags$present", "1", "q.tags", "c", "q.at", "2026-07-28T14:30:15", "q.$tz", "Asia/Tokyo"))
	if ok {
		t.Fatal("ok = true for 1.5 as an integer")
	}
	got := []any{f.Fields[0].Value, f.Fields[0].Error, f.Fields[1].Value, f.Fields[2].Checked, f.Fields[3].Values, f.Fields[4].Value, f.Fields[4].Step, f.TimeZone}
	want := []any{"1.5", "Enter a whole number", "", false, []string{"c"}, "2026-07-28T14:30:15", "any", "Asia/Tokyo"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after Decode:\n got %q\nwant %q", got, want)
	}
	// A second, corrected post clears the old error.
	if _, ok := f.Decode(post("q.n", "2")); !ok || f.Fields[0].Error != "" {
		t.Errorf("ok %v, error %q after correcting", ok, f.Fields[0].Error)
	}
}

func TestDecodeFallback(t *testing.T) {
	tests := []struct {
		name, schema, json string
		wantContent        string
		wantOK             bool
		wantForm           string
	}{
		{"NoSchemaAnyObject", ``, `{"a": [1, 2.50]}`, `{"a":[1,2.50]}`, true, ""},
		{"Checked", `{"type":"object","properties":{"a":{"type":"integer","title":"The A"}},"allOf":[{"required":["a"]}]}`,
			`{"a": 1.5}`, `{"a":1.5}`, false, "“The A”: Enter a whole number"},
		{"CheckedRequired", `{"type":"object","properties":{"a":{"type":"integer"}},"allOf":[{"required":["a"]}]}`,
			`{}`, `{}`, false, "“a”: Answer this question"},
		{"CheckedOK", `{"type":"object","properties":{"a":{"type":"integer"}},"allOf":[{"required":["a"]}]}`,
			`{"a": 2}`, `{"a":2}`, true, ""},
		{"NotAnObject", ``, `[1]`, `null`, false, "must be a JSON object"},
		{"NotJSON", ``, `{a}`, `null`, false, "Enter valid JSON"},
		{"Empty", ``, `  `, `null`, false, "Type your answer as a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := MustNew(t, tt.schema, "q.")
			if !f.Fallback {
				t.Fatal("not a fallback form")
			}
			content, ok := f.Decode(post("q.$json", tt.json))
			if got := MustJSON(t, content); got != tt.wantContent {
				t.Errorf("content = %s, want %s", got, tt.wantContent)
			}
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v (%q)", ok, tt.wantOK, f.Errors)
			}
			if errs := strings.Join(f.Errors, "\n"); !strings.Contains(errs, tt.wantForm) || tt.wantForm == "" && errs != "" {
				t.Errorf("errors = %q, want %q", errs, tt.wantForm)
			}
			if f.JSON != tt.json {
				t.Errorf("JSON = %q, want what was typed", f.JSON)
			}
		})
	}
}

func TestFill(t *testing.T) {
	schema := MustFixture(t, "seeds/pydantic-defaults.json")
	f, err := New(schema, "q.")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("DefaultsForEveryType", func(t *testing.T) {
		got := map[string]any{}
		for _, fd := range f.Fields {
			switch fd.Kind {
			case KindCheckbox:
				got[fd.Name] = fd.Checked
			case KindCheckboxes:
				got[fd.Name] = fd.Values
			default:
				got[fd.Name] = fd.Value
			}
		}
		want := map[string]any{"title": "", "description": "", "priority": "medium", "estimate": "3.14", "attendees": "50",
			"contact": "team@example.com", "urgent": true, "tags": []string{"bug", "documentation"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("defaults:\n got %v\nwant %v", got, want)
		}
	})
	t.Run("DraftLeavesAbsentBlank", func(t *testing.T) {
		g, _ := New(schema, "q.")
		g.Fill(map[string]any{"title": "Ship it", "estimate": 2.5, "attendees": json.Number("7"), "urgent": false, "tags": []string{"feature"}})
		if g.Fields[0].Value != "Ship it" || g.Fields[2].Value != "" || g.Fields[3].Value != "2.5" || g.Fields[4].Value != "7" ||
			g.Fields[5].Value != "" || g.Fields[6].Checked || !reflect.DeepEqual(g.Fields[7].Values, []string{"feature"}) {
			t.Errorf("after Fill: %+v", g.Fields)
		}
	})
	t.Run("RoundTrip", func(t *testing.T) {
		g, _ := New(schema, "q.")
		first, ok := g.Decode(browserPost(g))
		if ok {
			t.Fatal("ok with the required title empty")
		}
		g.Fields[0].Value = "Ship it"
		first, ok = g.Decode(browserPost(g))
		if !ok {
			t.Fatalf("defaults do not decode: %v %q", fieldErrors(g), g.Errors)
		}
		want := `{"attendees":50,"contact":"team@example.com","estimate":3.14,"priority":"medium","tags":["bug","documentation"],"title":"Ship it","urgent":true}`
		if got := MustJSON(t, first); got != want {
			t.Errorf("content = %s\n     want %s", got, want)
		}
		h, _ := New(schema, "q.")
		h.Fill(first)
		second, ok := h.Decode(browserPost(h))
		if !ok || MustJSON(t, second) != want {
			t.Errorf("Fill then Decode = %s, %v", MustJSON(t, second), ok)
		}
	})
	t.Run("DateTimeInZone", func(t *testing.T) {
		g := MustNew(t, dateTimeSchema, "q.")
		if err := g.SetTimeZone("Europe/Paris"); err != nil {
			t.Fatal(err)
		}
		g.Fill(map[string]any{"at": "2026-07-28T12:30:00Z"})
		if g.Fields[0].Value != "2026-07-28T14:30" || g.TimeZone != "Europe/Paris" {
			t.Errorf("value %q zone %q", g.Fields[0].Value, g.TimeZone)
		}
		// Changing the zone keeps the instant.
		if err := g.SetTimeZone("UTC-03:00"); err != nil {
			t.Fatal(err)
		}
		if g.Fields[0].Value != "2026-07-28T09:30" || g.TimeZone != "UTC-03:00" {
			t.Errorf("value %q zone %q", g.Fields[0].Value, g.TimeZone)
		}
		content, ok := g.Decode(browserPost(g))
		if !ok || content["at"] != "2026-07-28T09:30:00-03:00" {
			t.Errorf("content %v ok %v", content, ok)
		}
	})
	t.Run("Fallback", func(t *testing.T) {
		g := MustNew(t, ``, "q.")
		g.Fill(map[string]any{"a": 1})
		if g.JSON != "{\n  \"a\": 1\n}" {
			t.Errorf("JSON %q", g.JSON)
		}
	})
}

func TestSetTimeZone(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "UTC"}, {"UTC", "UTC"}, {"Z", "UTC"}, {"+00:00", "UTC"}, {"+02:00", "UTC+02:00"}, {"-0530", "UTC-05:30"},
		{"UTC+2", "UTC+02:00"}, {"Europe/Paris", "Europe/Paris"}, {"America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"},
	}
	for _, tt := range tests {
		f := MustNew(t, dateTimeSchema, "q.")
		if err := f.SetTimeZone(tt.in); err != nil || f.TimeZone != tt.want {
			t.Errorf("SetTimeZone(%q): zone %q, err %v; want %q", tt.in, f.TimeZone, err, tt.want)
		}
	}
	for _, bad := range []string{"Local", "../../etc/passwd", "/etc/localtime", "+15:00", "+02:60", "Nowhere/Special", strings.Repeat("A", 65)} {
		f := MustNew(t, dateTimeSchema, "q.")
		if err := f.SetTimeZone(bad); err == nil || f.TimeZone != "UTC" {
			t.Errorf("SetTimeZone(%q) accepted: zone %q", bad, f.TimeZone)
		}
	}
}

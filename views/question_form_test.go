package views

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/mcp-rounds/rounds/forms"
)

const xss = `<script>alert(1)</script>`

// questionSchema has one property of every kind, with server strings that
// try to break out of the markup.
const questionSchema = `{"type":"object","properties":{
	"name":{"type":"string","title":"<script>alert(1)</script>","description":"Say \"hi\" <b>bold</b>","minLength":3,"maxLength":20,"pattern":"^[a-z]+$"},
	"email":{"type":"string","format":"email","title":"Email"},
	"site":{"type":"string","format":"uri","title":"Site"},
	"age":{"type":"integer","title":"Age","minimum":18,"maximum":130},
	"ratio":{"type":"number","title":"Ratio","minimum":0,"maximum":1,"default":0.5},
	"day":{"type":"string","format":"date","title":"Day"},
	"at":{"type":"string","format":"date-time","title":"When"},
	"agree":{"type":"boolean","title":"Agree","default":true},
	"color":{"type":"string","title":"Color","oneOf":[{"const":"#f00","title":"<i>Red</i>"},{"const":"#0f0","title":"Green"}],"default":"#0f0"},
	"size":{"type":"string","title":"Size","enum":["xs","s","m","l","xl","xxl"]},
	"tags":{"type":"array","title":"Tags","minItems":1,"maxItems":2,"items":{"enum":["bug","feature","docs"]},"default":["docs"]},
	"address":{"type":"object","title":"Address","properties":{"city":{"type":"string"}}},
	"\"><img src=x onerror=alert(1)>":{"type":"string"}},
	"required":["name","age","color","size","tags","agree"]}`

func render(t *testing.T, f *forms.Form) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := QuestionFields(f).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, buf.String()
}

func mustForm(t *testing.T, schema string) *forms.Form {
	t.Helper()
	f, err := forms.New(json.RawMessage(schema), "q0.")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// field returns the wrapper of field i, found by its data-testid.
func field(t *testing.T, doc *goquery.Document, fd forms.Field) *goquery.Selection {
	t.Helper()
	s := doc.Find(`[data-testid="` + fd.ID + `"]`)
	if s.Length() != 1 {
		t.Fatalf("%d wrappers for field %q", s.Length(), fd.Name)
	}
	return s
}

func attr(s *goquery.Selection, name string) string {
	v, _ := s.Attr(name)
	return v
}

func TestQuestionFieldsInputs(t *testing.T) {
	f := mustForm(t, questionSchema)
	doc, _ := render(t, f)
	tests := []struct {
		name  string
		i     int
		attrs map[string]string // attributes the <input> must have ("" value: present)
		no    []string          // attributes it must not have
	}{
		{"Text", 0, map[string]string{"type": "text", "name": "q0.name", "required": "", "minlength": "3", "maxlength": "20", "pattern": "^[a-z]+$"}, []string{"min", "step"}},
		{"Email", 1, map[string]string{"type": "email", "name": "q0.email"}, []string{"required", "pattern"}},
		{"URL", 2, map[string]string{"type": "url"}, nil},
		{"Integer", 3, map[string]string{"type": "number", "required": "", "min": "18", "max": "130", "step": "1", "inputmode": "numeric"}, nil},
		{"Number", 4, map[string]string{"type": "number", "min": "0", "max": "1", "step": "any", "value": "0.5"}, []string{"required"}},
		{"Date", 5, map[string]string{"type": "date"}, []string{"minlength"}},
		{"DateTime", 6, map[string]string{"type": "datetime-local"}, []string{"step"}},
		{"Boolean", 7, map[string]string{"type": "checkbox", "name": "q0.agree", "value": "true", "checked": ""}, []string{"required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd := f.Fields[tt.i]
			w := field(t, doc, fd)
			in := w.Find("input#" + fd.ID)
			if in.Length() != 1 {
				t.Fatalf("no input #%s", fd.ID)
			}
			for k, v := range tt.attrs {
				got, ok := in.Attr(k)
				if !ok || got != v {
					t.Errorf("%s = %q (present %v), want %q", k, got, ok, v)
				}
			}
			for _, k := range tt.no {
				if _, ok := in.Attr(k); ok {
					t.Errorf("has %s", k)
				}
			}
			label := w.Find(`label[for="` + fd.ID + `"]`)
			if label.Length() != 1 || !strings.Contains(label.Text(), fd.Label) {
				t.Errorf("label for #%s: %q, want it to contain %q", fd.ID, label.Text(), fd.Label)
			}
			marked := strings.Contains(label.Text(), "(required)")
			if marked != fd.ShowRequired() {
				t.Errorf("label %q marked required: %v, want %v", label.Text(), marked, fd.ShowRequired())
			}
		})
	}
	t.Run("RequiredMarkReadsAsText", func(t *testing.T) {
		if got := strings.TrimSpace(doc.Find(`label[for="` + f.Fields[3].ID + `"]`).Text()); got != "Age (required)" {
			t.Errorf("label %q", got)
		}
	})
	t.Run("BooleanMarker", func(t *testing.T) {
		marker := field(t, doc, f.Fields[7]).Find(`input[type="hidden"]`)
		if marker.Length() != 1 || attr(marker, "name") != "q0.agree$present" {
			t.Errorf("marker name %q", attr(marker, "name"))
		}
	})
	t.Run("HelpTiedByDescribedBy", func(t *testing.T) {
		fd := f.Fields[0]
		in := doc.Find("#" + fd.ID)
		if attr(in, "aria-describedby") != fd.HelpID() {
			t.Fatalf("aria-describedby %q", attr(in, "aria-describedby"))
		}
		if got := strings.TrimSpace(doc.Find("#" + fd.HelpID()).Text()); got != `Say "hi" <b>bold</b> 3 to 20 characters.` {
			t.Errorf("help text %q, want the server's description as text, then the length it allows", got)
		}
		if counter := doc.Find("#" + fd.CounterID()); counter.Length() != 1 || !counter.Is("[hidden]") {
			t.Errorf("character counter: %d, want one, hidden until app.js counts", counter.Length())
		}
		if _, ok := doc.Find("#" + f.Fields[1].ID).Attr("aria-describedby"); ok {
			t.Error("aria-describedby on a field with no help and no error")
		}
	})
	t.Run("TimeZone", func(t *testing.T) {
		note := doc.Find(`[data-testid="` + f.IDBase() + `-tz"]`)
		if got := strings.Join(strings.Fields(note.Text()), " "); got != "Times are in UTC." {
			t.Errorf("note %q", got)
		}
		tz := doc.Find(`input[type="hidden"][name="q0.$tz"]`)
		if tz.Length() != 1 || attr(tz, "value") != "UTC" {
			t.Errorf("tz input %d, value %q", tz.Length(), attr(tz, "value"))
		}
	})
}

func TestQuestionFieldsGroups(t *testing.T) {
	f := mustForm(t, questionSchema)
	doc, _ := render(t, f)
	t.Run("Radios", func(t *testing.T) {
		fd := f.Fields[8]
		fs := field(t, doc, fd).Find("fieldset#" + fd.ID)
		if got := fs.Find("legend").Text(); !strings.Contains(got, "Color") || !strings.Contains(got, "(required)") {
			t.Errorf("legend %q", got)
		}
		radios := fs.Find(`input[type="radio"]`)
		if radios.Length() != 2 {
			t.Fatalf("%d radios, want 2 (required: no 'No answer')", radios.Length())
		}
		radios.Each(func(i int, r *goquery.Selection) {
			if _, ok := r.Attr("required"); !ok || attr(r, "name") != "q0.color" {
				t.Errorf("radio %d: name %q, required missing", i, attr(r, "name"))
			}
			if l := fs.Find(`label[for="` + attr(r, "id") + `"]`); l.Length() != 1 {
				t.Errorf("radio %d has no label", i)
			}
		})
		if got := fs.Find(`input:checked`).AttrOr("value", ""); got != "#0f0" {
			t.Errorf("checked %q, want the default", got)
		}
		if got := fs.Find(`label[for="` + fd.OptionID(0) + `"]`).Text(); got != "<i>Red</i>" {
			t.Errorf("option label %q", got)
		}
		if attr(fs, "aria-describedby") != "" {
			t.Errorf("aria-describedby %q without help", attr(fs, "aria-describedby"))
		}
	})
	t.Run("Select", func(t *testing.T) {
		fd := f.Fields[9]
		sel := field(t, doc, fd).Find("select#" + fd.ID)
		if _, ok := sel.Attr("required"); !ok || attr(sel, "name") != "q0.size" {
			t.Errorf("select name %q, required missing", attr(sel, "name"))
		}
		opts := sel.Find("option")
		if opts.Length() != 7 || attr(opts.First(), "value") != "" || opts.First().Text() != "Choose…" {
			t.Errorf("%d options, first %q", opts.Length(), opts.First().Text())
		}
		if l := doc.Find(`label[for="` + fd.ID + `"]`); l.Length() != 1 {
			t.Error("select has no label")
		}
	})
	t.Run("Checkboxes", func(t *testing.T) {
		fd := f.Fields[10]
		fs := field(t, doc, fd).Find("fieldset#" + fd.ID)
		boxes := fs.Find(`input[type="checkbox"]`)
		if boxes.Length() != 3 {
			t.Fatalf("%d checkboxes", boxes.Length())
		}
		boxes.Each(func(i int, b *goquery.Selection) {
			if _, ok := b.Attr("required"); ok {
				t.Errorf("checkbox %d carries required", i)
			}
		})
		if got := fs.Find("input:checked").AttrOr("value", ""); got != "docs" {
			t.Errorf("checked %q, want the default", got)
		}
		if m := fs.Find(`input[type="hidden"]`); attr(m, "name") != "q0.tags$present" {
			t.Errorf("marker %q", attr(m, "name"))
		}
		if attr(fs, "aria-describedby") != fd.HelpID() || !strings.Contains(doc.Find("#"+fd.HelpID()).Text(), "Choose 1 to 2.") {
			t.Errorf("describedby %q, help %q", attr(fs, "aria-describedby"), doc.Find("#"+fd.HelpID()).Text())
		}
		if !strings.Contains(fs.Find("legend").Text(), "(required)") {
			t.Errorf("legend %q not marked", fs.Find("legend").Text())
		}
	})
	t.Run("JSONField", func(t *testing.T) {
		fd := f.Fields[11]
		ta := field(t, doc, fd).Find("textarea#" + fd.ID)
		if ta.Length() != 1 || attr(ta, "name") != "q0.address" {
			t.Fatal("no textarea")
		}
		if !strings.Contains(doc.Find("#"+fd.HelpID()).Text(), fd.Reason) || attr(ta, "aria-describedby") != fd.HelpID() {
			t.Errorf("reason not shown or not tied")
		}
	})
	t.Run("OptionalRadiosOfferNoAnswer", func(t *testing.T) {
		g := mustForm(t, `{"type":"object","properties":{"c":{"type":"string","enum":["a","b"]}}}`)
		d, _ := render(t, g)
		radios := d.Find(`input[type="radio"]`)
		if radios.Length() != 3 || attr(radios.Last(), "value") != "" || !radios.Last().Is(":checked") {
			t.Errorf("%d radios; the last should be the checked 'No answer'", radios.Length())
		}
		if _, ok := radios.First().Attr("required"); ok {
			t.Error("optional radio required")
		}
	})
}

func TestQuestionFieldsErrors(t *testing.T) {
	f := mustForm(t, questionSchema)
	if _, ok := f.Decode(map[string][]string{"q0.name": {"ab"}, "q0.age": {"1.5"}, "q0.tags$present": {"1"}}); ok {
		t.Fatal("decoded")
	}
	doc, _ := render(t, f)
	for _, i := range []int{0, 3, 8, 10} {
		fd := f.Fields[i]
		if fd.Error == "" {
			t.Fatalf("%s has no error", fd.Name)
		}
		el := doc.Find("#" + fd.ErrorID())
		if el.Text() != fd.Error {
			t.Errorf("%s: error text %q, want %q", fd.Name, el.Text(), fd.Error)
		}
		described := strings.Fields(attr(doc.Find("#"+fd.ID), "aria-describedby"))
		if !slices.Contains(described, fd.ErrorID()) {
			t.Errorf("%s: aria-describedby %q lacks %s", fd.Name, described, fd.ErrorID())
		}
	}
	if got := attr(doc.Find("#"+f.Fields[0].ID), "aria-describedby"); got != f.Fields[0].HelpID()+" "+f.Fields[0].ErrorID() {
		t.Errorf("name aria-describedby %q", got)
	}
	if got := attr(doc.Find("#"+f.Fields[0].ID), "value"); got != "ab" {
		t.Errorf("typed value %q not kept", got)
	}
	if _, ok := doc.Find("#" + f.Fields[3].ID).Attr("aria-invalid"); !ok {
		t.Error("no aria-invalid on the integer")
	}
}

func TestQuestionFieldsEscapes(t *testing.T) {
	f := mustForm(t, questionSchema)
	f.Message = "Hello " + xss
	doc, html := render(t, f)
	if n := doc.Find("script, img, b, i").Length(); n != 0 {
		t.Errorf("%d elements injected by server strings", n)
	}
	if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("title not escaped as text")
	}
	if got := doc.Find(`label[for="` + f.Fields[0].ID + `"]`).Text(); !strings.Contains(got, xss) {
		t.Errorf("label %q does not show the title as text", got)
	}
	if got := doc.Find(`[data-testid="` + f.IDBase() + `-message"]`).Text(); got != "Hello "+xss {
		t.Errorf("message %q", got)
	}
	last := f.Fields[len(f.Fields)-1]
	if got := attr(doc.Find("#"+last.ID), "name"); got != `q0."><img src=x onerror=alert(1)>` {
		t.Errorf("name attribute %q", got)
	}
	ids := map[string]bool{}
	doc.Find("[id]").Each(func(_ int, s *goquery.Selection) {
		id := attr(s, "id")
		if ids[id] {
			t.Errorf("duplicate id %q", id)
		}
		ids[id] = true
	})
}

func TestQuestionFieldsFallbackAndEmpty(t *testing.T) {
	t.Run("Fallback", func(t *testing.T) {
		f := mustForm(t, `{"type":"string","title":"`+xss+`"}`)
		f.Decode(map[string][]string{"q0.$json": {"[1]"}})
		doc, _ := render(t, f)
		ta := doc.Find("textarea#" + f.JSONID())
		if attr(ta, "name") != "q0.$json" || ta.Text() != "[1]" {
			t.Errorf("textarea name %q text %q", attr(ta, "name"), ta.Text())
		}
		if l := doc.Find(`label[for="` + f.JSONID() + `"]`); l.Length() != 1 {
			t.Error("no label")
		}
		reason := doc.Find("#" + f.JSONID() + "-reason")
		if reason.Text() != f.FallbackReason {
			t.Errorf("reason %q", reason.Text())
		}
		described := strings.Fields(attr(ta, "aria-describedby"))
		if !slices.Equal(described, []string{f.JSONID() + "-reason", f.IDBase() + "-errors"}) {
			t.Errorf("aria-describedby %q", described)
		}
		if doc.Find(`[data-testid="`+f.IDBase()+`-errors"] li`).Length() != 1 {
			t.Error("form error not listed")
		}
	})
	t.Run("TextareaKeepsLeadingNewline", func(t *testing.T) {
		f := mustForm(t, `{"type":"object","properties":{"n":{"type":"string","maxLength":1000,"default":"\nindented"}}}`)
		doc, _ := render(t, f)
		if got := doc.Find("textarea").Text(); got != "\nindented" {
			t.Errorf("textarea %q", got)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		f := mustForm(t, `{"type":"object","properties":{}}`)
		doc, _ := render(t, f)
		if n := doc.Find("input, select, textarea, fieldset").Length(); n != 0 {
			t.Errorf("%d controls for an empty schema", n)
		}
		if doc.Find(`[data-testid="`+f.IDBase()+`-tz"]`).Length() != 0 {
			t.Error("time-zone note without a date-time")
		}
	})
}

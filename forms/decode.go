package forms

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones must resolve the same wherever the app runs
)

// Decode reads a posted form into content, typed as the schema says:
// strings; numbers and integers as json.Number (exactly what was typed,
// normalised to JSON syntax, so it re-marshals without loss; an integer
// accepts "1.0" and "1e2" but not "1.5"); booleans as bool (unchecked is
// false, not submitted is absent); multi-selects as []any of strings; dates
// as "YYYY-MM-DD"; date-times as RFC 3339 in the form's time zone (taken
// from Prefix+"$tz" when posted); KindJSON fields as parsed JSON. An empty
// optional field is left out; an optional multi-select with nothing chosen
// too. Decode keeps what was typed in the fields, sets Field.Error and
// Form.Errors, validates against the schema, and returns ok=false if anything
// is wrong. content holds what could be read even then.
func (f *Form) Decode(values url.Values) (content map[string]any, ok bool) {
	f.Errors = nil
	if tz := values.Get(f.TimeZoneName()); tz != "" && f.HasDateTime() {
		if err := f.SetTimeZone(tz); err != nil {
			f.Errors = append(f.Errors, "The time zone "+strconv.Quote(tz)+" is unknown, so times are taken as UTC. Check them and send again.")
			_ = f.SetTimeZone("UTC")
		}
	}
	if f.Fallback {
		return f.decodeFallback(values)
	}
	content = map[string]any{}
	for i := range f.Fields {
		fd := &f.Fields[i]
		fd.Error = ""
		if v, has := f.decodeField(fd, values); has {
			content[fd.Name] = v
		}
	}
	f.check(content)
	ok = len(f.Errors) == 0
	for _, fd := range f.Fields {
		ok = ok && fd.Error == ""
	}
	return content, ok
}

// decodeField reads one field; has is false when the field is left out.
func (f *Form) decodeField(fd *Field, values url.Values) (v any, has bool) {
	switch fd.Kind {
	case KindCheckbox:
		return decodeCheckbox(fd, values)
	case KindCheckboxes:
		return decodeCheckboxes(fd, values)
	}
	s := fd.typed(values)
	if s == "" {
		if fd.Required {
			fd.Error = "Answer this question"
			if fd.Kind == KindRadio || fd.Kind == KindSelect {
				fd.Error = "Choose an option"
			}
		}
		return nil, false
	}
	return f.parseTyped(fd, s)
}

// decodeCheckbox reads a single checkbox: unchecked is false when the
// form says it was shown, absent when it was not.
func decodeCheckbox(fd *Field, values url.Values) (v any, has bool) {
	_, fd.Checked = values[fd.InputName]
	_, marker := values[fd.PresentName()]
	if fd.Checked || marker {
		return fd.Checked, true
	}
	if fd.Required {
		fd.Error = "Answer this question"
	}
	return nil, false
}

// decodeCheckboxes reads a multi-select: the offered options chosen, in
// the options' order.
func decodeCheckboxes(fd *Field, values url.Values) (v any, has bool) {
	posted := values[fd.InputName]
	_, marker := values[fd.PresentName()]
	chosen := map[string]bool{}
	for _, p := range posted {
		if !fd.offers(p) {
			fd.Error = "Choose only the offered options"
		}
		chosen[p] = true
	}
	fd.Values = nil
	picked := []any{}
	for _, o := range fd.Options {
		if chosen[o.Value] {
			fd.Values = append(fd.Values, o.Value)
			picked = append(picked, o.Value)
		}
	}
	switch {
	case fd.Error != "":
		return nil, false
	case len(picked) > 0:
		return picked, true
	case !fd.Required:
		return nil, false
	case !marker:
		fd.Error = "Answer this question"
		return nil, false
	}
	return picked, true
}

// typed keeps what was typed in a field, to show it again, and returns
// the text to read: trimmed, but for text and a textarea's (whose line
// ends are made \n).
func (fd *Field) typed(values url.Values) string {
	raw := strings.ToValidUTF8(values.Get(fd.InputName), "\uFFFD")
	s := strings.TrimSpace(raw)
	switch fd.Kind {
	case KindText:
		s = raw
	case KindTextarea:
		s = strings.ReplaceAll(raw, "\r\n", "\n")
		raw = s
	}
	fd.Value = raw
	if fd.Kind == KindDateTime {
		fd.Step = dateTimeStep(s)
	}
	return s
}

// parseTyped reads the text s of a field, as its kind says.
func (f *Form) parseTyped(fd *Field, s string) (v any, has bool) {
	switch fd.Kind {
	case KindDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			fd.Error = "Enter a date, like 2026-07-28"
			return nil, false
		}
	case KindDateTime:
		t, err := parseLocal(s, f.loc)
		if err != nil {
			fd.Error = "Enter a date and time, like 2026-07-28T14:30"
			return nil, false
		}
		if _, off := t.Zone(); off%60 != 0 {
			// RFC 3339 offsets have no seconds (old local mean times do): say it in UTC.
			t = t.UTC()
		}
		return t.Format(time.RFC3339Nano), true
	case KindNumber:
		n, ok := parseNumber(s)
		if !ok {
			fd.Error = "Enter a number"
			return nil, false
		}
		return n, true
	case KindInteger:
		n, ok := parseInteger(s)
		if !ok {
			fd.Error = "Enter a whole number"
			return nil, false
		}
		return n, true
	case KindRadio, KindSelect:
		if !fd.offers(s) {
			fd.Error = "Choose one of the offered options"
			return nil, false
		}
	case KindJSON:
		v, err := decodeJSON([]byte(s), MaxSchemaBytes)
		if err != nil {
			fd.Error = jsonMessage(err)
			return nil, false
		}
		return v, true
	}
	return s, true
}

func (fd *Field) offers(v string) bool {
	return slices.ContainsFunc(fd.Options, func(o Option) bool { return o.Value == v })
}

func jsonMessage(err error) string {
	switch {
	case errors.Is(err, errTooLarge):
		return "This answer is too long"
	case errors.Is(err, errTooDeep):
		return "This answer is nested too deeply"
	case errors.Is(err, errBadNumber):
		return "A number in this answer is too long or too large"
	}
	return "Enter valid JSON, for example \"text\", 42, true, [\"a\", \"b\"] or {\"key\": \"value\"}"
}

// decodeFallback reads the one JSON textarea of a fallback form.
func (f *Form) decodeFallback(values url.Values) (map[string]any, bool) {
	f.JSON = strings.ToValidUTF8(values.Get(f.JSONName()), "\uFFFD")
	s := strings.TrimSpace(f.JSON)
	if s == "" {
		f.Errors = append(f.Errors, `Type your answer as a JSON object, like {"name": "value"}`)
		return nil, false
	}
	v, err := decodeJSON([]byte(s), MaxSchemaBytes)
	if err != nil {
		f.Errors = append(f.Errors, jsonMessage(err))
		return nil, false
	}
	content, ok := v.(map[string]any)
	if !ok {
		f.Errors = append(f.Errors, `Your answer must be a JSON object, like {"name": "value"}`)
		return nil, false
	}
	f.check(content)
	return content, len(f.Errors) == 0
}

// check validates content with the compiled schema, if there is one, and
// puts each message beside its field, or in Errors.
func (f *Form) check(content map[string]any) {
	if f.schema == nil {
		return
	}
	errs, err := check(f.schema, content)
	if err != nil {
		f.Errors = append(f.Errors, "Your answers could not be checked")
		return
	}
	names := make([]string, 0, len(errs))
	for name := range errs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		msg := errs[name]
		if name == "" {
			f.Errors = append(f.Errors, msg)
			continue
		}
		if i := slices.IndexFunc(f.Fields, func(fd Field) bool { return fd.Name == name }); i >= 0 {
			if f.Fields[i].Error == "" {
				f.Fields[i].Error = msg
			}
			continue
		}
		f.Errors = append(f.Errors, "“"+f.label(name)+"”: "+msg)
	}
}

// label is a property's title, else its name.
func (f *Form) label(name string) string {
	if p, ok := f.props[name].(map[string]any); ok {
		if t, ok := p["title"].(string); ok && strings.TrimSpace(t) != "" {
			return t
		}
	}
	return name
}

// Fill sets every field from content, in the representation Decode produces
// (json.Number or float64 for numbers). A property absent from content is
// left blank: defaults are not re-applied. Date-times are shown in the
// form's time zone.
func (f *Form) Fill(content map[string]any) {
	if f.Fallback {
		f.JSON = "{}"
		if len(content) > 0 {
			if b, err := json.MarshalIndent(content, "", "  "); err == nil {
				f.JSON = string(b)
			}
		}
		return
	}
	for i := range f.Fields {
		fd := &f.Fields[i]
		fd.Value, fd.Values, fd.Checked = "", nil, false
		v, ok := content[fd.Name]
		if !ok {
			continue
		}
		switch fd.Kind {
		case KindCheckbox:
			fd.Checked = v == true
		case KindCheckboxes:
			switch list := v.(type) {
			case []any:
				for _, x := range list {
					fd.Values = append(fd.Values, scalarString(x))
				}
			case []string:
				fd.Values = append(fd.Values, list...)
			}
		case KindJSON:
			if b, err := json.MarshalIndent(v, "", "  "); err == nil {
				fd.Value = string(b)
			}
		case KindDateTime:
			fd.Value = scalarString(v)
			if t, err := time.Parse(time.RFC3339Nano, fd.Value); err == nil {
				fd.Value = formatLocal(t.In(f.loc))
			}
			fd.Step = dateTimeStep(fd.Value)
		default:
			fd.Value = scalarString(v)
		}
	}
}

func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, bool:
		return fmt.Sprint(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// numberSyntax is what a person may type for a number: the HTML number
// syntax plus a leading "+" and a bare "." on either side.
var numberSyntax = regexp.MustCompile(`^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$`)

// parseNumber normalises a typed number to a JSON number literal.
func parseNumber(s string) (json.Number, bool) {
	m := numberSyntax.FindStringSubmatch(s)
	if m == nil || m[2] == "" && m[3] == "" {
		return "", false
	}
	var b strings.Builder
	if m[1] == "-" {
		b.WriteByte('-')
	}
	intPart := strings.TrimLeft(m[2], "0")
	if intPart == "" {
		intPart = "0"
	}
	b.WriteString(intPart)
	if m[3] != "" {
		b.WriteString("." + m[3])
	}
	if m[4] != "" {
		b.WriteString("e" + m[4])
	}
	n := b.String()
	if !numberInRange(n) {
		return "", false
	}
	return json.Number(n), true
}

// parseInteger accepts any number with no fractional part ("1.0", "1e2") and
// returns it as a plain JSON integer.
func parseInteger(s string) (json.Number, bool) {
	n, ok := parseNumber(s)
	if !ok {
		return "", false
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() {
		return "", false
	}
	if i := r.Num().String(); len(i) <= maxNumberLen {
		return json.Number(i), true
	}
	return n, true // "1e400" stays short
}

// The layouts an <input type=datetime-local> posts.
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999"}

func parseLocal(s string, loc *time.Location) (time.Time, error) {
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a local date-time")
}

func formatLocal(t time.Time) string {
	switch {
	case t.Nanosecond() != 0:
		return t.Format("2006-01-02T15:04:05.999999999")
	case t.Second() != 0:
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04")
}

// dateTimeStep lets a datetime-local input hold seconds when its value has
// them; with the default step of 60 the browser would refuse the value.
func dateTimeStep(v string) string {
	if len(v) > len("2006-01-02T15:04") {
		return "any"
	}
	return ""
}

var (
	offsetZone = regexp.MustCompile(`^(?:UTC|GMT)?([+-])([0-9]{1,2})(?::?([0-9]{2}))?$`)
	zoneName   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*$`)
)

// SetTimeZone sets the zone date-times are typed in: an IANA name
// ("Europe/Paris"), an offset ("+02:00", "UTC-5") or "UTC". Date-times
// already in the fields keep their instant and are shown in the new zone.
func (f *Form) SetTimeZone(name string) error {
	loc, label, err := parseZone(name)
	if err != nil {
		return err
	}
	for i := range f.Fields {
		fd := &f.Fields[i]
		if fd.Kind != KindDateTime {
			continue
		}
		if t, err := parseLocal(fd.Value, f.loc); err == nil {
			fd.Value = formatLocal(t.In(loc))
		}
	}
	f.loc, f.TimeZone = loc, label
	return nil
}

func parseZone(name string) (*time.Location, string, error) {
	name = strings.TrimSpace(name)
	switch name {
	case "", "UTC", "Z", "Etc/UTC", "GMT":
		return time.UTC, "UTC", nil
	}
	if m := offsetZone.FindStringSubmatch(name); m != nil {
		h, _ := strconv.Atoi(m[2])
		min, _ := strconv.Atoi("0" + m[3])
		if h > 14 || min > 59 {
			return nil, "", fmt.Errorf("forms: offset %q out of range", name)
		}
		secs := (h*60 + min) * 60
		if m[1] == "-" {
			secs = -secs
		}
		if secs == 0 {
			return time.UTC, "UTC", nil
		}
		label := fmt.Sprintf("UTC%s%02d:%02d", m[1], h, min)
		return time.FixedZone(label, secs), label, nil
	}
	if len(name) > 64 || !zoneName.MatchString(name) || name == "Local" {
		return nil, "", fmt.Errorf("forms: bad time zone %q", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, "", fmt.Errorf("forms: unknown time zone %q", name)
	}
	return loc, name, nil
}

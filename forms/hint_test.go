package forms

import "testing"

// TestHint: bounds are said in words beside the field, once: not when the
// server's description already says the same numbers.
func TestHint(t *testing.T) {
	for _, tc := range []struct {
		name, property, want string
		counted              bool
	}{
		{"IntegerRange", `{"type":"integer","minimum":1,"maximum":9}`, "1 to 9.", false},
		{"IntegerExclusive", `{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}`, "1 to 9.", false},
		{"NumberFloor", `{"type":"number","minimum":0.5}`, "At least 0.5.", false},
		{"NumberCeiling", `{"type":"number","maximum":1000}`, "At most 1000.", false},
		{"NumberAbove", `{"type":"number","exclusiveMinimum":0}`, "More than 0.", false},
		{"NumberBelow", `{"type":"number","minimum":0,"exclusiveMaximum":1}`, "At least 0 and less than 1.", false},
		{"NumberBothExclusive", `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":2.5}`, "More than 0 and less than 2.5.", false},
		{"NumberStricterInclusive", `{"type":"number","minimum":5,"exclusiveMinimum":1,"maximum":9}`, "5 to 9.", false},
		{"NumberEqualBoundsExclusive", `{"type":"number","minimum":1,"exclusiveMinimum":1}`, "More than 1.", false},
		{"NumberUnbounded", `{"type":"number"}`, "", false},
		{"RangeInDescription", `{"type":"integer","minimum":1,"maximum":9,"description":"Passengers (1-9)"}`, "", false},
		{"OtherNumbersInDescription", `{"type":"integer","minimum":1,"maximum":9,"description":"Up to 5 adults"}`, "1 to 9.", false},
		{"TextLength", `{"type":"string","minLength":3,"maxLength":80}`, "3 to 80 characters.", true},
		{"TextMax", `{"type":"string","maxLength":500}`, "Up to 500 characters.", true},
		{"TextMin", `{"type":"string","minLength":2}`, "At least 2 characters.", true},
		{"TextExact", `{"type":"string","minLength":5,"maxLength":5}`, "Exactly 5 characters.", true},
		{"TextUnlimited", `{"type":"string"}`, "", false},
		{"EmailMax", `{"type":"string","format":"email","maxLength":64}`, "Up to 64 characters.", true},
		{"DateNoLength", `{"type":"string","format":"date"}`, "", false},
		{"MultiSelect", `{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["a","b","c","d"]}}`, "Choose 1 to 3.", false},
		{"MultiSelectSaidInWords", `{"type":"array","description":"Pick one to three","minItems":1,"maxItems":3,"items":{"type":"string","enum":["a","b","c","d"]}}`, "", false},
		{"MultiSelectSaidInDigits", `{"type":"array","description":"Choose at most 2.","maxItems":2,"items":{"type":"string","enum":["a","b","c"]}}`, "", false},
		{"MultiSelectHalfSaid", `{"type":"array","description":"Pick one or more","minItems":1,"maxItems":3,"items":{"type":"string","enum":["a","b","c","d"]}}`, "Choose 1 to 3.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := only(t, MustNew(t, `{"type":"object","properties":{"x":`+tc.property+`}}`, "q0."))
			if got := fd.Hint(); got != tc.want {
				t.Errorf("Hint() = %q, want %q", got, tc.want)
			}
			if fd.Counted() != tc.counted {
				t.Errorf("Counted() = %v, want %v", fd.Counted(), tc.counted)
			}
		})
	}
}

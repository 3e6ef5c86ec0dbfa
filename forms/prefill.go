package forms

// Prefill sets the fields that content has a value for, as Fill does, and
// leaves the others as they are (with their defaults): to bring back what
// a person answered to the same question before.
func (f *Form) Prefill(content map[string]any) {
	if f.Fallback || len(content) == 0 {
		return
	}
	before := append([]Field(nil), f.Fields...)
	f.Fill(content)
	for i := range f.Fields {
		if _, ok := content[f.Fields[i].Name]; !ok {
			f.Fields[i] = before[i]
		}
	}
}

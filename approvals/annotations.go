package approvals

import "encoding/json"

// AnnotationsOf reads the annotations of a tool as a server lists it,
// {"name": …, "annotations": {"readOnlyHint": …, "destructiveHint": …}};
// nil when it has none (or is not a tool).
func AnnotationsOf(tool json.RawMessage) *Annotations {
	var t struct {
		Annotations *struct {
			ReadOnlyHint    *bool `json:"readOnlyHint"`
			DestructiveHint *bool `json:"destructiveHint"`
		} `json:"annotations"`
	}
	if json.Unmarshal(tool, &t) != nil || t.Annotations == nil {
		return nil
	}
	return &Annotations{ReadOnlyHint: t.Annotations.ReadOnlyHint, DestructiveHint: t.Annotations.DestructiveHint}
}

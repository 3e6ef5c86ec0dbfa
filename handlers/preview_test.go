package handlers

import (
	"strings"
	"testing"
)

func TestPreview(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"Short", "Pick a seat", 20, "Pick a seat"},
		{"Exact", "abcde", 5, "abcde"},
		{"Cut", "abcdefgh", 5, "abcde…"},
		{"RunesNotBytes", "ééééé", 4, "éééé…"},
		{"MultiByteShort", "ééé", 4, "ééé"},
		{"TrailingSpace", "abc  defg", 5, "abc…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := preview(tc.in, tc.n); got != tc.want {
				t.Errorf("preview(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
	huge := strings.Repeat("x", 5<<20)
	if got := preview(huge, previewText); len(got) > previewText+len("…") {
		t.Errorf("a 5 MB message previews as %d bytes", len(got))
	}
}

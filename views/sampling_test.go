package views

import (
	"strings"
	"testing"
)

// TestSamplingQuestionShown: the whole request is on the page, as text;
// images only as checked data URLs; the roots as answered automatically.
func TestSamplingQuestionShown(t *testing.T) {
	t.Parallel()
	call, r := multipleRound(t)
	doc, html := renderRound(t, call, r, nil, nil)
	card := doc.Find(`section[data-kind="sampling"]`)
	if card.Length() != 1 {
		t.Fatalf("no sampling question in:\n%s", html)
	}
	if got := card.Find(`[data-testid="system-prompt"]`).Text(); got != "You are <b>terse</b>." {
		t.Errorf("system prompt = %q, want it as text", got)
	}
	if n := card.Find(`[data-testid="message"]`).Length(); n != 3 {
		t.Errorf("%d messages shown, want 3", n)
	}
	imgs := card.Find("img")
	if imgs.Length() != 1 || imgs.AttrOr("src", "") != "data:image/png;base64,iVBORw0KGgo=" {
		t.Errorf("images = %d, first src %q; want only the PNG", imgs.Length(), imgs.AttrOr("src", ""))
	}
	if card.Find("audio").Length() != 0 {
		t.Error("audio that is not base64 is played")
	}
	for _, want := range []string{"100 tokens", "claude-3-sonnet", "Intelligence priority", "0.8", "get_weather", "the model may use the tools", "END"} {
		if !strings.Contains(card.Text(), want) {
			t.Errorf("sampling question lacks %q", want)
		}
	}
	if card.Find(`textarea[name="q0.reply"]`).Length() != 1 {
		t.Error("no reply box")
	}
	roots := doc.Find(`section[data-kind="roots"]`)
	if !strings.Contains(roots.Text(), "Answered automatically") || roots.Find(`[data-testid="root"]`).Length() != 1 {
		t.Errorf("roots question reads %q", roots.Text())
	}
	if roots.Find("input, textarea").Length() != 0 {
		t.Error("the roots question asks for input")
	}
}

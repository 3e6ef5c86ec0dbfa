package journeys

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// pictureServer is a 2026-07-28 MCP server with one tool, picture, whose
// result holds a real 40×20 PNG, an SVG, and GIF bytes said to be a PNG.
func pictureServer(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for x := range 40 {
		for y := range 20 {
			img.Set(x, y, color.RGBA{R: 200, G: 40, B: 40, A: 255})
		}
	}
	var pngBytes bytes.Buffer
	if err := png.Encode(&pngBytes, img); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	svg := b64([]byte(`<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><script>window.__pwned=1</script></svg>`))
	result := `{"content":[
		{"type":"text","text":"Here is the picture."},
		{"type":"image","mimeType":"image/png","data":"` + b64(pngBytes.Bytes()) + `"},
		{"type":"image","mimeType":"image/svg+xml","data":"` + svg + `"},
		{"type":"image","mimeType":"image/png","data":"` + b64([]byte("GIF89a\x01\x00\x01\x00")) + `"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		var res string
		switch msg.Method {
		case "server/discover":
			res = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"pictures","version":"1"}}}`
		case "tools/list":
			res = `{"tools":[{"name":"picture","title":"Draw a picture","description":"Returns images.","inputSchema":{"type":"object","properties":{}}}]}`
		case "tools/call":
			res = result
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}`, msg.ID)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, res)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// allowClipboard lets the journey's pages write and read the clipboard, as
// a person's browser lets a page they clicked in.
func (j *journey) allowClipboard(origin string) {
	j.t.Helper()
	id := chromedp.FromContext(j.ctx).BrowserContextID
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(j.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted,
			Origin: origin, BrowserContextID: id,
		}); err != nil {
			j.t.Fatalf("allow %s: %v", name, err)
		}
	}
	if _, err := chromedp.Call(j.ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		j.t.Fatal(err)
	}
}

// copied clicks a Copy button, waits for it to say so, and returns what
// the clipboard then holds.
func (j *journey) copied(button string) string {
	j.t.Helper()
	j.do("click "+button, chromedp.Click(chromedp.CSS(button)))
	j.waitFor("Copied. beside "+button, fmt.Sprintf(`document.querySelector(%q).parentNode.querySelector("[data-copy-status]").textContent === "Copied."`, button))
	got, err := chromedp.Run(j.ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil {
		j.t.Fatalf("read the clipboard: %v", err)
	}
	return got
}

// helpOf is the help text tied to the control named name, or to its
// fieldset.
func helpOf(j *journey, name string) string {
	j.t.Helper()
	return evaluate[string](j, "help of "+name, fmt.Sprintf(`(el => (f => document.getElementById(f.getAttribute("aria-describedby").split(" ")[0]).innerText)(el.hasAttribute("aria-describedby") ? el : el.closest("fieldset")))(document.querySelector('[name=%q]'))`, name))
}

// counterOf is what the character counter beside the control named name
// shows, or "(hidden)".
func counterOf(j *journey, name string) string {
	j.t.Helper()
	return evaluate[string](j, "counter of "+name, fmt.Sprintf(`(c => !c ? "(none)" : c.hidden || c.offsetParent === null ? "(hidden)" : c.textContent)(document.querySelector('[name=%q]').closest(".field").querySelector(".counter"))`, name))
}

// fits fails the test when the page scrolls sideways at width.
func (j *journey) fits(what string, width int64) {
	j.t.Helper()
	if w := evaluate[int64](j, "width of "+what, `document.documentElement.scrollWidth`); w > width {
		j.t.Errorf("%s scrolls sideways at %d px: %d px wide", what, width, w)
	}
}

// TestBrowserFieldAids checks, in headless Chromium at 1280 and 390 px, the
// small helps of item 12: number bounds and lengths said beside the fields,
// character counters (with JavaScript; the hint alone without), a
// multi-select's count said once, Copy buttons for the token, the result
// and the structured content that really fill the clipboard (and, without
// JavaScript, text left to select), and image previews for raster images
// only, never SVG. axe-core, AAA contrast included, finds nothing on any of
// these pages, in the light theme at 1280 px and the dark one at 390 px.
func TestBrowserFieldAids(t *testing.T) {
	t.Parallel()
	chrome := newBrowser(t)
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil) + ",pictures=" + pictureServer(t)}, nil)

	for _, width := range []int64{1280, 390} {
		t.Run(fmt.Sprintf("JavaScript%dpx", width), func(t *testing.T) {
			t.Parallel()
			j := newJourneyFor(t, chrome, true, 4*time.Minute)
			j.emulate(width, "UTC")
			if width == 390 {
				// The phone in the dark theme, so that AAA contrast is
				// checked in both.
				if _, err := chromedp.Call(j.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
				}); err != nil {
					t.Fatal(err)
				}
			}
			j.allowClipboard(inst.URL)
			j.signIn(inst.URL)

			// The first Tab reaches the skip link, which puts the cursor in
			// the page's content; the favicon is there.
			j.do("press Tab", chromedp.KeyEvent(kbTab))
			if got := evaluate[string](j, "focused", `document.activeElement.className + ": " + document.activeElement.textContent`); got != "skip-link: Skip to the content" {
				t.Errorf("the first Tab reaches %q, want the skip link", got)
			}
			j.do("follow the skip link", chromedp.KeyEvent(kbEnter))
			j.waitFor("the cursor in the content", `document.activeElement === document.getElementById("main")`)
			icon, err := chromedp.Run(j.ctx, chromedp.Evaluate[string](`fetch(document.querySelector('link[rel="icon"]').href).then(r => r.status + " " + r.headers.get("content-type"))`, chromedp.EvalAwaitPromise))
			if err != nil || !strings.HasPrefix(icon, "200 image/svg+xml") {
				t.Errorf("favicon answers %q (%v), want 200 image/svg+xml", icon, err)
			}

			j.startTool(inst.URL, "create_task")
			for name, want := range map[string]string{
				"q0.points": "0 to 100.", "q0.estimate": "0 to 1000.",
				"q0.title": "What needs doing 3 to 80 characters.", "q0.description": "Up to 500 characters.",
			} {
				if got := strings.Join(strings.Fields(helpOf(j, name)), " "); got != want {
					t.Errorf("help of %s = %q, want %q", name, got, want)
				}
			}
			if got := counterOf(j, "q0.title"); got != "0 of 80 characters, at least 3" {
				t.Errorf("title's counter before typing = %q", got)
			}
			j.do("type two letters", chromedp.SendKeys(chromedp.CSS(`[name="q0.title"]`), "Wr"))
			if got := counterOf(j, "q0.title"); got != "2 of 80 characters, at least 3" {
				t.Errorf("title's counter after two letters = %q, want 2 of 80 characters, at least 3", got)
			}
			j.do("type the rest", chromedp.SendKeys(chromedp.CSS(`[name="q0.title"]`), "ite the docs"))
			if got := counterOf(j, "q0.title"); got != "14 of 80 characters" {
				t.Errorf("title's counter = %q, want 14 of 80 characters", got)
			}
			j.waitFor("the counter said to screen readers once typing pauses",
				`document.querySelector('[data-counter-live]').textContent === "14 of 80 characters"`)
			j.axeAAA("the round with counters")
			j.fits("the round", width)

			j.do("send", chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="structured"]`)))
			if got, want := j.copied(`[data-testid="copy-result-text-0"]`), j.text(`[data-testid="result-text"]`); got != want || got == "" {
				t.Errorf("Copy the text put %q on the clipboard, want the result's text %q", got, want)
			}
			if got, want := j.copied(`[data-testid="copy-structured"]`), evaluate[string](j, "structured", `document.querySelector('[data-testid="structured"]').textContent`); got != want || !strings.Contains(got, `"title": "Write the docs"`) {
				t.Errorf("Copy the structured content put %q on the clipboard, want %q", got, want)
			}
			j.axeAAA("the result with Copy buttons")
			j.fits("the result", width)

			j.do("make a token",
				chromedp.Navigate(inst.URL+"/tokens"),
				chromedp.SendKeys(chromedp.CSS(`#token-name`), fmt.Sprint("phone ", width)),
				chromedp.Submit(chromedp.CSS(`#token-name`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="new-token"]`)),
			)
			if got, want := j.copied(`[data-testid="copy-token"]`), j.text(`#new-token-value`); got != want || len(got) < 20 {
				t.Errorf("Copy the token put %q on the clipboard, want the token %q", got, want)
			}
			j.axeAAA("the new token")
			j.fits("the new token", width)

			j.startTool(inst.URL, "select_tags")
			if got := strings.TrimSpace(helpOf(j, "q0.tags")); got != "Pick one to three" {
				t.Errorf("the multi-select's help = %q, want the server's Pick one to three, said once", got)
			}

			j.do("draw a picture",
				chromedp.Navigate(inst.URL+"/servers/pictures/tools/picture"),
				chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="result"]`)),
			)
			j.waitFor("the PNG drawn", `(i => i && i.complete && i.naturalWidth === 40)(document.querySelector('[data-testid="result-image"] img'))`)
			shown := evaluate[[]string](j, "images shown", `[...document.querySelectorAll("img")].map(i => i.src.slice(0, 22))`)
			if len(shown) != 1 || shown[0] != "data:image/png;base64," {
				t.Errorf("images on the page = %q, want the one PNG", shown)
			}
			notes := evaluate[[]string](j, "images not shown", `[...document.querySelectorAll('[data-testid="image-not-shown"]')].map(p => p.textContent)`)
			if len(notes) != 2 || !strings.Contains(notes[0], "image/svg+xml") || !strings.Contains(notes[1], "not a image/png") {
				t.Errorf("images not shown say %q, want the SVG and the GIF called PNG, each with why", notes)
			}
			if evaluate[bool](j, "pwned", `window.__pwned === 1`) {
				t.Error("the SVG's script ran")
			}
			if w := evaluate[float64](j, "image width", `document.querySelector('[data-testid="result-image"] img').clientWidth`); w != 40 {
				t.Errorf("the 40 px image is drawn %.0f px wide", w)
			}
			j.axeAAA("the pictures")
			j.fits("the pictures", width)
		})
	}

	t.Run("NoJavaScript", func(t *testing.T) {
		t.Parallel()
		j := newJourneyFor(t, chrome, false, 4*time.Minute)
		j.emulate(390, "UTC")
		j.signIn(inst.URL)
		j.startTool(inst.URL, "create_task")
		if got := counterOf(j, "q0.title"); got != "(hidden)" {
			t.Errorf("title's counter without JavaScript = %q, want it hidden", got)
		}
		if got := helpOf(j, "q0.title"); !strings.Contains(got, "3 to 80 characters.") {
			t.Errorf("help of the title = %q, want the length it allows", got)
		}
		j.do("send", chromedp.SendKeys(chromedp.CSS(`[name="q0.title"]`), "Without scripts"),
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="structured"]`)))
		if n := evaluate[int](j, "visible Copy buttons", `[...document.querySelectorAll("button[data-copy]")].filter(b => b.offsetParent !== null).length`); n != 0 {
			t.Errorf("%d Copy buttons shown without JavaScript, want none", n)
		}
		// The text is there to select and copy by hand.
		j.scripts(true)
		selected := evaluate[string](j, "select the structured content", `(pre => { const r = document.createRange(); r.selectNodeContents(pre);
			getSelection().removeAllRanges(); getSelection().addRange(r); return getComputedStyle(pre).userSelect === "none" ? "" : getSelection().toString() })(document.querySelector('[data-testid="structured"]'))`)
		j.scripts(false)
		if !strings.Contains(selected, `"title": "Without scripts"`) {
			t.Errorf("selecting the structured content gives %q", selected)
		}
		j.axeAAA("the result without JavaScript")
		j.fits("the result without JavaScript", 390)
	})
}

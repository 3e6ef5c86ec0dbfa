package journeys

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserLocalServer shows a local server's page in headless Chromium
// at 1280 px with JavaScript and at 390 px without: each instance's
// process, whether it runs, how often it restarted (one instance's was
// killed and started again) and its last stderr lines; saving the settings
// keeps the program's stdio: URL. axe-core finds nothing.
func TestBrowserLocalServer(t *testing.T) {
	t.Parallel()
	chrome := newBrowser(t)
	db := newDatabase(t)
	env := stdioEnv(t, 4)
	a := startInstance(t, db, env, nil)
	b := startInstance(t, db, env, nil)
	first, pid := localProcess(t, db, a.InstanceID(), "trips")
	localProcess(t, db, b.InstanceID(), "trips")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if p, _ := localProcess(t, db, a.InstanceID(), "trips"); p == first {
			return errors.New("the killed process was not started again")
		}
		return nil
	})

	for _, tt := range []struct {
		width int64
		js    bool
	}{{1280, true}, {390, false}} {
		t.Run(fmt.Sprintf("%dpx", tt.width), func(t *testing.T) {
			j := newJourneyFor(t, chrome, tt.js, 4*time.Minute)
			j.emulate(tt.width, "UTC")
			j.signIn(b.URL)
			j.do("open the server's page on b", chromedp.Navigate(b.URL+"/admin/servers/trips"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="local-processes"]`)))
			got := evaluate[string](j, "the processes", `[...document.querySelectorAll('[data-testid="local-process"]')].map(p =>
				p.querySelector('h3').textContent.trim() + "|" + p.querySelector('[data-testid="local-state"]').textContent.replace(/\s+/g, " ").trim() +
				"|" + p.querySelector('[data-testid="local-restarts"]').textContent.trim()).join("\n")`)
			listed := map[string]string{}
			for _, line := range strings.Split(got, "\n") {
				if f := strings.Split(line, "|"); len(f) == 3 {
					listed[f[0]] = f[1] + ", restarts " + f[2]
				}
			}
			for inst, restarts := range map[string]string{a.InstanceID(): "1", b.InstanceID(): "0"} {
				if l := listed[inst]; !strings.HasPrefix(l, "Running (pid ") || !strings.HasSuffix(l, ", restarts "+restarts) {
					t.Errorf("instance %s is listed as %q, want running, restarted %s times; the page lists\n%s", inst, l, restarts, got)
				}
			}
			if stderr := evaluate[string](j, "stderr", `document.querySelector('[data-testid="local-stderr"]').textContent`); !strings.Contains(stderr, "fastmcp-4.0.0b3: serving over stdio") {
				t.Errorf("stderr shown = %q", stderr)
			}
			if evaluate[int](j, "URL fields", `document.querySelectorAll('input[type="url"][name="url"]').length`) != 0 {
				t.Error("the page offers to change a local server's URL")
			}
			if s := evaluate[string](j, "calls' processes", `document.querySelector('[data-testid="local-sessions"]').textContent`); s != "0 of at most 4 running" {
				t.Errorf("calls' processes shown as %q", s)
			}
			j.fits("the local server's page", tt.width)
			j.axe("the local server's page")
			j.do("save the settings", chromedp.SetValue(chromedp.CSS(`#round-ttl`), "45m"),
				chromedp.Click(chromedp.CSS(`button[data-testid="save"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="admin-notice"]`)))
			if url := query[string](t, db, `select url from servers where name = 'trips'`); url != "stdio:trips" {
				t.Errorf("after saving, the server's URL is %q", url)
			}
			if ttl := evaluate[string](j, "round lifetime", `document.querySelector('#round-ttl').value`); ttl != "45m" {
				t.Errorf("round lifetime = %q after saving, want 45m", ttl)
			}

			// A server pinned to 2025-11-25 has a process per call only.
			j.do("open the pinned server's page", chromedp.Navigate(b.URL+"/admin/servers/names"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="local-processes"]`)))
			if s := evaluate[string](j, "state", `document.querySelector('[data-testid="local-state"]').textContent.replace(/\s+/g, " ").trim()`); s != "A process per call only (pinned to a handshake-era revision)" {
				t.Errorf("the pinned server's state = %q", s)
			}
			j.fits("the pinned server's page", tt.width)
			j.axe("the pinned server's page")
		})
	}
}

package journeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// taskEnv runs instances against a server of tasks: questions that wait
// are polled every second, requests time out after two.
func taskEnv(tasker *mcptest.Tasker) map[string]string {
	return map[string]string{"MCP_SERVERS": "tasker=" + tasker.URL, "MCP_REQUEST_TIMEOUT": "2s", "TASK_WAIT_POLL": "1s"}
}

// TestTaskThroughTheAPI: a program starts a tool the server runs as a
// task, on one instance. The task's question comes as the call's round on
// the other, with the task's state beside it; answered there after every
// timeout, the call completes with the task's result. A second task is
// stopped through the API: the server is asked to stop it. The server's
// task ids appear in no page and no API answer.
func TestTaskThroughTheAPI(t *testing.T) {
	t.Parallel()
	tasker := mcptest.NewTasker(t, 300*time.Millisecond)
	db := newDatabase(t)
	a := startInstance(t, db, taskEnv(tasker), nil)
	b := startInstance(t, db, taskEnv(tasker), nil)
	c := newClient(t, db)
	c.login(b.URL, "admin", adminPassword)
	status, body := c.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"tasker","tool":"deploy","arguments":{}}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var call apiCall
	_ = json.Unmarshal(body, &call)
	waiting := c.waitFor(b.URL, call.ID, time.Minute, roundIs(1))
	if _, ok := waiting.Round.InputRequests["approve-1"]; !ok {
		t.Fatalf("round: %+v", waiting.Round)
	}
	var task struct {
		Task *struct {
			Status         string     `json:"status"`
			PollIntervalMs int        `json:"pollIntervalMs"`
			ExpiresAt      *time.Time `json:"expiresAt"`
		} `json:"task"`
	}
	_, body = c.do("GET", b.URL+"/api/v1/calls/"+call.ID, "", "")
	if err := json.Unmarshal(body, &task); err != nil || task.Task == nil || task.Task.Status != "input_required" ||
		task.Task.PollIntervalMs != 300 || task.Task.ExpiresAt == nil || time.Until(*task.Task.ExpiresAt) < 50*time.Minute {
		t.Fatalf("task: %s", body)
	}
	_, page := c.do("GET", b.URL+"/calls/"+call.ID, "", "")
	if !strings.Contains(string(page), `data-testid="task-note"`) || !strings.Contains(string(page), "Deploy build 42 to production? &lt;b&gt;not bold&lt;/b&gt;") {
		t.Fatalf("the call's page:\n%s", page)
	}
	// The person answers past the request timeout and a few polls, as
	// the server saw them: the question was sent on polls further apart
	// than the request timeout.
	eventually(t, time.Minute, func() error {
		if span := askedSpan(tasker.Polls("deploy")); span <= 2*time.Second {
			return fmt.Errorf("the question was sent on polls %s apart, not yet past the request timeout", span)
		}
		return nil
	})
	if status, body := c.answer(b.URL, call.ID, 1, `{"approve-1":{"action":"accept","content":{"confirm":true}}}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	done := c.waitFor(a.URL, call.ID, time.Minute, isDone)
	if done.Status != "complete" || resultText(t, done.Result) != "Deployed build 42." {
		t.Fatalf("the call ended %s: %s", done.Status, done.Result)
	}

	status, body = c.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"tasker","tool":"long_job","arguments":{}}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	_ = json.Unmarshal(body, &call)
	var progress struct {
		Progress *struct {
			Message  string   `json:"message"`
			Progress *float64 `json:"progress"`
		} `json:"progress"`
	}
	eventually(t, time.Minute, func() error {
		_, body = c.do("GET", b.URL+"/api/v1/calls/"+call.ID, "", "")
		progress.Progress = nil
		_ = json.Unmarshal(body, &progress)
		if progress.Progress != nil && strings.HasPrefix(progress.Progress.Message, "Step ") {
			return nil
		}
		return fmt.Errorf("no progress: %s", body)
	})
	if progress.Progress.Progress != nil {
		t.Errorf("a task's progress is measured: %s", body)
	}
	if status, body := c.do("POST", b.URL+"/api/v1/calls/"+call.ID+"/cancel", "", ""); status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, body)
	}
	eventually(t, 30*time.Second, func() error {
		if s := tasker.Status("long_job"); s != "cancelled" {
			return fmt.Errorf("the server's task is %q, not stopped", s)
		}
		return nil
	})
	// Stopped from its page, a task that finishes all the same keeps its
	// result, and the page says so.
	tasker.FinishOnCancel()
	status, body = c.do("POST", a.URL+"/api/v1/calls", "application/json", `{"server":"tasker","tool":"long_job","arguments":{}}`)
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	_ = json.Unmarshal(body, &call)
	c.waitTask(b.URL, call.ID) // stopped before the server made it a task, it has no result to keep
	if status, body := c.post(b.URL+"/calls/"+call.ID+"/stop", url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("stop: %d %s", status, body)
	}
	done = c.waitFor(a.URL, call.ID, time.Minute, func(c apiCall) bool { return c.Status == "complete" })
	if resultText(t, done.Result) != "Finished before the stop." {
		t.Fatalf("result: %s", done.Result)
	}
	if _, page := c.do("GET", b.URL+"/calls/"+call.ID, "", ""); !strings.Contains(string(page), "the server's task had already finished") {
		t.Fatalf("the page does not say the task finished first:\n%s", page)
	}
	if v := tasker.Violations(); len(v) > 0 {
		t.Errorf("against the extension: %q", v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range tasker.TaskIDs() {
		for _, b := range c.bodies {
			if strings.Contains(b, id) {
				t.Fatalf("a task id left Rounds:\n%s", b)
			}
		}
	}
}

// TestTaskLimitThroughThePages: a servers file lets a server run one task
// at once, and its admin page says so. A program starts two calls that
// become tasks: the second is not sent, and its page says why; when the
// first is stopped, the second starts.
func TestTaskLimitThroughThePages(t *testing.T) {
	t.Parallel()
	tasker := mcptest.NewTasker(t, 300*time.Millisecond)
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"tasker": {"url": "`+tasker.URL+`", "maxTasks": 1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS_FILE": path, "MCP_REQUEST_TIMEOUT": "2s", "TASK_WAIT_POLL": "1s"}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)
	if _, page := c.do("GET", inst.URL+"/admin/servers/tasker", "", ""); !strings.Contains(string(page), `name="max_tasks" min="1" max="100000" value="1"`) {
		t.Fatalf("the admin page does not show the file's maxTasks:\n%s", page)
	}
	first := c.startWith(inst.URL, `{"server":"tasker","tool":"long_job","arguments":{}}`)
	c.waitTask(inst.URL, first.ID)
	second := c.startWith(inst.URL, `{"server":"tasker","tool":"long_job","arguments":{}}`)
	const waiting = "Waiting: tasker already runs 1 task; this call starts when one ends."
	eventually(t, time.Minute, func() error {
		_, page := c.do("GET", inst.URL+"/calls/"+second.ID, "", "")
		if strings.Contains(string(page), `data-testid="call-waiting">`+waiting+`<`) {
			return nil
		}
		return fmt.Errorf("the second call's page does not say it waits:\n%s", page)
	})
	if n := tasker.Started("long_job"); n != 1 {
		t.Fatalf("the server started %d tasks; it may run one", n)
	}
	if status, body := c.post(inst.URL+"/calls/"+first.ID+"/stop", url.Values{}); status != http.StatusSeeOther {
		t.Fatalf("stop: %d %s", status, body)
	}
	eventually(t, time.Minute, func() error {
		if tasker.Started("long_job") < 2 {
			return errors.New("the second call did not start when the first task was stopped")
		}
		return nil
	})
	c.waitFor(inst.URL, second.ID, time.Minute, func(c apiCall) bool { return c.Status == "running" })
	if _, page := c.do("GET", inst.URL+"/calls/"+second.ID, "", ""); strings.Contains(string(page), "call-waiting") {
		t.Fatalf("the page still says the call waits:\n%s", page)
	}
	// The admin page changes the limit, and says what is wrong with one
	// that is no number of tasks.
	status, page := c.post(inst.URL+"/admin/servers/tasker", url.Values{"url": {tasker.URL}, "max_tasks": {"0"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(page), "Give the tasks at once as a whole number from 1 to 100000") {
		t.Fatalf("a limit of 0: %d\n%s", status, page)
	}
	if status, body := c.post(inst.URL+"/admin/servers/tasker", url.Values{"url": {tasker.URL}, "max_tasks": {"3"}}); status != http.StatusSeeOther {
		t.Fatalf("a limit of 3: %d %s", status, body)
	}
	if _, page := c.do("GET", inst.URL+"/admin/servers/tasker", "", ""); !strings.Contains(string(page), `name="max_tasks" min="1" max="100000" value="3"`) ||
		!strings.Contains(string(page), "Now 1 running or on their way, 0 waiting.") {
		t.Fatalf("the admin page after the limit was changed:\n%s", page)
	}
}

// TestBrowserTask: a task's call page at laptop width with JavaScript and
// at phone width without. It says the server runs a task and shows what
// the task says it does; the task's question comes as a round that reads
// like any other (its message as text), without a reload where scripts
// run; answered, the call completes. axe-core finds nothing.
func TestBrowserTask(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	tasker := mcptest.NewTasker(t, 1500*time.Millisecond)
	inst := startInstance(t, newDatabase(t), taskEnv(tasker), nil)
	for _, c := range []struct {
		width int64
		js    bool
	}{{1280, true}, {390, false}} {
		j := newJourneyFor(t, browser, c.js, 2*time.Minute)
		j.emulate(c.width, "Europe/Lisbon")
		j.signIn(inst.URL)
		j.within("start the deployment",
			chromedp.Navigate(inst.URL+"/servers/tasker/tools/deploy"),
			chromedp.Click(chromedp.CSS(`button[data-testid="start"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#call`)),
		)
		loc := evaluate[string](j, "location", `location.pathname`)
		if c.js {
			evaluate[bool](j, "mark the page", `window.stayed = true`)
			j.waitFor("the task's words", `(document.querySelector('[data-testid="progress-message"]')?.textContent || "").startsWith("Building")`)
			if max := evaluate[string](j, "the bar", `document.querySelector('[data-testid="progress-bar"]').hasAttribute('max') + ""`); max != "false" {
				t.Error("a task's bar claims a measure")
			}
			if !strings.Contains(j.text(`[data-testid="task-note"]`), "runs this call as a task") {
				t.Error("the page does not say the server runs a task")
			}
			j.axe("the running task")
			j.within("the round to come", chromedp.WaitVisible(chromedp.CSS(`form[data-testid="round-form"]`)))
			if !evaluate[bool](j, "no reload", `window.stayed === true`) {
				t.Error("the page reloaded to show the round")
			}
		} else {
			j.reloadUntil(inst.URL+loc, `!!document.querySelector('form[data-testid="round-form"]')`, "the task's round")
		}
		if got := j.text(`[data-testid="round-form"]`); !strings.Contains(got, "Deploy build 42 to production? <b>not bold</b>") {
			t.Errorf("the round reads %q", got)
		}
		j.axe("the task's round")
		j.fits("the task's round", c.width)
		j.within("answer",
			chromedp.Click(chromedp.CSS(`input[name="q0.confirm"]`)),
			chromedp.Click(chromedp.CSS(`button[data-testid="submit-round"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="history-round"]`)),
		)
		if !c.js {
			j.reloadUntil(inst.URL+loc, `!!document.querySelector('[data-testid="result-text"]')`, "the task's result")
		}
		j.within("the result", chromedp.WaitVisible(chromedp.CSS(`[data-testid="result-text"]`)))
		if got := j.text(`[data-testid="result-text"]`); got != "Deployed build 42." {
			t.Errorf("result %q", got)
		}
		j.fits("the finished task", c.width)
	}
}

// reloadUntil reloads page, as a person without JavaScript does (the page
// also refreshes itself, which may cut a reload short), until condition
// holds on it.
func (j *journey) reloadUntil(page, condition, what string) {
	j.t.Helper()
	eventually(j.t, time.Minute, func() error {
		_ = chromedp.Do(j.ctx, chromedp.Navigate(page))
		if ok, err := chromedp.Run(j.ctx, chromedp.Evaluate[bool](condition)); err == nil && ok {
			return nil
		}
		return fmt.Errorf("%s never came", what)
	})
}

// waitTask waits until the API says the server runs the call as a task.
func (c *client) waitTask(base, id string) {
	c.t.Helper()
	eventually(c.t, time.Minute, func() error {
		var task struct {
			Task *struct{} `json:"task"`
		}
		_, body := c.do("GET", base+"/api/v1/calls/"+id, "", "")
		if json.Unmarshal(body, &task) == nil && task.Task != nil {
			return nil
		}
		return fmt.Errorf("the call never became a task: %s", body)
	})
}

// askedSpan is how far apart the first and the last polls that were
// answered with a question came, as the server saw them.
func askedSpan(polls []mcptest.Poll) time.Duration {
	var first, last time.Time
	for _, p := range polls {
		if p.Asked == "" {
			continue
		}
		if first.IsZero() {
			first = p.At
		}
		last = p.At
	}
	return last.Sub(first)
}

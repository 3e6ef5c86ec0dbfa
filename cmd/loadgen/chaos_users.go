package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// chaosClient makes one user's requests. A refused connection (a killed
// instance) or a 503 (Postgres restarting) is tried again on the next
// instance; every 5xx is noted with its time.
type chaosClient struct {
	urls    []string
	next    uint64
	token   string
	outages *outageLog
	stats   *chaosStats
	client  *http.Client
	csrf    string
}

var errGaveUp = errors.New("gave up")

func (c *chaosClient) do(ctx context.Context, method, path string, body io.Reader, contentType string) ([]byte, *http.Response, error) {
	var payload []byte
	if body != nil {
		payload, _ = io.ReadAll(body)
	}
	for {
		if ctx.Err() != nil {
			return nil, nil, errGaveUp
		}
		c.next++
		base := c.urls[c.next%uint64(len(c.urls))]
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(payload))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if c.client == nil {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		client := c.client
		if client == nil {
			client = httpClient
		}
		resp, err := client.Do(req)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if resp.StatusCode >= 500 {
			c.stats.fiveXX.Add(1)
			c.stats.mu.Lock()
			c.stats.errors = append(c.stats.errors, fiveXX{at: time.Now(), what: fmt.Sprintf("%s %s: %d %.200s", method, path, resp.StatusCode, b)})
			c.stats.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return b, resp, nil
	}
}

type chaosCall struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Round  *struct {
		Seq int `json:"seq"`
	} `json:"round"`
}

// apiUser books flights through the API until runCtx ends, and finishes
// the call in hand before drainCtx does.
func (c *chaosClient) apiUser(runCtx, drainCtx context.Context) {
	get := func(id string, after int) (chaosCall, error) {
		b, _, err := c.do(drainCtx, "GET", fmt.Sprintf("/api/v1/calls/%s?wait=5s&after_seq=%d", id, after), nil, "")
		var call chaosCall
		if err == nil {
			err = json.Unmarshal(b, &call)
		}
		return call, err
	}
	for runCtx.Err() == nil {
		b, resp, err := c.do(runCtx, "POST", "/api/v1/calls", strings.NewReader(`{"server":"demo","tool":"book_flight","arguments":{}}`), "application/json")
		if err != nil || resp.StatusCode != http.StatusCreated {
			continue
		}
		var call chaosCall
		_ = json.Unmarshal(b, &call)
		// A destination of its own makes each call's answers, and the
		// state they come back with, unlike any other call's: the server
		// counts a repeat only when the same answers arrive twice.
		n := c.stats.calls.Add(1)
		trip := strings.Replace(tripAnswers, `"Lisbon"`, fmt.Sprintf(`"Lisbon %d"`, n), 1)
		for seq, answers := range []string{trip, seatAnswers} {
			for {
				call, err = get(call.ID, seq)
				if err != nil || call.Status == "complete" || call.Status == "failed" || call.Round != nil && call.Round.Seq > seq {
					break
				}
			}
			if err != nil || call.Round == nil || call.Round.Seq != seq+1 {
				c.stats.lose(fmt.Sprintf("call %s: round %d never came (status %s)", call.ID, seq+1, call.Status))
				break
			}
			c.stats.started.Add(1)
			_, resp, err := c.do(drainCtx, "POST", fmt.Sprintf("/api/v1/calls/%s/rounds/%d", call.ID, seq+1),
				strings.NewReader(`{"inputResponses":`+answers+`}`), "application/json")
			// 409: an earlier try was taken, and its answer cut on the way back.
			if err != nil || resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusConflict {
				c.stats.lose(fmt.Sprintf("call %s: answer to round %d refused", call.ID, seq+1))
				break
			}
			for {
				call, err = get(call.ID, seq+1)
				if err != nil || call.Status == "complete" || call.Status == "failed" || call.Round != nil && call.Round.Seq > seq+1 {
					break
				}
			}
			if err != nil || call.Status == "failed" {
				c.stats.lose(fmt.Sprintf("call %s: round %d answered, then %s", call.ID, seq+1, call.Status))
				break
			}
			c.stats.answered.Add(1)
		}
	}
}

// pageUser books flights through the pages, as a browser without
// JavaScript does: it posts the forms and reloads the call page.
func (c *chaosClient) pageUser(runCtx, drainCtx context.Context) {
	jar, _ := cookiejar.New(nil)
	c.client = &http.Client{Transport: httpClient.Transport, Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for runCtx.Err() == nil {
		var err error
		if c.csrf, err = signIn(runCtx, c.client, c.urls[c.next%uint64(len(c.urls))]); err == nil {
			break
		}
		c.next++
		time.Sleep(200 * time.Millisecond)
	}
	post := func(ctx context.Context, path string, form url.Values) (*http.Response, error) {
		form.Set("csrf_token", c.csrf)
		_, resp, err := c.do(ctx, "POST", path, strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
		return resp, err
	}
	// waitFor reloads the call page until it shows round seq's form, or
	// the result when seq is 0.
	waitFor := func(callPath string, seq int) bool {
		for drainCtx.Err() == nil {
			page, _, err := c.do(drainCtx, "GET", callPath, nil, "")
			if err != nil {
				return false
			}
			if seq > 0 {
				if m := roundSeq.FindSubmatch(page); m != nil && string(m[1]) == strconv.Itoa(seq) {
					return true
				}
			} else if bytes.Contains(page, []byte(`data-status="complete"`)) {
				return true
			}
			if bytes.Contains(page, []byte(`data-status="failed"`)) {
				return false
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	forms := []url.Values{
		{"q0$action": {"accept"}, "q0.passengers": {"2"}, "q1$action": {"accept"}, "q1.destination": {"Lisbon"}, "q1.date": {"2031-05-04"}},
		{"q0$action": {"accept"}, "q0.class": {"business"}},
	}
	for runCtx.Err() == nil {
		resp, err := post(runCtx, "/servers/demo/tools/book_flight", url.Values{})
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			continue
		}
		callPath := resp.Header.Get("Location")
		n := c.stats.calls.Add(1)
		forms[0].Set("q1.destination", fmt.Sprintf("Lisbon %d", n))
		for i, form := range forms {
			if !waitFor(callPath, i+1) {
				c.stats.lose(fmt.Sprintf("%s: round %d never came", callPath, i+1))
				break
			}
			c.stats.started.Add(1)
			resp, err := post(drainCtx, fmt.Sprintf("%s/rounds/%d", callPath, i+1), cloneValues(form))
			if err != nil || resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusConflict {
				status := 0
				if resp != nil {
					status = resp.StatusCode
				}
				c.stats.lose(fmt.Sprintf("%s: answer to round %d refused (%d)", callPath, i+1, status))
				break
			}
			next := i + 2
			if i == len(forms)-1 {
				next = 0
			}
			if !waitFor(callPath, next) {
				c.stats.lose(fmt.Sprintf("%s: round %d answered, then nothing", callPath, i+1))
				break
			}
			c.stats.answered.Add(1)
		}
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

package mcptest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"sync"
)

// ServeStdio serves a Fake of the given flavour over in and out, as the
// real server does when a client starts it as a program: newline-delimited
// JSON-RPC, the very messages its HTTP traffic carries, one per line. Its
// requestState is sealed with a key made when the process starts, as the
// real server's is, so only this process opens it. A handshake-era
// ctx.elicit question comes on the one session the process has. It
// returns when in ends, as the server does when its stdin closes.
//
// Each line goes to the fake's HTTP handler on loopback, inside this
// process, and what the handler answers (JSON, or each event of an SSE
// stream) comes out as lines: the fake's logic is the one its HTTP tests
// check.
func ServeStdio(flavour Flavour, in io.Reader, out io.Writer, stderr io.Writer) error {
	f := &Fake{flavour: flavour, sessions: map[string]*pySession{}, secret: make([]byte, 32)}
	_, _ = rand.Read(f.secret)
	srv := httptest.NewServer(f)
	defer srv.Close()
	fmt.Fprintf(stderr, "%s: serving over stdio\n", flavour)

	var (
		mu      sync.Mutex // guards sid and protocol
		sid     string
		version string
		outMu   sync.Mutex
	)
	emit := func(line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = out.Write(append(line, '\n'))
	}
	post := func(line []byte) {
		var msg rpcMessage
		_ = json.Unmarshal(line, &msg)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", bytes.NewReader(line))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		mu.Lock()
		if sid != "" && msg.Method != "initialize" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", version)
		} else if msg.Method != "" && msg.Method != "initialize" {
			req.Header.Set("Mcp-Method", msg.Method)
		}
		mu.Unlock()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", flavour, err)
			return
		}
		defer resp.Body.Close()
		if msg.Method == "initialize" {
			var init struct {
				Params struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"params"`
			}
			_ = json.Unmarshal(line, &init)
			mu.Lock()
			sid, version = resp.Header.Get("Mcp-Session-Id"), init.Params.ProtocolVersion
			mu.Unlock()
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt != "text/event-stream" {
			body, _ := io.ReadAll(resp.Body)
			if bytes.Contains(body, []byte(`"jsonrpc"`)) {
				emit(body)
			}
			return
		}
		r := bufio.NewReader(resp.Body)
		for {
			l, err := r.ReadBytes('\n')
			if data, ok := bytes.CutPrefix(l, []byte("data:")); ok {
				emit(data)
			}
			if err != nil {
				return
			}
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.Clone(sc.Bytes())
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		// A request held open by a question must not stop the answer to
		// it from being read.
		go post(line)
	}
	f.mu.Lock()
	for id, s := range f.sessions {
		close(s.done)
		delete(f.sessions, id)
	}
	f.mu.Unlock()
	return sc.Err()
}

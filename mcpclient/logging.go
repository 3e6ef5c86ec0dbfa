package mcpclient

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LogLevels are the syslog severities of the spec's logging, least first.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// MetaLogLevel is the _meta key of a 2026-07-28 request's log level: the
// least severe notifications/message the server may send for it.
const MetaLogLevel = "io.modelcontextprotocol/logLevel"

// LogAtLeast reports whether level is as severe as least, or more; an
// unknown level is neither.
func LogAtLeast(level, least string) bool {
	i, j := slices.Index(LogLevels, level), slices.Index(LogLevels, least)
	return i >= 0 && j >= 0 && i >= j
}

// LogMessage is a notifications/message a server sent while it worked on
// a request: its level, its logger's name, and its data as sent, bounded.
type LogMessage struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// maxLogData bounds a log message's data: more is replaced by a sentence
// saying how much was left out.
const maxLogData = 4096

// logOf reads a notifications/message's params. A message below least, of
// a level the spec does not know, or without data is none.
func logOf(params json.RawMessage, least string) (LogMessage, bool) {
	var m LogMessage
	if json.Unmarshal(params, &m) != nil || len(m.Data) == 0 || !LogAtLeast(m.Level, least) {
		return LogMessage{}, false
	}
	m.Logger = boundedText(m.Logger)
	if len(m.Data) > maxLogData {
		m.Data, _ = json.Marshal("(" + strconv.Itoa(len(m.Data)) + " bytes of log data, left out by Rounds)")
	}
	return m, true
}

// logHandler is a handshake-era session's handler of notifications/message,
// or nil when nobody listens.
func logHandler(srv Server) func(context.Context, *mcp.LoggingMessageRequest) {
	if srv.Log == nil || srv.LogLevel == "" {
		return nil
	}
	return func(_ context.Context, req *mcp.LoggingMessageRequest) {
		raw, err := json.Marshal(req.Params)
		if err != nil {
			return
		}
		if m, ok := logOf(raw, srv.LogLevel); ok {
			srv.Log(m)
		}
	}
}

// setLogLevel asks a handshake-era server for its log messages of level
// and above, when it declared logging; a server that refuses sends
// what it sends.
func setLogLevel(ctx context.Context, cs *mcp.ClientSession, srv Server) {
	if srv.Log == nil || srv.LogLevel == "" {
		return
	}
	if init := cs.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(srv.LogLevel)})
}

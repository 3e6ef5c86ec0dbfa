package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
)

type logAttrsKey struct{}

// withLogAttrs adds attributes that every log line written with ctx carries.
func withLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	prev, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	return context.WithValue(ctx, logAttrsKey{}, append(prev[:len(prev):len(prev)], attrs...))
}

// LogContext wraps a slog handler so that each line written with a
// request's context carries its request id, and its call id where there is
// one. Nothing else is taken from the request: never a body, so never an
// answer or a request state.
func LogContext(next slog.Handler) slog.Handler { return ctxHandler{next} }

type ctxHandler struct{ slog.Handler }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs, ok := ctx.Value(logAttrsKey{}).([]slog.Attr); ok {
		r.AddAttrs(attrs...)
	}
	return h.Handler.Handle(ctx, r)
}

func (h ctxHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return ctxHandler{h.Handler.WithAttrs(attrs)}
}

func (h ctxHandler) WithGroup(name string) slog.Handler { return ctxHandler{h.Handler.WithGroup(name)} }

// requestID keeps a proxy's X-Request-Id when it looks like one, so a
// request can be followed through nginx and the app; otherwise it makes one.
func requestID(incoming string) string {
	if n := len(incoming); n >= 8 && n <= 64 && strings.Trim(incoming,
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" {
		return incoming
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

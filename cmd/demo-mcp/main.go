// Command demo-mcp runs the demo MCP server on its own, at /mcp.
//
// Flags: -addr (default $DEMO_ADDR or 127.0.0.1:8090). Environment:
// DEMO_SECRET signs requestState; without it a random secret is used, so
// pending rounds do not survive a restart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcp-rounds/rounds/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo-mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	addr := os.Getenv("DEMO_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8090"
	}
	flag.StringVar(&addr, "addr", addr, "listen address (env DEMO_ADDR)")
	flag.Parse()

	mux := http.NewServeMux()
	mux.Handle("/mcp", demo.Handler(demo.Options{Secret: []byte(os.Getenv("DEMO_SECRET"))}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	slog.Info("demo MCP server listening", "url", "http://"+ln.Addr().String()+"/mcp")

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Command web serves Rounds: pick an MCP server and a tool, start a call,
// and answer the server's questions in the browser, on any instance.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	// People's time zones are looked up by name; the zone database is
	// built in so that a container without one still has them.
	_ "time/tzdata"

	"github.com/mcp-rounds/rounds/app"
)

// version is set at build time with -ldflags "-X main.version=…"; when it
// is not, the instance goes by the configuration's ("dev").
var version string

func main() {
	// Before anything reads a secret: no other process of this user may
	// read this one's environment or memory (app.Protect).
	if err := app.Protect(); err != nil {
		fmt.Fprintln(os.Stderr, "web:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 {
		if err := app.Command(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Getenv); err != nil {
			fmt.Fprintln(os.Stderr, "web:", err)
			os.Exit(1)
		}
		return
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(ctx, log); err != nil {
		var nd *app.NoDatabaseError
		if errors.As(err, &nd) {
			// A first run without Postgres: said in words, not as a log line.
			fmt.Fprintln(os.Stderr, nd.Error())
			os.Exit(1)
		}
		log.Error("exiting", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts the instance down.
func run(ctx context.Context, log *slog.Logger) error {
	cfg, err := app.ConfigFromEnvironment()
	if err != nil {
		return err
	}
	if version != "" {
		cfg.Version = version
	}
	a, err := app.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	log.Info("listening", "url", "http://"+a.Addr(), "version", cfg.Version)
	return a.Wait(ctx)
}

// Command loadgen measures Rounds under load: answered rounds per second
// through the JSON API and through the pages, the time from an answer to
// the next round being visible, and a bare go-sdk client doing the same
// rounds against the same demo server with nothing stored, as a baseline.
//
//	go run ./cmd/loadgen                 # throughput and latency
//	go run ./cmd/loadgen -scale 1000000  # inbox and call page with a million stored rounds
//	go run ./cmd/loadgen -chaos 30m      # kills and restarts under load: nothing may be lost
//	go run ./cmd/loadgen -modes agents   # MCP agents, directly and through Rounds' /mcp/{server}
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/mcp-rounds/rounds/demo"
)

type options struct {
	db        string
	web       string
	instances int
	users     int
	duration  time.Duration
	warmup    time.Duration
	runs      int
	modes     string
	scale     int
	short     bool
	chaos     time.Duration
	// pooled is the instances' DATABASE_URL when set (PgBouncer in front
	// of db, which they get as DATABASE_DIRECT_URL); replica their
	// DATABASE_READ_URL.
	pooled, replica string
	// chaosPooled runs the chaos run's instances through PgBouncer in
	// transaction mode, in front of its own Postgres.
	chaosPooled bool
}

func main() {
	var o options
	flag.StringVar(&o.db, "db", "postgres://postgres@127.0.0.1:5432/rounds_loadgen?sslmode=disable", "database for the run; dropped and created anew")
	flag.StringVar(&o.pooled, "pooled", "", "PgBouncer in transaction mode in front of -db: the instances' DATABASE_URL, -db their DATABASE_DIRECT_URL")
	flag.BoolVar(&o.chaosPooled, "chaos-pgbouncer", false, "with -chaos: the instances reach the run's Postgres through PgBouncer in transaction mode (needs pgbouncer)")
	flag.StringVar(&o.replica, "replica", "", "a streaming replica of -db's database: the instances' DATABASE_READ_URL")
	flag.StringVar(&o.web, "web", "", "the web binary (default: build ./cmd/web)")
	flag.IntVar(&o.instances, "instances", 2, "app instances over the one database")
	flag.IntVar(&o.users, "users", 32, "virtual users, each doing one call after another")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of each measured run")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "unmeasured load before the runs")
	flag.IntVar(&o.runs, "runs", 3, "measured runs of each kind")
	flag.StringVar(&o.modes, "modes", "baseline,api,html,half", "what to measure: baseline, api, html, half (api at half the peak rate), agents (MCP clients calling a tool that asks nothing, directly and through /mcp/demo)")
	flag.IntVar(&o.scale, "scale", 0, "instead: seed this many stored rounds and measure the inbox and call page")
	flag.BoolVar(&o.short, "short", false, "a few seconds in all, to check that the benchmark works")
	flag.DurationVar(&o.chaos, "chaos", 0, "instead: a chaos run this long (instances killed, Postgres restarted); see chaos.go")
	flag.Parse()
	if o.short {
		o.duration, o.warmup, o.runs, o.users = time.Second, 200*time.Millisecond, 1, 4
		if o.scale > 0 {
			o.scale = min(o.scale, 2000)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if o.chaos > 0 {
		users := false
		flag.Visit(func(f *flag.Flag) { users = users || f.Name == "users" })
		if !users {
			o.users = 8
		}
		rep, err := runChaos(ctx, o, o.chaos)
		rep.print()
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	demoURL, stopDemo, err := startDemo()
	if err != nil {
		return err
	}
	defer stopDemo()
	fleet, err := startFleet(ctx, o, demoURL)
	if err != nil {
		return err
	}
	defer fleet.stop()
	fmt.Printf("instances: %d, cold start (migrations included): %s; users: %d; runs: %d × %s after %s warm-up\n",
		len(fleet.urls), fleet.coldStart.Round(time.Millisecond), o.users, o.runs, o.duration, o.warmup)
	if o.scale > 0 {
		return measureScale(ctx, o, fleet)
	}
	return measureThroughput(ctx, o, fleet, demoURL)
}

// startDemo serves the demo MCP server on loopback, as a separate server
// the instances reach over HTTP.
func startDemo() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: demo.Handler(demo.Options{Secret: []byte("loadgen demo secret")})}
	go srv.Serve(ln) //nolint:errcheck
	return "http://" + ln.Addr().String() + "/mcp", func() { _ = srv.Close() }, nil
}

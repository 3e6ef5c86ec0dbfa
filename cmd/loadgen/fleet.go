package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// fleet is the app instances under test, each a process of its own.
type fleet struct {
	urls      []string
	procs     []*exec.Cmd
	token     string
	db        string
	coldStart time.Duration
	tmp       string
}

const adminPassword = "loadgen admin password"

func startFleet(ctx context.Context, o options, demoURL string) (*fleet, error) {
	f := &fleet{db: o.db}
	var err error
	if f.tmp, err = os.MkdirTemp("", "loadgen"); err != nil {
		return nil, err
	}
	if err := recreateDatabase(ctx, o.db); err != nil {
		return nil, err
	}
	bin := o.web
	if bin == "" {
		bin = filepath.Join(f.tmp, "web")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/web")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building ./cmd/web (run loadgen from the repository's root): %w", err)
		}
	}
	env := append(os.Environ(), "DATABASE_URL="+o.db, "MCP_SERVERS=demo="+demoURL, "ADMIN_PASSWORD="+adminPassword)
	if o.pooled != "" {
		env = append(env, "DATABASE_URL="+o.pooled, "DATABASE_DIRECT_URL="+o.db)
	}
	if o.replica != "" {
		env = append(env, "DATABASE_READ_URL="+o.replica)
	}
	for i := range o.instances {
		addr, err := freeAddr()
		if err != nil {
			f.stop()
			return nil, err
		}
		cmd := exec.Command(bin)
		cmd.Env = append(env, "LISTEN_ADDR="+addr)
		logFile, err := os.Create(filepath.Join(f.tmp, fmt.Sprintf("instance-%d.log", i)))
		if err != nil {
			f.stop()
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		began := time.Now()
		if err := cmd.Start(); err != nil {
			f.stop()
			return nil, err
		}
		f.procs = append(f.procs, cmd)
		url := "http://" + addr
		if err := waitReady(ctx, url); err != nil {
			f.stop()
			return nil, fmt.Errorf("instance %d: %w (log: %s)", i, err, logFile.Name())
		}
		if i == 0 {
			f.coldStart = time.Since(began)
		}
		f.urls = append(f.urls, url)
	}
	var out bytes.Buffer
	tok := exec.CommandContext(ctx, bin, "token", "create", "admin")
	tok.Env, tok.Stdout, tok.Stderr = env, &out, os.Stderr
	if err := tok.Run(); err != nil {
		f.stop()
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	f.token = lines[len(lines)-1]
	return f, nil
}

func (f *fleet) stop() {
	for _, p := range f.procs {
		_ = p.Process.Signal(os.Interrupt)
	}
	for _, p := range f.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
		}
	}
	if f.tmp != "" {
		_ = os.RemoveAll(f.tmp)
	}
}

// rss returns each instance's resident memory, in MiB.
func (f *fleet) rss() []float64 {
	var out []float64
	for _, p := range f.procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Process.Pid))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
				out = append(out, kb/1024)
			}
		}
	}
	return out
}

func recreateDatabase(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	name := cfg.Database
	if name == "" || name == "postgres" {
		return errors.New("-db must name a database of its own: it is dropped and created anew")
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)"); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize())
	return err
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("not ready after 30s")
}

// xactCounter reads how many transactions the run's database has ended,
// committed or rolled back, from pg_stat_database. Backends report their
// counts about once a second while busy, so a reading taken under load is
// at most a second behind.
type xactCounter struct {
	ctx  context.Context
	conn *pgx.Conn
}

func (f *fleet) xactCounter(ctx context.Context) *xactCounter {
	conn, err := pgx.Connect(ctx, f.db)
	if err != nil {
		fmt.Println("transactions will not be counted:", err)
		return &xactCounter{ctx: ctx}
	}
	return &xactCounter{ctx: ctx, conn: conn}
}

// read returns the counter, or -1 when it cannot be read.
func (x *xactCounter) read() int64 {
	if x.conn == nil {
		return -1
	}
	var n int64
	err := x.conn.QueryRow(x.ctx, `select xact_commit + xact_rollback from pg_stat_database
		where datname = current_database()`).Scan(&n)
	if err != nil {
		return -1
	}
	return n
}

func (x *xactCounter) close() {
	if x.conn != nil {
		_ = x.conn.Close(context.Background())
	}
}

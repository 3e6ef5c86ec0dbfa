package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/store/pgcluster"
)

// cluster is a Postgres of the chaos run's own, made with initdb in a
// temporary directory and listening on a port of its own. Postgres refuses
// to run as root, so as root it runs as the postgres user.
type cluster struct {
	dir, port string
	runAs     string
}

func newCluster(ctx context.Context) (*cluster, error) {
	dir, err := os.MkdirTemp("", "rounds-chaos-pg")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		u, err := osuser.Lookup(c.runAs)
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user to run Postgres as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, c.port, _ = net.SplitHostPort(addr)
	if err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		c.destroy()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.destroy()
		return nil, err
	}
	return c, nil
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// chaosDatabase is the Postgres a chaos run restarts: its own cluster, or
// that cluster behind PgBouncer (-chaos-pgbouncer).
type chaosDatabase interface {
	url(db string) string   // Postgres itself
	env(db string) []string // the instances' settings to reach it
	restart(ctx context.Context) error
	destroy()
}

func (c *cluster) env(db string) []string { return []string{"DATABASE_URL=" + c.url(db)} }

// bouncedCluster is a cluster of pgcluster's: Postgres with PgBouncer in
// transaction mode in front (and a standby, unused here).
type bouncedCluster struct{ c *pgcluster.Cluster }

func newBouncedCluster(ctx context.Context) (*bouncedCluster, error) {
	c, err := pgcluster.Start(ctx)
	if err != nil {
		return nil, err
	}
	return &bouncedCluster{c: c}, nil
}

func (b *bouncedCluster) url(db string) string { return b.c.PrimaryURL(db) }

func (b *bouncedCluster) env(db string) []string {
	return []string{"DATABASE_URL=" + b.c.PooledURL(db), "DATABASE_DIRECT_URL=" + b.c.PrimaryURL(db)}
}

func (b *bouncedCluster) restart(ctx context.Context) error { return b.c.RestartPrimary(ctx) }
func (b *bouncedCluster) destroy()                          { b.c.Close() }

func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable", c.port, db)
}

// run runs a Postgres program, found on PATH or in Debian's directory.
func (c *cluster) run(ctx context.Context, prog string, args ...string) error {
	path, err := exec.LookPath(prog)
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + prog)
		if len(matches) == 0 {
			return fmt.Errorf("%s not found: the chaos run needs Postgres's programs", prog)
		}
		path = matches[len(matches)-1]
	}
	cmd := exec.CommandContext(ctx, path, args...)
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", prog, err, out)
	}
	return nil
}

func (c *cluster) start(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-w", "-t", "60", "-l", filepath.Join(c.dir, "postgres.log"),
		"-o", fmt.Sprintf("-p %s -c listen_addresses=127.0.0.1 -k %s -c max_connections=200", c.port, c.dir), "start")
}

// restart stops Postgres the way an operator's restart does (fast: open
// connections are cut) and starts it again.
func (c *cluster) restart(ctx context.Context) error {
	if err := c.run(ctx, "pg_ctl", "-D", c.data(), "-w", "-m", "fast", "stop"); err != nil {
		return err
	}
	return c.start(ctx)
}

func (c *cluster) destroy() {
	_ = c.run(context.Background(), "pg_ctl", "-D", c.data(), "-w", "-m", "immediate", "stop")
	_ = os.RemoveAll(c.dir)
}

func countCalls(ctx context.Context, db string) (int64, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `select count(*) from calls`).Scan(&n)
	return n, err
}

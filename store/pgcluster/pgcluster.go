// Package pgcluster runs, for tests, a Postgres of their own with a
// streaming replica and PgBouncer in front of it in transaction mode: in a
// temporary directory, as the postgres user, on ports of its own, removed
// at the end. The machine's shared cluster is never touched (it allows no
// replication, and must not be reconfigured).
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bin is where Debian puts Postgres 15's programs.
const Bin = "/usr/lib/postgresql/15/bin"

// PoolSize is PgBouncer's server connections per database, as in the
// deployments the tests stand for.
const PoolSize = 8

// Cluster is a primary, a standby streaming from it, and a PgBouncer in
// front of the primary.
type Cluster struct {
	dir      string
	uid, gid int
	// The ports: Postgres, the standby, PgBouncer.
	PrimaryPort, ReplicaPort, Pool int
	primaryData, replicaData, ini  string
	bouncer                        *exec.Cmd
	bouncerDone                    chan struct{}
}

// Missing says what this machine lacks to run a Cluster, or "".
func Missing() string {
	if _, err := os.Stat(filepath.Join(Bin, "initdb")); err != nil {
		return "Postgres 15's programs (" + Bin + ")"
	}
	if _, err := exec.LookPath("pgbouncer"); err != nil {
		return "pgbouncer (apt-get install pgbouncer)"
	}
	if _, err := user.Lookup("postgres"); err != nil {
		return "the postgres user"
	}
	if os.Geteuid() != 0 {
		return "root, to run Postgres as the postgres user"
	}
	return ""
}

// Start makes and starts the three. Close removes them.
func Start(ctx context.Context) (c *Cluster, err error) {
	if m := Missing(); m != "" {
		return nil, errors.New("pgcluster: needs " + m)
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, err
	}
	c = &Cluster{}
	c.uid, _ = strconv.Atoi(u.Uid)
	c.gid, _ = strconv.Atoi(u.Gid)
	if c.dir, err = os.MkdirTemp("", "pgcluster-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	if err := os.Chown(c.dir, c.uid, c.gid); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	c.PrimaryPort, c.ReplicaPort, c.Pool = ports[0], ports[1], ports[2]
	c.primaryData = filepath.Join(c.dir, "primary")
	c.replicaData = filepath.Join(c.dir, "replica")

	if err := c.run(ctx, filepath.Join(Bin, "initdb"), "-D", c.primaryData, "-U", "postgres", "--auth=trust",
		"--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
wal_level = replica
max_wal_senders = 5
max_connections = 200
shared_buffers = 64MB
fsync = off
full_page_writes = off
hot_standby = on
hot_standby_feedback = on
include_if_exists = 'delay.conf'
`, c.PrimaryPort, c.dir)
	if err := appendFile(filepath.Join(c.primaryData, "postgresql.conf"), conf); err != nil {
		return nil, err
	}
	hba := "local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(c.primaryData, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return nil, err
	}
	if err := c.pgctl(ctx, c.primaryData, "start"); err != nil {
		return nil, err
	}
	if err := c.run(ctx, filepath.Join(Bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.PrimaryPort),
		"-U", "postgres", "-D", c.replicaData, "-R", "-X", "stream", "--no-sync"); err != nil {
		return nil, err
	}
	// The copy has the primary's settings; it listens elsewhere.
	if err := appendFile(filepath.Join(c.replicaData, "postgresql.conf"), fmt.Sprintf("port = %d\n", c.ReplicaPort)); err != nil {
		return nil, err
	}
	if err := c.StartReplica(ctx); err != nil {
		return nil, err
	}
	if err := c.startBouncer(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) startBouncer() error {
	c.ini = filepath.Join(c.dir, "pgbouncer.ini")
	ini := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 2000
max_db_connections = 0
server_reset_query =
logfile = %s
pidfile = %s
admin_users = postgres
stats_users = postgres
stats_period = 1
server_login_retry = 1
`, c.PrimaryPort, c.Pool, c.dir, filepath.Join(c.dir, "userlist.txt"), PoolSize,
		filepath.Join(c.dir, "pgbouncer.log"), filepath.Join(c.dir, "pgbouncer.pid"))
	if err := c.writeFile(c.ini, ini); err != nil {
		return err
	}
	if err := c.writeFile(filepath.Join(c.dir, "userlist.txt"), `"postgres" ""`+"\n"); err != nil {
		return err
	}
	prog, err := exec.LookPath("pgbouncer")
	if err != nil {
		return err
	}
	// Started as the postgres user itself (it refuses root), not through
	// runuser, so that Close's signal reaches it.
	cmd := exec.Command(prog, c.ini)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.gid)}}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	c.bouncer, c.bouncerDone = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.bouncerDone) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.Pool), time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-c.bouncerDone:
			return fmt.Errorf("pgbouncer exited: %s", out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("pgbouncer did not listen within 10s")
}

// PrimaryURL is Postgres itself, database db.
func (c *Cluster) PrimaryURL(db string) string { return url(c.PrimaryPort, db) }

// ReplicaURL is the standby, database db.
func (c *Cluster) ReplicaURL(db string) string { return url(c.ReplicaPort, db) }

// PooledURL is PgBouncer in front of the primary, database db.
func (c *Cluster) PooledURL(db string) string { return url(c.Pool, db) }

func url(port int, db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db)
}

// NewDatabase creates an empty database on the primary and returns its
// name; it is dropped with the cluster.
func (c *Cluster) NewDatabase(ctx context.Context, prefix string) (string, error) {
	conn, err := pgx.Connect(ctx, c.PrimaryURL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var name string
	if err := conn.QueryRow(ctx, `select $1 || '_' || substr(md5(random()::text), 1, 10)`, prefix).Scan(&name); err != nil {
		return "", err
	}
	if _, err = conn.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return name, c.waitReplayed(ctx, conn)
}

// waitReplayed waits until the standby has replayed what the primary
// (conn) has written so far.
func (c *Cluster) waitReplayed(ctx context.Context, primary *pgx.Conn) error {
	var lsn string
	if err := primary.QueryRow(ctx, `select pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		return err
	}
	replica, err := pgx.Connect(ctx, c.ReplicaURL("postgres"))
	if err != nil {
		return err
	}
	defer replica.Close(ctx)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var done bool
		if err := replica.QueryRow(ctx, `select pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil
		}
	}
	return errors.New("the standby did not catch up within a minute")
}

// RestartPrimary restarts the primary as an operator would (fast: open
// connections are cut); PgBouncer and the standby connect again.
func (c *Cluster) RestartPrimary(ctx context.Context) error {
	return c.pgctl(ctx, c.primaryData, "restart", "-m", "fast")
}

// StopReplica stops the standby at once, as a crash would.
func (c *Cluster) StopReplica(ctx context.Context) error {
	return c.pgctl(ctx, c.replicaData, "stop", "-m", "immediate")
}

// StartReplica starts the standby and waits until it takes connections.
func (c *Cluster) StartReplica(ctx context.Context) error {
	return c.pgctl(ctx, c.replicaData, "start")
}

// FreezeSender stops the primary's WAL sender in its tracks (SIGSTOP), as
// a hung sender or a link that drops packets without a reset would: the
// standby's receiver still says it streams, and has replayed all it
// received, while the primary writes on. Thaw (SIGCONT) lets it go on; the
// standby's receiver gives up on a silent sender only after
// wal_receiver_timeout (60 s).
func (c *Cluster) FreezeSender(ctx context.Context) (thaw func(), err error) {
	conn, err := pgx.Connect(ctx, c.PrimaryURL("postgres"))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := conn.QueryRow(ctx, `select pid from pg_stat_replication where state = 'streaming' limit 1`).Scan(&pid)
		if err == nil {
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) || time.Now().After(deadline) {
			return nil, fmt.Errorf("no streaming WAL sender: %w", err)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	return func() { _ = syscall.Kill(pid, syscall.SIGCONT) }, nil
}

// SetApplyDelay makes the standby replay each commit d after the primary
// made it (recovery_min_apply_delay); zero for at once.
func (c *Cluster) SetApplyDelay(ctx context.Context, d time.Duration) error {
	conf := fmt.Sprintf("recovery_min_apply_delay = '%dms'\n", d.Milliseconds())
	if err := c.writeFile(filepath.Join(c.replicaData, "delay.conf"), conf); err != nil {
		return err
	}
	if err := c.pgctl(ctx, c.replicaData, "reload"); err != nil {
		return err
	}
	// Wait until the standby says it uses the new delay.
	conn, err := pgx.Connect(ctx, c.ReplicaURL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	want := fmt.Sprint(d.Milliseconds())
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var got string
		if err := conn.QueryRow(ctx, `select setting from pg_settings where name = 'recovery_min_apply_delay'`).Scan(&got); err != nil {
			return err
		}
		if got == want {
			return nil
		}
	}
	return errors.New("the standby did not take the new apply delay")
}

// Close stops all three and removes their files.
func (c *Cluster) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := c.bouncer
	if b != nil && b.Process != nil {
		// SIGTERM: PgBouncer 1.18 shuts down at once.
		_ = b.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.bouncerDone:
		case <-time.After(5 * time.Second):
			_ = b.Process.Kill()
		}
	}
	for _, data := range []string{c.replicaData, c.primaryData} {
		if data == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err == nil {
			_ = c.pgctl(ctx, data, "stop", "-m", "immediate")
		}
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// pgctl runs pg_ctl on a data directory, logging to a file beside it.
func (c *Cluster) pgctl(ctx context.Context, data string, args ...string) error {
	full := append([]string{"-D", data, "-l", data + ".log", "-w", "-t", "60"}, args...)
	return c.run(ctx, filepath.Join(Bin, "pg_ctl"), full...)
}

// run runs a program as the postgres user.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) error {
	cmd := exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	cmd.Dir = c.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(prog), strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *Cluster) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Chown(path, c.uid, c.gid)
}

func appendFile(path, content string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// freePorts finds n ports nothing listens on.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// shared is the test binary's one Cluster: Get starts it the first time a
// test asks and hands the same to every later test; CloseShared (from
// TestMain, after m.Run) removes it.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Get returns the test binary's Cluster, starting it on first use.
func Get() (*Cluster, error) {
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.c, shared.err = Start(ctx)
	})
	return shared.c, shared.err
}

// CloseShared removes the Cluster Get started, if it did.
func CloseShared() {
	if shared.c != nil {
		shared.c.Close()
	}
}

package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/store"
)

// pools are the instance's connections to Postgres. main carries every
// query; direct is Postgres itself, for what keeps state on a session
// (LISTEN, the migrations and their advisory lock), and is main when no
// pooler stands between; read is the replica the lists read from, or nil.
type pools struct {
	main, direct, read *pgxpool.Pool
}

func (p pools) Close() {
	if p.read != nil {
		p.read.Close()
	}
	if p.direct != p.main {
		p.direct.Close()
	}
	p.main.Close()
}

// directURL is the URL of Postgres itself: DATABASE_DIRECT_URL, or
// DATABASE_URL when no pooler is named.
func (c Config) directURL() string { return or(c.DatabaseDirectURL, c.DatabaseURL) }

// openPools creates the database if missing (through the direct URL: a
// pooler cannot create one) and opens the pools the configuration names.
// maxConns is main's size when DATABASE_URL does not say.
func openPools(ctx context.Context, cfg Config, maxConns int32) (pools, error) {
	if err := store.EnsureDatabase(ctx, cfg.directURL()); err != nil {
		if nd := explainDatabase(cfg.directURL(), err); nd != err {
			return pools{}, nd
		}
		return pools{}, fmt.Errorf("database: %w", err)
	}
	mainCfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return pools{}, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if !strings.Contains(cfg.DatabaseURL, "pool_max_conns") && maxConns > 0 {
		mainCfg.MaxConns = maxConns
	}
	if cfg.DatabaseDirectURL != "" {
		pooled(mainCfg.ConnConfig, cfg.DatabaseURL)
	}
	var p pools
	if p.main, err = pgxpool.NewWithConfig(ctx, mainCfg); err != nil {
		return pools{}, err
	}
	p.direct = p.main
	if cfg.DatabaseDirectURL != "" {
		directCfg, err := pgxpool.ParseConfig(cfg.DatabaseDirectURL)
		if err != nil {
			p.Close()
			return pools{}, fmt.Errorf("DATABASE_DIRECT_URL: %w", err)
		}
		if !strings.Contains(cfg.DatabaseDirectURL, "pool_max_conns") {
			// The notifier's connection and the migrations'; nothing else.
			directCfg.MaxConns = 3
		}
		// The migrations' connections go once idle; the notifier's stays.
		directCfg.MaxConnIdleTime = time.Minute
		if p.direct, err = pgxpool.NewWithConfig(ctx, directCfg); err != nil {
			p.direct = p.main
			p.Close()
			return pools{}, err
		}
	}
	if cfg.DatabaseReadURL != "" {
		readCfg, err := pgxpool.ParseConfig(cfg.DatabaseReadURL)
		if err != nil {
			p.Close()
			return pools{}, fmt.Errorf("DATABASE_READ_URL: %w", err)
		}
		if readCfg.ConnConfig.ConnectTimeout == 0 || readCfg.ConnConfig.ConnectTimeout > 2*time.Second {
			// A replica that does not answer costs a page at most this
			// long before it reads the primary.
			readCfg.ConnConfig.ConnectTimeout = 2 * time.Second
		}
		// The replica is not asked to start: a replica down is a fact of
		// life the lists work around, not a reason to refuse to start.
		if p.read, err = pgxpool.NewWithConfig(ctx, readCfg); err != nil {
			p.Close()
			return pools{}, err
		}
	}
	return p, nil
}

// pooled makes a connection fit for a pooler in transaction mode, which
// gives each transaction whichever server connection is free: pgx's
// statement cache would find its prepared statements missing (26000) or
// present twice (42P05). cache_describe keeps one round trip per query and
// correct parameter types without a prepared statement (exec and
// simple_protocol send []byte as bytea, which the JSON columns refuse). A
// mode DATABASE_URL names itself is kept.
func pooled(cc *pgx.ConnConfig, url string) {
	if !strings.Contains(url, "default_query_exec_mode") {
		cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
}

package toolret

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
)

// EnvDatabase is the variable `toolret serve` reads the default of -database from.
const EnvDatabase = "TOOLRET_DATABASE_URL"

// openStore opens cfg.Index's library: in the index directory's files, or shared through
// the PostgreSQL database cfg.Database (then pg is its connection, also the gateway's usage
// log).
func openStore(ctx context.Context, cfg ServeConfig, log *slog.Logger, ropts []toolindex.Option) (store *serve.Store, pg *serve.PGStore, err error) {
	if cfg.Database == "" {
		store, err = serve.Open(cfg.Index, cfg.CompactEvery, ropts...)
		return store, nil, err
	}
	host, _ := os.Hostname()
	pg, err = serve.OpenPG(ctx, cfg.Database, serve.PGOptions{Name: fmt.Sprintf("%s:%d %s", host, os.Getpid(), cfg.Addr), Log: log, LogKeep: cfg.DatabaseLogKeep})
	if err != nil {
		return nil, nil, fmt.Errorf("-database: %w", err)
	}
	if m := pg.Migrated(); len(m) > 0 {
		log.Info("database schema migrated", "migrations", m)
	}
	if store, err = serve.OpenShared(cfg.Index, pg, ropts...); err != nil {
		pg.Close()
		return nil, nil, fmt.Errorf("-database: %w", err)
	}
	lib := store.R.Library()
	log.Info("shared library loaded from PostgreSQL", "tools", lib.Len(), "version", lib.Version)
	return store, pg, nil
}

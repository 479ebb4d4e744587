package toolret

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
	"github.com/toolret/toolret/toolindex/store/pgstore"
)

// EnvDatabase is the variable `toolret serve` reads the default of -database from.
const EnvDatabase = "TOOLRET_DATABASE_URL"

// openStore opens cfg.Index's library: in the index directory's files, or shared through
// the PostgreSQL database cfg.Database (then pg is its connection, also the gateway's usage
// log).
func openStore(ctx context.Context, cfg ServeConfig, log *slog.Logger, ropts []toolindex.Option) (st *store.Store, pg *pgstore.Store, err error) {
	if cfg.Database == "" {
		st, err = store.Open(cfg.Index, cfg.CompactEvery, ropts...)
		return st, nil, err
	}
	host, _ := os.Hostname()
	pg, err = pgstore.Open(ctx, cfg.Database, pgstore.Options{Name: fmt.Sprintf("%s:%d %s", host, os.Getpid(), cfg.Addr), Log: log, LogKeep: cfg.DatabaseLogKeep})
	if err != nil {
		return nil, nil, fmt.Errorf("-database: %w", err)
	}
	if m := pg.Migrated(); len(m) > 0 {
		log.Info("database schema migrated", "migrations", m)
	}
	if st, err = store.OpenShared(cfg.Index, pg, ropts...); err != nil {
		pg.Close()
		return nil, nil, fmt.Errorf("-database: %w", err)
	}
	lib := st.R.Library()
	log.Info("shared library loaded from PostgreSQL", "tools", lib.Len(), "version", lib.Version)
	return st, pg, nil
}

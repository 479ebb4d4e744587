// Package pgstore is the PostgreSQL database that replicas of a served index share
// (toolret serve -database): a store.Journal of the tool library, which store.OpenShared
// serves, and, in the same database, the tool gateway's usage log and library. It is a
// package of its own so that users of package store do not link a PostgreSQL driver.
package pgstore

import (
	"context"
	"embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/toolindex/store"
)

// Store is a store.Journal in a PostgreSQL database (Open): the tables library_head,
// library_tools and library_log hold the library, and a commit NOTIFYs the channel
// Channel, which every replica LISTENs to on a connection of its own. The same database
// keeps the gateway's usage log (usage_log, AppendUsage). The schema is created and
// upgraded by numbered migrations (migrations/*.sql) at open, recorded in
// schema_migrations.
//
// While the database cannot be reached (the listening connection lost, a query failing
// for want of a connection), every method fails at once with store.ErrUnavailable and the
// connection is retried in the background with backoff; once it is back the replica
// catches up from the log.
type Store struct {
	pool     *pgxpool.Pool
	lcfg     *pgx.ConnConfig // the listening connection's
	name     string
	log      *slog.Logger
	poll     time.Duration
	changed  chan struct{}
	up       atomic.Bool
	lastErr  atomic.Pointer[error]
	cancel   context.CancelFunc
	done     chan struct{}
	migrated []int
	keep     int
	closeMu  sync.Once
}

var _ store.Journal = (*Store)(nil)

// Options configure Open.
type Options struct {
	// Name names this replica in the log table (committed_by) and in PostgreSQL's
	// application_name; default HOST:PID.
	Name string
	// Poll is how often the replica checks its listening connection and the log without a
	// notification (default 2s).
	Poll time.Duration
	// Log receives connection losses and recoveries; nil: slog.Default().
	Log *slog.Logger
	// LogKeep is how many of the newest versions library_log keeps: the commit of version v
	// deletes the rows up to v-LogKeep, so the table stops growing. A replica further behind
	// than that finds versions missing and reloads the library from library_tools (store.ErrGap).
	// 0 keeps every version.
	LogKeep int
}

// Channel is the channel a commit notifies, with the version as payload.
const Channel = "toolret_library"

// Advisory lock keys: migrations, and the seeding of an empty library.
const (
	lockMigrate = int64(0x746f6f6c72657401) // "toolret" 1
	lockSeed    = int64(0x746f6f6c72657402)
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one numbered schema change of Store's database.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns Store's schema migrations in version order.
func Migrations() ([]Migration, error) {
	ents, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("pgstore: migration %s: want NNNN_name.sql", e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && out[len(out)-1].Version >= v {
			return nil, fmt.Errorf("pgstore: migration %s: version %d repeats or goes back", e.Name(), v)
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(e.Name(), ".sql"), SQL: string(b)})
	}
	return out, nil
}

// Open connects to the PostgreSQL database at url (postgres://USER:PASSWORD@HOST:PORT/DB
// or "host=... dbname=..."; the libpq variables PGHOST, PGPASSWORD... fill what it leaves
// out), applies the migrations it lacks (in one transaction under an advisory lock, so
// replicas starting together apply each once) and starts listening for other replicas'
// commits.
func Open(ctx context.Context, url string, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: database URL: %w", err)
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.LogKeep < 0 {
		return nil, fmt.Errorf("pgstore: log keep %d: want 0 (every version) or more", o.LogKeep)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "toolret " + o.Name
	}
	lcfg := cfg.ConnConfig.Copy()
	lcfg.RuntimeParams["application_name"] += " listener"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: database: %w", err)
	}
	p := &Store{pool: pool, lcfg: lcfg, name: o.Name, log: o.Log, poll: o.Poll, keep: o.LogKeep, changed: make(chan struct{}, 1), done: make(chan struct{})}
	if p.migrated, err = p.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	p.up.Store(true)
	lctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.listen(lctx)
	return p, nil
}

// Migrated returns the versions of the migrations Open applied (none when the schema
// was up to date).
func (p *Store) Migrated() []int { return p.migrated }

// migrate applies the migrations the database lacks, in one transaction holding an
// advisory lock.
func (p *Store) migrate(ctx context.Context) (applied []int, err error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return nil, p.wrap("migrations", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockMigrate); err != nil {
		return nil, p.wrap("migrations", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, p.wrap("migrations", err)
	}
	rows, err := tx.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, p.wrap("migrations", err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, p.wrap("migrations", err)
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.Version] = true
	}
	for _, v := range have {
		if !known[int(v)] {
			return nil, fmt.Errorf("pgstore: database schema has migration %d, newer than this toolret knows (%d): upgrade toolret", v, ms[len(ms)-1].Version)
		}
	}
	for _, m := range ms {
		if containsInt32(have, m.Version) {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return nil, p.wrap("migration "+m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			return nil, p.wrap("migration "+m.Name, err)
		}
		applied = append(applied, m.Version)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, p.wrap("migrations", err)
	}
	return applied, nil
}

func containsInt32(s []int32, v int) bool {
	for _, x := range s {
		if int(x) == v {
			return true
		}
	}
	return false
}

// Load returns the library at the head version, storing seed first when the database
// holds none (under an advisory lock: one replica seeds).
func (p *Store) Load(ctx context.Context, seed *store.Snapshot) (*store.Snapshot, error) {
	if err := p.Err(); err != nil {
		return nil, err
	}
	if seed != nil {
		if err := p.seed(ctx, seed); err != nil {
			return nil, err
		}
	}
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, p.wrap("load", err)
	}
	defer tx.Rollback(context.Background())
	snap := &store.Snapshot{}
	err = tx.QueryRow(ctx, "SELECT version, model, dim FROM library_head").Scan(&snap.Version, &snap.Model, &snap.Dim)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errors.New("pgstore: the database holds no library yet")
	}
	if err != nil {
		return nil, p.wrap("load", err)
	}
	rows, err := tx.Query(ctx, "SELECT id, record, embedding FROM library_tools ORDER BY version, id")
	if err != nil {
		return nil, p.wrap("load", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var rec, emb []byte
		if err := rows.Scan(&id, &rec, &emb); err != nil {
			return nil, p.wrap("load", err)
		}
		var t export.ToolRecord
		if err := json.Unmarshal(rec, &t); err != nil {
			return nil, fmt.Errorf("pgstore: library_tools %q: record: %w", id, err)
		}
		e, err := decodeEmbeddings(emb, 1, snap.Dim)
		if err != nil {
			return nil, fmt.Errorf("pgstore: library_tools %q: %w", id, err)
		}
		snap.Tools, snap.Emb = append(snap.Tools, t), append(snap.Emb, e[0])
	}
	if err := rows.Err(); err != nil {
		return nil, p.wrap("load", err)
	}
	return snap, p.wrap("load", tx.Commit(ctx))
}

// seed stores seed as the library when the database holds none.
func (p *Store) seed(ctx context.Context, seed *store.Snapshot) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return p.wrap("seed", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockSeed); err != nil {
		return p.wrap("seed", err)
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM library_head").Scan(&n); err != nil {
		return p.wrap("seed", err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, "INSERT INTO library_head (version, model, dim, seeded_by) VALUES ($1, $2, $3, $4)",
		int64(seed.Version), seed.Model, seed.Dim, p.name); err != nil {
		return p.wrap("seed", err)
	}
	rows := make([][]any, len(seed.Tools))
	for i, t := range seed.Tools {
		rec, err := json.Marshal(t)
		if err != nil {
			return err
		}
		rows[i] = []any{t.ID, json.RawMessage(rec), encodeEmbeddings(seed.Emb[i:i+1], seed.Dim), int64(seed.Version)}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"library_tools"}, []string{"id", "record", "embedding", "version"}, pgx.CopyFromRows(rows)); err != nil {
		return p.wrap("seed", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return p.wrap("seed", err)
	}
	p.log.Info("shared library seeded from this replica's index", "version", seed.Version, "tools", len(seed.Tools), "replica", p.name)
	return nil
}

// Since returns the logged updates after version after.
func (p *Store) Since(ctx context.Context, after uint64) ([]*store.Update, error) {
	if err := p.Err(); err != nil {
		return nil, err
	}
	var dim int
	var head uint64
	if err := p.pool.QueryRow(ctx, "SELECT version, dim FROM library_head").Scan(&head, &dim); err != nil {
		return nil, p.wrap("log", err)
	}
	if head <= after {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, "SELECT version, put, embeddings, deleted FROM library_log WHERE version > $1 AND version <= $2 ORDER BY version", int64(after), int64(head))
	if err != nil {
		return nil, p.wrap("log", err)
	}
	defer rows.Close()
	var out []*store.Update
	for rows.Next() {
		var u store.Update
		var put, emb []byte
		if err := rows.Scan(&u.Version, &put, &emb, &u.Delete); err != nil {
			return nil, p.wrap("log", err)
		}
		if err := json.Unmarshal(put, &u.Put); err != nil {
			return nil, fmt.Errorf("pgstore: library_log version %d: put: %w", u.Version, err)
		}
		if u.Emb, err = decodeEmbeddings(emb, len(u.Put), dim); err != nil {
			return nil, fmt.Errorf("pgstore: library_log version %d: %w", u.Version, err)
		}
		if want := after + uint64(len(out)) + 1; u.Version != want {
			return nil, fmt.Errorf("%w: version %d is not in library_log", store.ErrGap, want)
		}
		out = append(out, &u)
	}
	if err := rows.Err(); err != nil {
		return nil, p.wrap("log", err)
	}
	if uint64(len(out)) != head-after {
		return nil, fmt.Errorf("%w: versions %d to %d are not all in library_log", store.ErrGap, after+1, head)
	}
	return out, nil
}

// Commit writes u as the next version: the head moved from u.Version-1, the log row (and,
// with Options.LogKeep, the rows older than the kept versions deleted), the tools, and a
// notification, in one transaction.
func (p *Store) Commit(ctx context.Context, u *store.Update) error {
	if err := p.Err(); err != nil {
		return err
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return p.wrap("commit", err)
	}
	defer tx.Rollback(context.Background())
	tag, err := tx.Exec(ctx, "UPDATE library_head SET version = $1 WHERE version = $2", int64(u.Version), int64(u.Version-1))
	if err != nil {
		return p.wrap("commit", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: version %d: %w", u.Version, store.ErrConflict)
	}
	dim := 0
	if len(u.Emb) > 0 {
		dim = len(u.Emb[0])
	}
	put, err := json.Marshal(u.Put)
	if err != nil {
		return err
	}
	del := u.Delete
	if del == nil {
		del = []string{}
	}
	if _, err := tx.Exec(ctx, "INSERT INTO library_log (version, put, embeddings, deleted, committed_by) VALUES ($1, $2, $3, $4, $5)",
		int64(u.Version), json.RawMessage(put), encodeEmbeddings(u.Emb, dim), del, p.name); err != nil {
		return p.wrap("commit", err)
	}
	if p.keep > 0 && u.Version > uint64(p.keep) {
		if _, err := tx.Exec(ctx, "DELETE FROM library_log WHERE version <= $1", int64(u.Version)-int64(p.keep)); err != nil {
			return p.wrap("commit", err)
		}
	}
	if len(u.Delete) > 0 {
		if _, err := tx.Exec(ctx, "DELETE FROM library_tools WHERE id = ANY($1)", u.Delete); err != nil {
			return p.wrap("commit", err)
		}
	}
	if len(u.Put) > 0 {
		ids, recs, embs := make([]string, len(u.Put)), make([]string, len(u.Put)), make([][]byte, len(u.Put))
		for i, t := range u.Put {
			b, err := json.Marshal(t)
			if err != nil {
				return err
			}
			ids[i], recs[i], embs[i] = t.ID, string(b), encodeEmbeddings(u.Emb[i:i+1], dim)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO library_tools (id, record, embedding, version)
			SELECT i, r::jsonb, e, $4 FROM unnest($1::text[], $2::text[], $3::bytea[]) AS t(i, r, e)
			ON CONFLICT (id) DO UPDATE SET record = excluded.record, embedding = excluded.embedding, version = excluded.version`,
			ids, recs, embs, int64(u.Version)); err != nil {
			return p.wrap("commit", err)
		}
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, strconv.FormatUint(u.Version, 10)); err != nil {
		return p.wrap("commit", err)
	}
	return p.wrap("commit", tx.Commit(ctx))
}

// AppendUsage inserts a usage record (its JSON) of kind at time at into usage_log.
func (p *Store) AppendUsage(ctx context.Context, at time.Time, kind string, record []byte) error {
	if err := p.Err(); err != nil {
		return err
	}
	_, err := p.pool.Exec(ctx, "INSERT INTO usage_log (at, kind, record, replica) VALUES ($1, $2, $3, $4)", at, kind, json.RawMessage(record), p.name)
	return p.wrap("usage", err)
}

// Pool returns the connection pool (for reading the tables; closed by Close).
func (p *Store) Pool() *pgxpool.Pool { return p.pool }

// Changed is signalled after a notification, a reconnection and every poll interval.
func (p *Store) Changed() <-chan struct{} { return p.changed }

// Err is nil while the database is reachable, else a store.ErrUnavailable saying why not.
func (p *Store) Err() error {
	if p.up.Load() {
		return nil
	}
	if e := p.lastErr.Load(); e != nil {
		return fmt.Errorf("%w: %v (reconnecting)", store.ErrUnavailable, *e)
	}
	return fmt.Errorf("%w (reconnecting)", store.ErrUnavailable)
}

// Close stops listening and closes the connections.
func (p *Store) Close() error {
	p.closeMu.Do(func() {
		if p.cancel != nil {
			p.cancel()
			<-p.done
		}
		p.pool.Close()
	})
	return nil
}

func (p *Store) signal() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// down records that the database cannot be reached.
func (p *Store) down(err error) {
	p.lastErr.Store(&err)
	if p.up.Swap(false) {
		p.log.Warn("PostgreSQL unreachable: tool updates fail with 503 until it is back; queries are answered from the library served", "error", err.Error(), "replica", p.name)
	}
}

// listen holds a connection LISTENing to Channel, signalling Changed on each
// notification, after each (re)connection and every poll interval; a lost connection is
// retried with backoff (100 ms doubling to 2 s), the store unavailable meanwhile.
func (p *Store) listen(ctx context.Context) {
	defer close(p.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, p.lcfg)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+Channel); err != nil {
				conn.Close(context.Background())
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.down(err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if !p.up.Swap(true) {
			p.log.Info("PostgreSQL reachable again: catching up from the log", "replica", p.name)
		}
		p.signal()
		err = p.wait(ctx, conn)
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		p.down(err)
	}
}

// wait signals Changed on each notification on conn until conn fails.
func (p *Store) wait(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, p.poll)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		if err == nil {
			p.signal()
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, p.poll)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return err
		}
		p.signal() // a periodic check of the log: nothing is missed for long even without notifications
	}
}

// wrap names what failed; errors of reaching the database become store.ErrUnavailable,
// PostgreSQL's own errors stay as they are. (The listener, not a failed query, marks the
// store down and up again.)
func (p *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !unreachableCode(pgErr.Code) {
		return fmt.Errorf("pgstore: PostgreSQL %s: %w", what, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: PostgreSQL %s timed out: %v", store.ErrUnavailable, what, err)
	}
	return fmt.Errorf("%w: PostgreSQL %s: %v", store.ErrUnavailable, what, err)
}

// unreachableCode reports whether a PostgreSQL error code says the server cannot serve:
// connection exceptions (08), operator intervention (57P: shutdown, starting up),
// insufficient resources (53) and system errors (58).
func unreachableCode(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P") || strings.HasPrefix(code, "53") || strings.HasPrefix(code, "58")
}

// encodeEmbeddings concatenates emb (rows of dim) as little-endian float32.
func encodeEmbeddings(emb [][]float32, dim int) []byte {
	b := make([]byte, 0, 4*dim*len(emb))
	for _, e := range emb {
		for _, v := range e {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}

// decodeEmbeddings splits b into n rows of dim little-endian float32.
func decodeEmbeddings(b []byte, n, dim int) ([][]float32, error) {
	if len(b) != 4*n*dim {
		return nil, fmt.Errorf("%d embedding bytes for %d tools of %d dimensions", len(b), n, dim)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, dim)
		for j := range out[i] {
			out[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*(i*dim+j):]))
		}
	}
	return out, nil
}

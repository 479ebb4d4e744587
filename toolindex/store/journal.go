package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/toolindex"
)

// Journal is the source of truth of a tool library that several servers (replicas) serve:
// the current tools with their embeddings and the numbered log of the updates that made
// them. A Store opened with OpenShared commits each update to its Journal before it
// acknowledges it, and applies the updates other servers commit, by version: on each
// Changed signal it reads the log after the version it serves (Since), so a server that
// missed signals (a late start, a lost connection) catches up all the same. pgstore.Store
// is the PostgreSQL implementation; a Store opened with Open keeps its library in the
// index directory instead (updates.log), for one server.
type Journal interface {
	// Load returns the library at the journal's head version. A journal that holds no
	// library yet stores seed as its first version and returns it.
	Load(ctx context.Context, seed *Snapshot) (*Snapshot, error)
	// Since returns the updates after version after, in version order; ErrGap when the log
	// no longer holds them all (the Store then reloads the library).
	Since(ctx context.Context, after uint64) ([]*Update, error)
	// Commit makes u the journal's next version, durably when it returns nil. It fails with
	// ErrConflict when the head is no longer u.Version-1 (another server committed first),
	// with ErrUnavailable when the journal cannot be reached.
	Commit(ctx context.Context, u *Update) error
	// Changed is signalled when other servers may have committed updates: a notification,
	// a reconnection after updates may have been missed, or a periodic check.
	Changed() <-chan struct{}
	// Err is nil while the journal is reachable, else why not (an ErrUnavailable).
	Err() error
	// Close ends the journal's connections.
	Close() error
}

// Update is one version of a shared library: the tools put (with their embeddings) and the
// ids deleted.
type Update struct {
	Version uint64
	Put     []export.ToolRecord
	Emb     [][]float32
	Delete  []string
}

// Snapshot is a shared library at one version, with the model its tools were embedded by
// (ModelFingerprint) and their dimension.
type Snapshot struct {
	Version uint64
	Model   string
	Dim     int
	Tools   []export.ToolRecord
	Emb     [][]float32
}

// Journal errors.
var (
	// ErrUnavailable is a journal that cannot be reached: tool updates fail (HTTP 503)
	// until it is back, queries are answered from the library served meanwhile.
	ErrUnavailable = fmt.Errorf("%w: the shared library store is unreachable", ErrFailed)
	// ErrConflict is a commit that another server's commit of the same version preceded.
	ErrConflict = errors.New("library version already committed by another server")
	// ErrGap is a log that no longer holds every update after a version.
	ErrGap = errors.New("updates missing from the log")
)

// sharedTimeout bounds one round trip of an update or a catch-up with the journal.
const sharedTimeout = 5 * time.Second

// commitPatience bounds how long an update is retried while other servers' commits keep
// preceding it (each lost race catches up and tries again after a short random pause, so
// that servers committing in step drift apart); past it the update fails with ErrBusy.
const commitPatience = 30 * time.Second

// ErrBusy is an update that other servers' commits kept preceding for commitPatience:
// nothing was committed, and the client may retry.
var ErrBusy = errors.New("the shared library is being updated by other servers faster than this one could commit: nothing was changed, retry")

// shared is the state of a Store over a Journal.
type shared struct {
	j        Journal
	patience time.Duration // commitPatience; shorter in tests
	stop     chan struct{}
	done     chan struct{}
	applied  atomic.Int64 // updates of other servers applied
	onSync   atomic.Pointer[func()]
	lastErr  atomic.Pointer[error]
	once     sync.Once
}

// ModelFingerprint identifies the model that embedded r's tools: a hash of its index's
// manifest files other than the library's own (the tower weights and configurations),
// its kind, similarity, tool prompt and dimension. Servers sharing a Journal must have the
// same.
func ModelFingerprint(r *toolindex.Index) string {
	man := r.Manifest()
	h := sha256.New()
	fmt.Fprintf(h, "kind %s\nsimilarity %s\ntool_prompt %q\ndim %d\n", man.Kind, man.Similarity, man.ToolPrompt, r.Dim())
	for _, name := range slices.Sorted(maps.Keys(man.Files)) {
		if slices.Contains(compactedFiles, name) || name == readyFile || filepath.Base(name) == LogFile {
			continue
		}
		fmt.Fprintf(h, "%s %s\n", name, man.Files[name])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// OpenShared opens the index directory dir (read only: its model and, for a journal that
// holds no library yet, the first version of the library, updates.log included) to serve
// the library of j. Updates are committed to j; the updates other servers commit to j are
// applied as they come. Close closes j.
func OpenShared(dir string, j Journal, opts ...toolindex.Option) (*Store, error) {
	if _, err := export.ReadManifest(dir); err != nil {
		return nil, fmt.Errorf("store: index %s: %w", dir, err)
	}
	r, lib, base, err := loadBase(dir, opts...)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, LogFile)
	recs, _, err := readLog(p, r.Dim())
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		if rec.Seq <= base {
			continue
		}
		if rec.Seq != lib.Version+1 {
			return nil, fmt.Errorf("store: %s: record of version %d follows version %d (records missing)", p, rec.Seq, lib.Version)
		}
		put, emb := rec.tools()
		if lib, err = lib.With(rec.Seq, put, emb, rec.Delete); err != nil {
			return nil, fmt.Errorf("store: %s: version %d: %w", p, rec.Seq, err)
		}
	}
	seed := &Snapshot{Version: lib.Version, Model: ModelFingerprint(r), Dim: r.Dim(), Tools: make([]export.ToolRecord, lib.Len()), Emb: make([][]float32, lib.Len())}
	for i := range seed.Tools {
		seed.Tools[i], seed.Emb[i] = lib.Tool(i), lib.Embedding(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*sharedTimeout)
	defer cancel()
	snap, err := j.Load(ctx, seed)
	if err != nil {
		return nil, fmt.Errorf("store: loading the shared library: %w", err)
	}
	if snap.Dim != seed.Dim || snap.Model != seed.Model {
		return nil, fmt.Errorf("store: the shared library was embedded by another model (fingerprint %s, %d dimensions) than index %s's (%s, %d): every server sharing it must serve the same model", snap.Model, snap.Dim, dir, seed.Model, seed.Dim)
	}
	if lib, err = fromSnapshot(lib, snap); err != nil {
		return nil, fmt.Errorf("store: loading the shared library: %w", err)
	}
	if err := r.SetLibrary(lib); err != nil {
		return nil, err
	}
	sh := &shared{j: j, patience: commitPatience, stop: make(chan struct{}), done: make(chan struct{})}
	s := &Store{R: r, dir: dir, shared: sh}
	go s.follow()
	return s, nil
}

// fromSnapshot returns lib made to hold exactly snap's tools at snap's version: tools whose
// record differs or that lib lacks are put with snap's embeddings, tools snap lacks are
// deleted; the others keep their rows (and usage vectors, or MLC bias).
func fromSnapshot(lib *toolindex.Library, snap *Snapshot) (*toolindex.Library, error) {
	want := make(map[string]bool, len(snap.Tools))
	var put []export.ToolRecord
	var emb [][]float32
	for i, t := range snap.Tools {
		want[t.ID] = true
		if j, ok := lib.Lookup(t.ID); ok && lib.Tool(j) == t {
			continue
		}
		put, emb = append(put, t), append(emb, snap.Emb[i])
	}
	var del []string
	for i := 0; i < lib.Len(); i++ {
		if id := lib.Tool(i).ID; !want[id] {
			del = append(del, id)
		}
	}
	return lib.With(snap.Version, put, emb, del)
}

// follow applies the updates other servers commit, on each signal of the journal, until
// Close.
func (s *Store) follow() {
	sh := s.shared
	defer close(sh.done)
	for {
		select {
		case <-sh.stop:
			return
		case <-sh.j.Changed():
		}
		s.mu.Lock()
		err := s.catchUpLocked()
		s.mu.Unlock()
		if err != nil {
			sh.lastErr.Store(&err) // retried at the next signal (the journal's reconnection or periodic check)
			continue
		}
		if f := sh.onSync.Load(); f != nil {
			(*f)()
		}
	}
}

// OnSync sets f to be called (on the goroutine that follows the journal) after each
// signal of the journal once the library has caught up with it: the tool gateway
// reloads its shared definitions there. No-op for a Store of files.
func (s *Store) OnSync(f func()) {
	if s.shared != nil {
		s.shared.onSync.Store(&f)
	}
}

// catchUp applies the updates committed to the journal after the version served.
func (s *Store) catchUp() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catchUpLocked()
}

// catchUpLocked applies the updates after the version served, merged into one new library;
// a gap in the log reloads the library. s.mu is held.
func (s *Store) catchUpLocked() error {
	sh := s.shared
	if s.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	cur := s.R.Library()
	ups, err := sh.j.Since(ctx, cur.Version)
	if errors.Is(err, ErrGap) {
		return s.reloadLocked(ctx)
	}
	if err != nil {
		return err
	}
	if len(ups) == 0 {
		return nil
	}
	next, err := applyUpdates(cur, ups)
	if errors.Is(err, ErrGap) {
		return s.reloadLocked(ctx)
	}
	if err != nil {
		return err
	}
	if err := s.R.SetLibrary(next); err != nil {
		return err
	}
	sh.applied.Add(int64(len(ups)))
	return nil
}

// reloadLocked replaces the library with the journal's (Load). s.mu is held.
func (s *Store) reloadLocked(ctx context.Context) error {
	snap, err := s.shared.j.Load(ctx, nil)
	if err != nil {
		return err
	}
	lib, err := fromSnapshot(s.R.Library(), snap)
	if err != nil {
		return err
	}
	return s.R.SetLibrary(lib)
}

// applyUpdates returns cur with ups (versions cur.Version+1, +2, ...) applied, as one new
// library: the last put or delete of each id wins.
func applyUpdates(cur *toolindex.Library, ups []*Update) (*toolindex.Library, error) {
	type change struct {
		rec export.ToolRecord
		emb []float32
		del bool
	}
	changes := map[string]*change{}
	var order []string
	v := cur.Version
	for _, u := range ups {
		if u.Version != v+1 {
			return nil, fmt.Errorf("%w: version %d follows version %d", ErrGap, u.Version, v)
		}
		v = u.Version
		set := func(id string, c *change) {
			if _, ok := changes[id]; !ok {
				order = append(order, id)
			}
			changes[id] = c
		}
		for _, id := range u.Delete {
			set(id, &change{del: true})
		}
		for i, t := range u.Put {
			set(t.ID, &change{rec: t, emb: u.Emb[i]})
		}
	}
	var put []export.ToolRecord
	var emb [][]float32
	var del []string
	for _, id := range order {
		switch c := changes[id]; {
		case c.del:
			del = append(del, id)
		default:
			put, emb = append(put, c.rec), append(emb, c.emb)
		}
	}
	return cur.With(v, put, emb, del)
}

// sharedUpdate is Update on a shared library: the next version is committed to the
// journal, then served; when another server committed that version first, its updates are
// applied and the update is tried again on top of them. s.mu is held.
func (s *Store) sharedUpdate(put []export.ToolRecord, emb [][]float32, del []string) (next, prev *toolindex.Library, err error) {
	sh := s.shared
	if err := s.sharedErr(); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		cur := s.R.Library()
		if next, err = nextLibrary(cur, put, emb, del); err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		err = sh.j.Commit(ctx, &Update{Version: next.Version, Put: put, Emb: emb, Delete: del})
		cancel()
		if errors.Is(err, ErrConflict) {
			if waited := time.Since(start); waited >= sh.patience {
				return nil, nil, fmt.Errorf("store: %d commits of other servers preceded this update's in %v: %w", attempt, waited.Round(time.Millisecond), ErrBusy)
			}
			// Up to 1, 2, 4 ... 64 ms, at random: servers that lost the same race do not
			// all come back at once.
			time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6))))
			if err := s.catchUpLocked(); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if err := s.R.SetLibrary(next); err != nil {
			// Committed: the library is the journal's; the next catch-up cannot apply it
			// either, so updates stop here.
			s.failed = err
			return nil, nil, err
		}
		s.updates.Add(int64(len(put) + len(del)))
		return next, cur, nil
	}
}

// sharedErr is why the journal cannot take an update now (nil: it can, or the store is
// not shared).
func (s *Store) sharedErr() error {
	if s.shared == nil {
		return nil
	}
	if err := s.shared.j.Err(); err != nil {
		return fmt.Errorf("%w (serving version %d meanwhile)", err, s.R.Library().Version)
	}
	return nil
}

// closeShared stops following the journal and closes it.
func (s *Store) closeShared() error {
	sh := s.shared
	var err error
	sh.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(sh.stop)
		<-sh.done
		err = sh.j.Close()
	})
	return err
}

// Shared reports whether the library is shared through a Journal (OpenShared).
func (s *Store) Shared() bool { return s.shared != nil }

// StoreErr is nil while the store can take updates; else why not: a shared library's
// journal unreachable, or a file store's failed write (nil while an update is under way).
func (s *Store) StoreErr() error {
	if s.shared != nil {
		return s.shared.j.Err()
	}
	if !s.mu.TryLock() {
		return nil
	}
	defer s.mu.Unlock()
	return s.usable()
}

// Applied is the number of other servers' updates applied (a shared library).
func (s *Store) Applied() int64 {
	if s.shared == nil {
		return 0
	}
	return s.shared.applied.Load()
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/toolret/toolret/library"
)

// A library change reaches the served library (searches, calls, GET /v1/tools), the live
// index (through the store's fsynced update log, embedding only new and changed tools) and,
// with a LibraryDB, every replica, from each of these paths:
//
//   - the library file rewritten (toolret import -out FILE, an editor): WatchLibrary;
//   - an MCP upstream's notifications/tools/list_changed, or its restart: Refresh;
//   - the admin API, POST /v1/tools and DELETE /v1/tools/{id}: Put and Delete.
//
// Each goes through apply, one change at a time (libMu).

// errEmptyLibrary refuses a change that would leave no tool.
var errEmptyLibrary = errors.New("the library would become empty")

// Update is what a library change did: the tools added, changed and removed, and the
// library version (the index's) it made.
type Update struct {
	library.Changes
	// Version is the index's library version after the change; Embedded counts the tools
	// embedded for it (new tools and tools whose retrieval text changed).
	Version  uint64
	Embedded int
}

// apply makes next the served library, with g.libMu held: next is checked, stored in the
// LibraryDB (replicas follow), written to the library file when write (atomically), synced
// into the index (one logged update), then published. Nothing happens when next has the
// same tools and template as the served library.
func (g *Gateway) apply(next *library.Library, write bool, cause string) (Update, error) {
	start := time.Now()
	old := g.Library()
	u := Update{Changes: library.Diff(old, next)}
	if u.Empty() && next.Template == old.Template {
		u.Version = g.store.R.Library().Version
		return u, nil
	}
	if len(next.Tools) == 0 {
		return u, fmt.Errorf("%w (%s): a served library keeps at least one tool", errEmptyLibrary, u.Changes)
	}
	if err := next.Check(); err != nil {
		return u, invalidError{err}
	}
	if err := g.shareLibrary(next); err != nil {
		return u, fmt.Errorf("storing the library in the database: %w", err)
	}
	if write && g.opts.LibraryPath != "" {
		if err := library.Write(g.opts.LibraryPath, next); err != nil {
			return u, err
		}
	}
	added, changed, _, err := g.syncStoreCount(next)
	if err != nil {
		return u, fmt.Errorf("updating the index: %w", err)
	}
	g.lib.Store(newState(next))
	u.Version, u.Embedded = g.store.R.Library().Version, added+changed
	g.log.Info("library updated", "cause", cause, "changes", u.Changes.String(), "embedded", u.Embedded,
		"library_version", u.Version, "ms", time.Since(start).Milliseconds())
	return u, nil
}

// Reload reads the library file again and serves what it holds now: its tools added,
// changed and removed reach searches, calls, the index and the replicas (apply). A file that
// does not read (missing, or not a valid library) changes nothing: the error says why.
func (g *Gateway) Reload() (Update, error) {
	if g.opts.LibraryPath == "" {
		return Update{}, errors.New("the gateway has no library file")
	}
	// Read under the lock: a change that writes the file (list_changed, the admin API, a
	// replica's) is then either all before the read or all after it, never reverted.
	g.libMu.Lock()
	defer g.libMu.Unlock()
	next, err := library.Read(g.opts.LibraryPath)
	if err != nil {
		return Update{}, err
	}
	return g.apply(next, false, "library file changed")
}

// watchDelay is how long the library file must be left alone before it is read again: a
// writer that writes in place (not by renaming a complete file over it) is done by then.
const watchDelay = 150 * time.Millisecond

// WatchLibrary reloads the library file (Reload) whenever it changes, until ctx ends or the
// gateway closes. It watches the file's directory, so that a file replaced by renaming
// another over it (toolret import's atomic write) is seen like one written in place, and
// reads the file once when the watch is set up (a change made since the server read it).
// A file that does not read is logged and the library served is kept.
func (g *Gateway) WatchLibrary(ctx context.Context) error {
	if g.opts.LibraryPath == "" {
		return errors.New("the gateway has no library file")
	}
	path, err := filepath.Abs(g.opts.LibraryPath)
	if err != nil {
		return fmt.Errorf("watching the library file: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the library file %s: %w", path, err)
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		w.Close()
		return fmt.Errorf("watching the library file %s: %w", path, err)
	}
	g.wg.Go(func() {
		defer w.Close()
		g.watch(ctx, w, path)
	})
	return nil
}

func (g *Gateway) watch(ctx context.Context, w *fsnotify.Watcher, path string) {
	reload := func() {
		u, err := g.Reload()
		switch {
		case errors.Is(err, os.ErrNotExist):
			g.log.Warn("the library file is gone; serving the library read last", "library", path)
		case err != nil:
			g.log.Warn("the library file changed but does not read; serving the library read last", "library", path, "error", err.Error())
		case !u.Empty():
			g.log.Info("library file re-read", "library", path, "changes", u.Changes.String(), "library_version", u.Version)
		}
	}
	reload()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.stop:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == path && !ev.Has(fsnotify.Chmod) {
				timer.Reset(watchDelay)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflowed event queue may have lost the file's event: read it anyway.
			g.log.Warn("watching the library file", "library", path, "error", err.Error())
			timer.Reset(watchDelay)
		case <-timer.C:
			reload()
		}
	}
}

package gateway

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/toolret/toolret/library"
)

// LibraryDB is a database that keeps the gateway's library (every tool's definition) for
// replicas that share it (pgstore.Store: the table gateway_library). With one, the library
// the database holds is served (the -library file only seeds an empty database, and
// follows it), a re-import stores the new library there before syncing the index, and
// every replica reloads it when it changes.
type LibraryDB interface {
	// LibrarySum returns the sha256 of the library stored ("" : none).
	LibrarySum(ctx context.Context) (string, error)
	// LoadLibrary returns the library stored (JSON Lines, library.Encode) and its sha256.
	LoadLibrary(ctx context.Context) (body []byte, sum string, err error)
	// StoreLibrary stores body (with ifNone: only when none is stored) and returns its
	// sha256; the other replicas are told.
	StoreLibrary(ctx context.Context, body []byte, ifNone bool) (string, error)
}

// sharedLibrary is the gateway's library in a LibraryDB.
type sharedLibrary struct {
	db  LibraryDB
	sum atomic.Pointer[string] // of the library served
}

// libraryTimeout bounds a round trip with the LibraryDB.
const libraryTimeout = 10 * time.Second

// openShared returns the library db holds, storing l there first when it holds none; a
// library different from l is also written to the library file.
func (g *Gateway) openShared(db LibraryDB, l *library.Library) (*library.Library, error) {
	g.shared = &sharedLibrary{db: db}
	var b bytes.Buffer
	if err := library.Encode(&b, l); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), libraryTimeout)
	defer cancel()
	sum, err := db.StoreLibrary(ctx, b.Bytes(), true)
	if err != nil {
		return nil, fmt.Errorf("gateway: shared library: %w", err)
	}
	body, stored, err := db.LoadLibrary(ctx)
	if err != nil {
		return nil, fmt.Errorf("gateway: shared library: %w", err)
	}
	g.shared.sum.Store(&stored)
	if stored == sum {
		return l, nil
	}
	return g.useShared(body, stored)
}

// useShared decodes body, the shared library, and writes it to the library file.
func (g *Gateway) useShared(body []byte, sum string) (*library.Library, error) {
	l, err := library.Decode(bytes.NewReader(body), "shared library (database)")
	if err != nil {
		return nil, err
	}
	if g.opts.LibraryPath != "" {
		if err := library.Write(g.opts.LibraryPath, l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// followShared reloads the shared library when another replica stored a new one (called
// after each catch-up of the store: store.Store.OnSync).
func (g *Gateway) followShared() {
	ctx, cancel := context.WithTimeout(context.Background(), libraryTimeout)
	defer cancel()
	sh := g.shared
	sum, err := sh.db.LibrarySum(ctx)
	if err != nil || sum == "" || sum == *sh.sum.Load() {
		return
	}
	g.libMu.Lock()
	defer g.libMu.Unlock()
	body, sum, err := sh.db.LoadLibrary(ctx)
	if err == nil && sum != *sh.sum.Load() {
		var l *library.Library
		if l, err = g.useShared(body, sum); err == nil {
			sh.sum.Store(&sum)
			g.lib.Store(newState(l))
			g.log.Info("library reloaded from the database (another replica changed it)", "tools", len(l.Tools))
		}
	}
	if err != nil {
		g.log.Warn("reloading the shared library failed; retried at the next change", "error", err.Error())
	}
}

// shareLibrary stores l as the shared library (a re-import, before the index is synced).
func (g *Gateway) shareLibrary(l *library.Library) error {
	if g.shared == nil {
		return nil
	}
	var b bytes.Buffer
	if err := library.Encode(&b, l); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), libraryTimeout)
	defer cancel()
	sum, err := g.shared.db.StoreLibrary(ctx, b.Bytes(), false)
	if err != nil {
		return err
	}
	g.shared.sum.Store(&sum)
	return nil
}

package gateway

import (
	"context"
	"fmt"
	"sync"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
)

// refreshing coalesces re-imports: one at a time per server, and one more after it when
// notifications arrived meanwhile.
type refreshing struct {
	mu      sync.Mutex
	running map[string]bool
	again   map[string]bool
}

// refreshAsync re-imports server's tools in the background (Refresh), why naming the cause.
func (g *Gateway) refreshAsync(server, why string) {
	if g.closed.Load() {
		return
	}
	r := &g.refresh
	r.mu.Lock()
	if r.running == nil {
		r.running, r.again = map[string]bool{}, map[string]bool{}
	}
	if r.running[server] {
		r.again[server] = true
		r.mu.Unlock()
		return
	}
	r.running[server] = true
	r.mu.Unlock()
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			ch, err := g.Refresh(ctx, server)
			cancel()
			if err != nil {
				g.log.Warn("re-importing an upstream's tools failed; the library keeps its tools", "server", server, "cause", why, "error", g.up.Redact(err.Error()))
			} else {
				g.log.Info("re-imported an upstream's tools", "server", server, "cause", why, "changes", ch.String())
			}
			r.mu.Lock()
			if !r.again[server] || g.closed.Load() {
				r.running[server] = false
				r.mu.Unlock()
				return
			}
			r.again[server] = false
			r.mu.Unlock()
		}
	}()
}

// Refresh re-imports the tools of MCP upstream server (tools/list over its live session)
// and merges them into the library (library.Merge: that server's tools added, changed and
// removed, others kept): the library file is rewritten (atomically), then the live index
// is synced through the store's update log (only new and changed tools are embedded), then
// searches and calls see the new library.
func (g *Gateway) Refresh(ctx context.Context, server string) (library.Changes, error) {
	u, ok := g.mcp[server]
	if !ok {
		return library.Changes{}, fmt.Errorf("MCP server %q is not an upstream of the gateway", server)
	}
	cs, err := u.session(ctx)
	if err != nil {
		return library.Changes{}, err
	}
	s, err := g.up.mcpServer(server)
	if err != nil {
		return library.Changes{}, err
	}
	transport, _ := s.Transport()
	g.libMu.Lock()
	defer g.libMu.Unlock()
	old := g.Library()
	ns := importer.Namespace(server)
	group := library.GroupOf(library.KindMCP, ns)
	origin := g.upPath()
	for _, t := range old.Tools {
		if t.Group() == group && t.Source.Origin != "" {
			origin = t.Source.Origin
			break
		}
	}
	tools, _, err := importer.SessionTools(ctx, cs, server, transport, origin)
	if err != nil {
		return library.Changes{}, err
	}
	next := library.Merge(old, &library.Library{Tools: tools}, group)
	res, err := g.apply(next, true, "MCP server "+server+" listed its tools again")
	return res.Changes, err
}

// syncStoreCount makes the live index hold exactly l's tools (store.Store.Sync) and returns
// how many it added, changed and deleted.
func (g *Gateway) syncStoreCount(l *library.Library) (added, changed, deleted int, err error) {
	d, err := data.FromLibrary("library", l)
	if err != nil {
		return 0, 0, 0, err
	}
	return g.store.Sync(export.ToolRecords(d), d.Fingerprint(), g.opts.LibraryPath)
}

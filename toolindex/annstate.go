package toolindex

import (
	"context"
	"fmt"
	"sync"

	"github.com/toolret/toolret/rank"
)

// WithANN sets how the dense first stage searches the library: exactly (ANNOff, every tool
// scored), with an HNSW graph (ANNOn), or by library size (ANNAuto, the default: HNSW from
// c.Threshold tools, DefaultANNThreshold unless set). Zero fields of c take
// DefaultANNConfig's values.
//
// The graph is built in the background when the index loads (and when an auto library grows
// past the threshold): until it is ready queries are answered exactly (WaitANN waits for it).
// Each library version set (SetLibrary) is synced into the graph before it is published:
// added and changed tools are inserted, deleted and changed tools' old nodes become stale
// (never returned: a query keeps the nodes that are its library version's vectors), and when
// stale nodes pass c.Rebuild of the graph it is rebuilt in the background while the old one
// serves. Results come from one library version, as with exact search; their scores are the
// exact scores; which tools are found is approximate (docs/large-libraries.md measures the
// recall).
//
// HNSW serves the dense first stage alone or before a reranker. Hybrid retrieval (which
// scores every tool on both sides), a refiner (trained over the exact first stage's
// candidates) and an MLC index (a per-tool bias besides the dot product) search exactly:
// ANNOn with one of them is an error, ANNAuto searches exactly.
func WithANN(c ANNConfig) Option { return func(o *options) { o.ann = &c } }

// annState is an Index's HNSW index across library versions.
type annState struct {
	cfg      ANNConfig
	mu       sync.Mutex // serialises syncs, builds' start and hand-over
	x        *ANNIndex  // the index SetLibrary syncs; nil until the first build ends
	latest   *Library   // the newest library set
	building bool
	done     chan struct{} // closed when the build under way ends
	builds   int
	err      error // the last build's or sync's error (the index then searches exactly)
}

// newANN returns the ANN state of Load's options, or nil when the retriever searches exactly.
func newANN(o options, r *Index) (*annState, error) {
	c := DefaultANNConfig()
	if o.ann != nil {
		var err error
		if c, err = o.ann.withDefaults(); err != nil {
			return nil, fmt.Errorf("retriever: WithANN: %w", err)
		}
	}
	why := ""
	switch {
	case r.hyb != nil:
		why = "hybrid retrieval scores every tool"
	case r.ref != nil:
		why = fmt.Sprintf("refiner %s was trained over the exact first stage's candidates", r.ref.dir)
	case r.mlc != nil:
		why = "an MLC index scores a per-tool bias besides the dot product"
	}
	r.annMode = c.Mode
	switch {
	case c.Mode == ANNOff:
		return nil, nil
	case why != "" && c.Mode == ANNOn:
		return nil, fmt.Errorf("retriever: WithANN(%s): %s; search exactly (ANN off)", c.Mode, why)
	case why != "":
		return nil, nil
	}
	return &annState{cfg: c}, nil
}

// set syncs l into the index (starting a build when none is there and l is large enough, a
// rebuild when the index is too stale) before l is published.
func (a *annState) set(l *Library) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.latest = l
	if a.x != nil {
		if err := a.x.Sync(l); err != nil {
			a.err, a.x = err, nil // exact search from now on: a sync failed half-way
			return
		}
		if float64(a.x.Stale()) > a.cfg.Rebuild*float64(a.x.Len()) && !a.building {
			a.build(l)
		}
		return
	}
	if !a.building && a.cfg.uses(l.Len()) && l.Len() > 0 {
		a.build(l)
	}
}

// build builds the graph of snap in the background; a.mu is held.
func (a *annState) build(snap *Library) {
	a.building, a.done = true, make(chan struct{})
	go func() {
		x, err := BuildANN(snap, a.cfg)
		a.mu.Lock()
		defer a.mu.Unlock()
		if err == nil && a.latest != snap {
			err = x.Sync(a.latest) // the versions set while it was built
		}
		if err != nil {
			a.err = err
		} else {
			a.x, a.err = x, nil
			a.builds++
		}
		a.building = false
		close(a.done)
	}()
}

// ANNStats describes an Index's HNSW index.
type ANNStats struct {
	// Mode is the configured mode; Active whether the dense first stage can use HNSW at all
	// (false with ANNOff, and with ANNAuto for hybrid, refined or MLC retrieval).
	Mode   string
	Active bool
	// Ready: a graph is built and queries on the libraries synced into it use it; Building:
	// a build or rebuild is under way; Builds counts the builds finished.
	Ready, Building bool
	Builds          int
	// Nodes in the graph, Stale of them no tool's vector in the newest library.
	Nodes, Stale int
	// Err is the last build's or sync's failure ("" for none); queries then search exactly.
	Err string
	// SearchFailures counts the graph searches that failed (a panic in the graph library,
	// recovered); each of those queries was answered by exact search. LastSearchFailure is
	// the last one's message.
	SearchFailures    int64
	LastSearchFailure string
}

// ANN describes the retriever's HNSW index.
func (r *Index) ANN() ANNStats {
	a := r.ann
	if a == nil {
		return ANNStats{Mode: r.annMode}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := ANNStats{Mode: a.cfg.Mode, Active: true, Ready: a.x != nil, Building: a.building, Builds: a.builds}
	if a.x != nil {
		s.Nodes, s.Stale = a.x.Len(), a.x.Stale()
		s.SearchFailures = a.x.failures.Load()
		if m, ok := a.x.lastFailure.Load().(string); ok {
			s.LastSearchFailure = m
		}
	}
	if a.err != nil {
		s.Err = a.err.Error()
	}
	return s
}

// WaitANN waits until no HNSW build is under way (at once without one) and returns the
// last build's or sync's error.
func (r *Index) WaitANN(ctx context.Context) error {
	a := r.ann
	if a == nil {
		return nil
	}
	for {
		a.mu.Lock()
		building, done, err := a.building, a.done, a.err
		a.mu.Unlock()
		if !building {
			return err
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// annTop returns lib's top m tools for the query vector q from its HNSW index; ok is false
// when the retriever or lib has none (or the graph cannot answer): search exactly.
func (r *Index) annTop(lib *Library, q []float32, m int) (top rank.Ranking, ok bool) {
	if r.ann == nil {
		return top, false
	}
	x := lib.ann.Load()
	if x == nil {
		return top, false
	}
	return x.Search(lib, q, m)
}

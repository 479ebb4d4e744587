package toolindex

import (
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolret/toolret/internal/hnsw"
	"github.com/toolret/toolret/rank"
	"github.com/viterin/vek/vek32"
)

// ANN modes (ANNConfig.Mode; serve -ann).
const (
	// ANNAuto searches libraries of at least ANNConfig.Threshold tools with HNSW, smaller
	// ones exactly.
	ANNAuto = "auto"
	// ANNOn searches every library with HNSW.
	ANNOn = "on"
	// ANNOff searches exactly: every tool is scored.
	ANNOff = "off"
)

// DefaultANNThreshold is the library size from which ANNAuto searches with HNSW: below it
// exact search answers a query in a few milliseconds on two cores with every tool found
// (docs/large-libraries.md has the measurements behind it).
const DefaultANNThreshold = 50000

// ANNConfig configures the approximate (HNSW) index of WithANN. Zero fields take
// DefaultANNConfig's values.
type ANNConfig struct {
	// Mode is ANNAuto, ANNOn or ANNOff.
	Mode string
	// Threshold is the number of tools from which ANNAuto uses HNSW.
	Threshold int
	// M is the most neighbours a node keeps; EfSearch the beam of a query (at least the k
	// asked for); EfConstruction the beam of an insertion.
	M, EfSearch, EfConstruction int
	// Rebuild is the fraction of stale nodes (tools deleted or changed since the graph was
	// built; the graph keeps them, unreachable by queries, until it is rebuilt) at which the
	// graph is rebuilt in the background.
	Rebuild float64
	// Seed seeds the random levels of the nodes.
	Seed int64
}

// DefaultANNConfig returns the configuration WithANN's zero fields take.
func DefaultANNConfig() ANNConfig {
	return ANNConfig{Mode: ANNAuto, Threshold: DefaultANNThreshold, M: 16, EfSearch: 64, EfConstruction: 100, Rebuild: 0.2, Seed: 1}
}

// withDefaults returns c with its zero fields set from DefaultANNConfig, or an error naming
// the invalid field.
func (c ANNConfig) withDefaults() (ANNConfig, error) {
	d := DefaultANNConfig()
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.Threshold == 0 {
		c.Threshold = d.Threshold
	}
	if c.M == 0 {
		c.M = d.M
	}
	if c.EfSearch == 0 {
		c.EfSearch = d.EfSearch
	}
	if c.EfConstruction == 0 {
		c.EfConstruction = d.EfConstruction
	}
	if c.Rebuild == 0 {
		c.Rebuild = d.Rebuild
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	switch {
	case c.Mode != ANNAuto && c.Mode != ANNOn && c.Mode != ANNOff:
		return c, fmt.Errorf("ANN mode %q: want %s, %s or %s", c.Mode, ANNAuto, ANNOn, ANNOff)
	case c.Threshold < 0:
		return c, fmt.Errorf("ANN threshold %d: want >= 0", c.Threshold)
	case c.M < 2:
		return c, fmt.Errorf("ANN M %d: want >= 2", c.M)
	case c.EfSearch < 1 || c.EfConstruction < 1:
		return c, fmt.Errorf("ANN efSearch %d, efConstruction %d: want >= 1", c.EfSearch, c.EfConstruction)
	case !(c.Rebuild > 0):
		return c, fmt.Errorf("ANN rebuild fraction %v: want > 0", c.Rebuild)
	}
	return c, nil
}

// uses reports whether c searches a library of n tools with HNSW.
func (c ANNConfig) uses(n int) bool {
	return c.Mode == ANNOn || c.Mode == ANNAuto && n >= c.Threshold
}

// ANNIndex is an HNSW graph (internal/hnsw, the graph of the coder/hnsw module) over the
// scoring vectors of a library and of the versions synced into it after. Its nodes are
// vectors, each of one tool: a tool added or changed by a later version is a new node, and
// the nodes of tools deleted or changed stay in the graph, stale, until it is rebuilt. A
// query on a library version keeps the nodes that are that version's vectors of its tools
// (the same vector, not an equal one: Library.With shares unchanged rows) and scores them
// exactly, so every result is a tool of that version with its score there, as exact search
// gives it; what is approximate is which tools are found.
//
// An ANNIndex is safe for concurrent use: queries share the graph, a Sync holds it alone
// while it inserts each node.
type ANNIndex struct {
	cfg   ANNConfig
	wmu   sync.Mutex   // one Sync at a time
	mu    sync.RWMutex // the graph and nodes: queries read, Sync writes
	g     *hnsw.Graph[uint32]
	nodes []annNode
	cur   map[string]uint32 // tool id -> node, in the last library synced
	live  int               // tools of the last library synced
	// failures counts searches the graph library failed (recovered panics; answered exactly),
	// lastFailure holds the last one's message: reported by Index.ANN, never silent.
	failures    atomic.Int64
	lastFailure atomic.Value
}

type annNode struct {
	id  string
	vec []float32
}

// annDistance is 1 - the dot product: the nearest nodes have the highest scores (cosine for
// the unit vectors of a normalised model).
func annDistance(a, b []float32) float32 { return 1 - vek32.Dot(a, b) }

// BuildANN builds the HNSW graph of lib's scoring vectors (cfg's zero fields take
// DefaultANNConfig's values; its Mode and Threshold are not used here).
func BuildANN(lib *Library, cfg ANNConfig) (*ANNIndex, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("retriever: %w", err)
	}
	if lib.bias != nil {
		return nil, fmt.Errorf("retriever: an MLC index scores a per-tool bias besides the dot product: HNSW cannot search it")
	}
	g := hnsw.NewGraph[uint32]()
	g.M, g.EfSearch, g.EfConstruction = cfg.M, cfg.EfSearch, cfg.EfConstruction
	g.Ml = 1 / float64(cfg.M) // the paper's level distribution: 1/M of a layer's nodes go up
	g.Distance = annDistance
	g.Rng = rand.New(rand.NewSource(cfg.Seed))
	x := &ANNIndex{cfg: cfg, g: g, cur: make(map[string]uint32, lib.Len())}
	if err := x.sync(lib, false); err != nil {
		return nil, err
	}
	return x, nil
}

// Sync inserts the tools lib adds or changes since the last library built or synced into x,
// and makes lib searchable with x. The nodes of the tools it deletes or changes become stale.
func (x *ANNIndex) Sync(lib *Library) error { return x.sync(lib, true) }

func (x *ANNIndex) sync(lib *Library, lock bool) (err error) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	defer func() {
		if p := recover(); p != nil { // the graph's invariant checks: never to the user
			err = fmt.Errorf("retriever: HNSW graph: %v", p)
		}
	}()
	if lib.bias != nil {
		return fmt.Errorf("retriever: an MLC index scores a per-tool bias besides the dot product: HNSW cannot search it")
	}
	vecs := lib.scoring()
	next := make(map[string]uint32, lib.Len())
	for i, t := range lib.tools {
		if n, ok := x.cur[t.ID]; ok && sameRow(x.nodes[n].vec, vecs[i]) {
			next[t.ID] = n
			continue
		}
		if len(x.nodes) >= 1<<32-1 {
			return fmt.Errorf("retriever: HNSW graph: 2^32 nodes")
		}
		n := uint32(len(x.nodes))
		if lock {
			x.mu.Lock()
		}
		x.nodes = append(x.nodes, annNode{id: t.ID, vec: vecs[i]})
		x.g.Add(hnsw.MakeNode(n, vecs[i]))
		if lock {
			x.mu.Unlock()
		}
		next[t.ID] = n
	}
	x.mu.Lock()
	x.cur, x.live = next, lib.Len()
	x.mu.Unlock()
	lib.ann.Store(x)
	return nil
}

// sameRow reports whether a and b are the same vector (one backing array), not merely equal.
func sameRow(a, b []float32) bool { return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0] }

// Len is the number of nodes in the graph, stale ones included.
func (x *ANNIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.nodes)
}

// Stale is the number of nodes that are no tool's vector in the last library synced.
func (x *ANNIndex) Stale() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.nodes) - x.live
}

// Search returns the k tools of lib (best first, ties to the lower index) whose scoring
// vectors have the highest dot product with q among those the graph finds, with their
// scores, computed as exact search computes them. ok is false when lib was not built or
// synced into x (search it exactly). Fewer than min(k, lib.Len()) tools are found only when
// the graph holds many stale nodes near q: Search widens its beam, and gives up (ok false)
// after a beam of 16·max(k, efSearch).
func (x *ANNIndex) Search(lib *Library, q []float32, k int) (top rank.Ranking, ok bool) {
	if lib.ann.Load() != x || k <= 0 {
		return top, false
	}
	want := min(k, lib.Len())
	vecs := lib.scoring()
	for beam := max(k, x.cfg.EfSearch); ; beam *= 4 {
		found, ok := x.search(q, beam)
		if !ok {
			return top, false
		}
		top = rank.Ranking{Tools: make([]int, 0, len(found)), Scores: make([]float32, 0, len(found))}
		for _, n := range found {
			if i, ok := lib.pos[n.id]; ok && sameRow(vecs[i], n.vec) {
				top.Tools, top.Scores = append(top.Tools, i), append(top.Scores, dot(q, n.vec))
			}
		}
		if len(top.Tools) >= want {
			break
		}
		if len(found) < beam || beam >= 16*max(k, x.cfg.EfSearch) { // all the graph reaches
			return top, false
		}
	}
	sortRanking(top)
	top.Tools, top.Scores = top.Tools[:want], top.Scores[:want]
	return top, true
}

// search returns the beam nearest nodes of the graph to q.
func (x *ANNIndex) search(q []float32, beam int) (found []annNode, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			x.failures.Add(1)
			x.lastFailure.Store(fmt.Sprintf("HNSW search: %v (answered by exact search)", p))
			found, ok = nil, false
		}
	}()
	x.mu.RLock()
	defer x.mu.RUnlock()
	res := x.g.Search(q, beam)
	found = make([]annNode, len(res))
	for i, n := range res {
		found[i] = x.nodes[n.Key]
	}
	return found, true
}

// sortRanking sorts r by score, best first, ties to the lower tool index (rank.TopK's
// order).
func sortRanking(r rank.Ranking) {
	idx := make([]int, len(r.Tools))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case r.Scores[a] > r.Scores[b]:
			return -1
		case r.Scores[a] < r.Scores[b]:
			return 1
		}
		return r.Tools[a] - r.Tools[b]
	})
	tools, scores := slices.Clone(r.Tools), slices.Clone(r.Scores)
	for i, j := range idx {
		r.Tools[i], r.Scores[i] = tools[j], scores[j]
	}
}

// ExactSearch returns lib's k best tools for the query vector q by scoring every tool (the
// dot product with its scoring vector, plus its bias for an MLC index): what an Index
// without ANN ranks.
func ExactSearch(lib *Library, q []float32, k int) rank.Ranking {
	scores := make([]float32, lib.Len())
	score(lib.scoring(), lib.bias, q, scores)
	return rank.TopK(scores, k)
}

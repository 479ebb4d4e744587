package benchmark

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/synth"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/toolindex"
)

// ANNOptions configures ANN.
type ANNOptions struct {
	// Sizes are the library sizes measured, in turn, each a fresh library.
	Sizes []int
	// Dim is the embedding dimension (384: all-MiniLM-L6-v2's).
	Dim int
	// Queries is the number of query vectors timed; K the tools each asks for.
	Queries, K int
	// Versions library versions are set after the measurements, each adding Batch new tools
	// and deleting Batch others, while one client keeps querying.
	Versions, Batch int
	// HNSW configures the graph (toolindex.DefaultANNConfig for zero fields).
	HNSW toolindex.ANNConfig
	// Seed seeds the synthetic library, its queries and its updates.
	Seed uint64
}

// ANNRow is one measurement of one index over one library.
type ANNRow struct {
	Tools int
	Index string // "exact" or "hnsw"
	// Build is the time to build the index (exact: none).
	Build time.Duration
	// HeapMiB is the Go heap in use after a GC with the library and the index (exact: the
	// library alone: vectors and tool records); RSSMiB the process's resident memory then.
	HeapMiB, RSSMiB float64
	// P50 and P99 are the latencies of one query's search (the query vector given: no
	// embedding), one at a time; Recall the fraction of exact search's top k found.
	P50, P99 time.Duration
	Recall   float64
	// UpdatesPerSec is tools added or deleted per second through library versions
	// (Library.With, then for HNSW ANNIndex.Sync: what serve's update path does);
	// LiveP99 the query p99 while they ran; LiveRecall the recall on the last version.
	UpdatesPerSec float64
	LiveP99       time.Duration
	LiveRecall    float64
}

// ANN measures exact search and the HNSW index of package retriever on synthetic libraries
// (package synth's clustered low-rank unit vectors) of each size, writing progress to log,
// and returns one row per size and index.
func ANN(o ANNOptions, log io.Writer) ([]ANNRow, error) {
	var rows []ANNRow
	for _, n := range o.Sizes {
		r, err := annSize(o, n, log)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

func annSize(o ANNOptions, n int, log io.Writer) ([]ANNRow, error) {
	gen := synth.New(o.Dim, o.Seed)
	t0 := time.Now()
	emb := gen.Vectors(n)
	tools := make([]export.ToolRecord, n)
	for i := range tools {
		tools[i] = export.ToolRecord{ID: "t" + strconv.Itoa(i)}
	}
	lib, err := toolindex.NewLibrary(0, tools, emb)
	if err != nil {
		return nil, err
	}
	queries := gen.Vectors(o.Queries)
	fmt.Fprintf(log, "ann: %d tools of dimension %d generated in %v\n", n, o.Dim, time.Since(t0).Round(time.Millisecond))

	exact := ANNRow{Tools: n, Index: "exact"}
	exact.HeapMiB, exact.RSSMiB = memory()
	truth := make([]rank.Ranking, len(queries))
	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		t := time.Now()
		truth[i] = toolindex.ExactSearch(lib, q, o.K)
		lat[i] = time.Since(t)
	}
	exact.P50, exact.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	exact.Recall = 1
	fmt.Fprintf(log, "ann: %d tools: exact p50 %v p99 %v\n", n, exact.P50, exact.P99)

	t0 = time.Now()
	x, err := toolindex.BuildANN(lib, o.HNSW)
	if err != nil {
		return nil, err
	}
	h := ANNRow{Tools: n, Index: "hnsw", Build: time.Since(t0)}
	h.HeapMiB, h.RSSMiB = memory()
	fmt.Fprintf(log, "ann: %d tools: HNSW built in %v\n", n, h.Build.Round(time.Millisecond))
	for i, q := range queries {
		t := time.Now()
		top, ok := x.Search(lib, q, o.K)
		lat[i] = time.Since(t)
		if !ok {
			return nil, fmt.Errorf("ann: HNSW search of a library built into it failed")
		}
		h.Recall += overlap(top, truth[i])
	}
	h.P50, h.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	h.Recall /= float64(len(queries))
	fmt.Fprintf(log, "ann: %d tools: HNSW p50 %v p99 %v recall@%d %.4f\n", n, h.P50, h.P99, o.K, h.Recall)

	// Live updates: the same versions for both indexes, each Batch tools added and Batch
	// deleted, while one client queries the newest version.
	rng := rand.New(rand.NewPCG(o.Seed, 7))
	type version struct {
		put []export.ToolRecord
		emb [][]float32
		del []string
	}
	vs := make([]version, o.Versions)
	next, alive := n, slices.Clone(tools)
	for v := range vs {
		vs[v].emb = gen.Vectors(o.Batch)
		for range o.Batch {
			vs[v].put = append(vs[v].put, export.ToolRecord{ID: "t" + strconv.Itoa(next)})
			next++
			j := rng.IntN(len(alive))
			vs[v].del = append(vs[v].del, alive[j].ID)
			alive[j] = alive[len(alive)-1]
			alive = alive[:len(alive)-1]
		}
		alive = append(alive, vs[v].put...)
	}
	for _, row := range []*ANNRow{&exact, &h} {
		var cur atomicLib
		cur.set(lib)
		search := func(l *toolindex.Library, q []float32) rank.Ranking {
			if row.Index == "exact" {
				return toolindex.ExactSearch(l, q, o.K)
			}
			top, _ := x.Search(l, q, o.K)
			return top
		}
		stop := make(chan struct{})
		var live []time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t := time.Now()
				search(cur.get(), queries[i%len(queries)])
				live = append(live, time.Since(t))
			}
		}()
		t0 := time.Now()
		l := lib
		for v, u := range vs {
			if l, err = l.With(uint64(v+1), u.put, u.emb, u.del); err != nil {
				close(stop)
				return nil, err
			}
			if row.Index == "hnsw" {
				if err := x.Sync(l); err != nil {
					close(stop)
					return nil, err
				}
			}
			cur.set(l)
		}
		el := time.Since(t0)
		close(stop)
		wg.Wait()
		row.UpdatesPerSec = float64(2*o.Batch*o.Versions) / el.Seconds()
		row.LiveP99 = quantile(live, 0.99)
		for _, q := range queries {
			row.LiveRecall += overlap(search(l, q), toolindex.ExactSearch(l, q, o.K))
		}
		row.LiveRecall /= float64(len(queries))
		fmt.Fprintf(log, "ann: %d tools: %s: %d versions of +%d -%d tools in %v (%d queries meanwhile, p99 %v); recall@%d after %.4f\n",
			n, row.Index, o.Versions, o.Batch, o.Batch, el.Round(time.Millisecond), len(live), row.LiveP99, o.K, row.LiveRecall)
	}
	return []ANNRow{exact, h}, nil
}

// atomicLib holds the newest library version for the querying client.
type atomicLib struct {
	mu sync.Mutex
	l  *toolindex.Library
}

func (a *atomicLib) set(l *toolindex.Library) { a.mu.Lock(); a.l = l; a.mu.Unlock() }
func (a *atomicLib) get() *toolindex.Library {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.l
}

// overlap is the fraction of want's tools in got.
func overlap(got, want rank.Ranking) float64 {
	if len(want.Tools) == 0 {
		return 1
	}
	hit := 0
	for _, t := range got.Tools {
		if slices.Contains(want.Tools, t) {
			hit++
		}
	}
	return float64(hit) / float64(len(want.Tools))
}

// quantile returns the p quantile of d, sorting it in place.
func quantile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return percentile(d, p)
}

// memory returns the Go heap in use after a GC and the process's resident set (0 where
// /proc/self/status is not there), in MiB.
func memory() (heap, rss float64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	heap = float64(m.HeapInuse) / (1 << 20)
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return heap, 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return heap, kb / 1024
		}
	}
	return heap, 0
}

// WriteANNTable writes rows as lines of a Markdown table, after its header when header is set.
func WriteANNTable(w io.Writer, rows []ANNRow, k int, header bool) {
	if header {
		fmt.Fprintf(w, "| tools | index | build | Go heap MiB | RSS MiB | p50 ms | p99 ms | recall@%d | updates/s | p99 ms under updates | recall@%d after updates |\n", k, k)
		fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	}
	for _, r := range rows {
		build := "-"
		if r.Index != "exact" {
			build = r.Build.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.0f | %.0f | %.3f | %.3f | %.4f | %.0f | %.3f | %.4f |\n", r.Tools, r.Index, build,
			r.HeapMiB, r.RSSMiB, ms(r.P50), ms(r.P99), r.Recall, r.UpdatesPerSec, ms(r.LiveP99), r.LiveRecall)
	}
}

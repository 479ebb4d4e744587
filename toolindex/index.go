// Package toolindex answers tool-retrieval queries from an exported index (cmd/export
// -format index): it embeds the query with the exported query tower, scores every tool by
// the dot product with the precomputed tool embeddings (cosine for normalised models) and
// returns the top k, optionally reranking the top m with an exported cross-encoder.
//
//	r, err := toolindex.Load("index/", toolindex.WithReranker("reranker/", 20))
//	results, err := r.Retrieve(ctx, "what's the weather in Lisbon", 5)
//
// Tools are scored by their text vectors (the tool tower's embeddings in tools.safetensors), or
// with WithToolVectors("usage") by their Tool2Vec usage vectors when the index has them
// (tools_usage.safetensors: the mean embedding of the training queries that use a tool; a
// tool no training query uses keeps its text vector, and so does every tool added later).
//
// An index exported with a ToolRefiner (cmd/export -format index -refiner RUN: refiner/) serves
// the whole pipeline: the first stage's top N re-ordered by the refiner, then the rest in
// first-stage order (WithRefiner names another refiner, WithoutRefiner serves the first stage
// alone). Tools added to the library after export have no Tool2Vec vector in the refiner's
// table: they are not refined and keep their first-stage order among the results below the
// refined ones.
//
// An index exported from an MLC classifier (cmd/export -format index -run MLC_RUN; its
// manifest's first_stage is "mlc") is served the same way: its query tower is the
// classifier's encoder ([CLS], or its pooler for a head over the pooler) and its tool vectors
// the rows of the classifier's head, so a tool's score, the dot product plus the tool's bias
// (the index's "bias" tensor), is the classifier's logit, and the ranking is the classifier's
// ranking by its sigmoid (or softmax) probabilities. Its tools are the classifier's labels:
// tools cannot be added or changed (Library.With, CanEmbedTools), only removed, and it has no
// usage vectors. A refiner packaged with it re-orders the MLC's candidates (train refiner
// -candidates mlc), with the first-stage weight applied to the classifier's probabilities, as
// the refiner was trained and tuned.
//
// WithHybrid fuses the first stage (bi-encoder or MLC) with BM25 over the tool texts of
// tools.jsonl (rrf, or min-max / z-score interpolation with a dense weight), as cmd/eval
// -method fusion does; the BM25 index is built from the library at load and for each library
// version set, so tools added later are found by their words too.
//
// WithANN chooses how the dense first stage finds the top tools: by scoring every tool (exact)
// or through an HNSW graph (internal/hnsw, the graph of the coder/hnsw module) built in the
// background at load and kept in sync with each library version; by default (ANNAuto) from
// DefaultANNThreshold tools. BuildANN, ANNIndex and ExactSearch search a Library with a
// query vector directly (toolret bench ann; docs/large-libraries.md).
//
// A Index is safe for concurrent use. Its tool library is an immutable Library snapshot
// swapped atomically (SetLibrary): a query is answered from one library version, never a
// mix, while a server adds or removes tools (Library.With; new tools are embedded with the
// index's tool tower, Embed(biencoder.ToolTower, ...)).
package toolindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// Result is one retrieved tool.
type Result struct {
	ToolID string
	// Score is the ranking score: the reranker's sigmoid score when a reranker is used (with
	// WithInterpolation, its mix with the retrieval score; lower, decreasing values for the
	// results after its top m), the refiner's logit for refined results (and lower, decreasing
	// values for the results after them), else the retrieval score.
	Score float32
	// RetrievalScore is the first stage's score: the bi-encoder similarity (cosine or dot), or
	// for an MLC index the classifier's logit (dot product plus bias).
	RetrievalScore float32
	// Index is the tool's position in the index (tools.jsonl line - 1).
	Index int
	Title string
	Text  string
	// Hierarchy (category → tool → API) when the dataset has one.
	Category, ToolName, APIName string
	// DenseScore and BM25Score are, with WithHybrid, the tool's dense first-stage score and
	// its BM25 score, the two scores fused into RetrievalScore (0 without WithHybrid).
	DenseScore, BM25Score float32
}

type options struct {
	be         compute.Backend
	rerankDir  string
	rerankTopM int
	// rerankSet: WithReranker was given (WithReranker("", 0): none, not even the index's).
	rerankSet  bool
	verify     bool
	vectors    string
	refinerDir string
	noRefiner  bool
	// interp: WithInterpolation was given, with weight interpW.
	interp  bool
	interpW float32
	// hybrid: WithHybrid's method ("" for none) and dense weight; WithHybridDepth.
	hybrid         string
	hybridW        float64
	hybridAdapt    *fusion.Adaptive // WithHybridAdaptive, or the recipe's
	hybridDepth    int
	hybridDepthSet bool
	// hybridSet: WithHybrid was given; noRecipe: WithoutRecipe.
	hybridSet, noRecipe bool
	// clauses: WithClauses's options (nil: none); clausesSet: WithClauses was given.
	clauses    *rerank.ClauseOptions
	clausesSet bool
	// ann: WithANN's configuration; nil: DefaultANNConfig.
	ann *ANNConfig
	// batching and cacheSize: WithBatching, WithQueryCache.
	batching  Batching
	cacheSize int
	// quant: WithQuantization ("": the index's own).
	quant export.Quantization
	// prec: WithPrecision ("": the index's own).
	prec string
	// ensMethod, ensDirs, ensW: WithEnsemble.
	ensMethod string
	ensDirs   []string
	ensW      []float64
}

// Option configures Load.
type Option func(*options)

// WithBackend runs the models on be (default: backend.Open of $TOOLRET_BACKEND, else go).
func WithBackend(be compute.Backend) Option { return func(o *options) { o.be = be } }

// WithReranker reranks the top m tools of the first stage's ranking (0 means 20) with the
// exported cross-encoder in dir (cmd/export -format hf of a cross-encoder run); asked for
// more than m tools, the rest follow in the first stage's order. The first stage is
// everything before it: the dense or hybrid ranking (WithHybrid), merged over clauses
// (WithClauses). WithReranker("", 0) reranks nothing, not even with the reranker an index
// records from its model's recipe (export.Manifest.Reranker), which Load applies otherwise
// unless WithoutRecipe.
func WithReranker(dir string, m int) Option {
	return func(o *options) { o.rerankDir, o.rerankTopM, o.rerankSet = dir, m, true }
}

// WithInterpolation makes the reranker's score of each of the top m tools
// w·minmax(sigmoid score) + (1−w)·minmax(retrieval score), each min-max normalised over those
// m (rerank.Interpolate), as cmd/eval's ToolRerank pipeline does with -interpolate minmax
// -weight w (it prints the weight it chose on dev). w = 0 keeps the retrieval order (the
// reranker is not run); w = 1 is the reranker's order. It needs WithReranker (or a reranker
// the index records, whose weight it replaces); w must be in [0, 1].
func WithInterpolation(w float32) Option {
	return func(o *options) { o.interp, o.interpW = true, w }
}

// WithToolVectors chooses the tool vectors queries are scored against: "text" (default, the
// tool tower's embeddings) or "usage" (the index's Tool2Vec usage vectors; Load fails when the
// index has none or its tools changed since export). Tools added to the library later
// (Library.With) are scored by the embeddings given for them, their text vectors.
//
// Package serve keeps text vectors: its compactions write the library's embeddings
// (Library.Embedding, always text) into tools.safetensors, after which the usage vectors no
// longer align with the index and Load refuses them.
func WithToolVectors(kind string) Option { return func(o *options) { o.vectors = kind } }

// WithQuantization runs the query and tool towers with weights quantized as q
// (export.Model.Quantize): export.QuantInt8 needs the onnx backend, export.QuantNone serves an
// int8 index's queries in fp32. Without it the index's own (export.Manifest.Quantization)
// applies: an index whose tools were embedded in int8 embeds its queries in int8.
func WithQuantization(q export.Quantization) Option { return func(o *options) { o.quant = q } }

// WithPrecision embeds queries (and tools added later) at precision p: backend.FP32,
// backend.BF16 (mixed precision: the encoders' matrix multiplications in bfloat16; not on the
// onnx backend, nor with int8 weights) or backend.AutoPrecision (bf16 where the backend
// multiplies bfloat16 natively, backend.NativeBF16, else fp32). Without it the index's own
// (export.Manifest.Precision; fp32 for an index that records none) applies: an index whose
// tools were embedded in bf16 embeds its queries in bf16.
func WithPrecision(p string) Option { return func(o *options) { o.prec = p } }

// WithoutVerify skips checking the index files against the manifest's sha256 sums.
func WithoutVerify() Option { return func(o *options) { o.verify = false } }

// Index serves queries from an exported index.
type Index struct {
	query *export.Model
	// tool is the tool tower (the query model itself for a shared tower); nil when the index
	// has none (exports before the tool tower was written into the index).
	tool   *export.Model
	lib    atomic.Pointer[Library]
	dim    int
	rerank *export.Model
	topM   int
	// interp: the reranker's scores are interpolated with the retrieval scores, weight interpW.
	interp  bool
	interpW float32
	man     *export.Manifest
	meta    map[string]string
	// vectors is biencoder.VectorsText or VectorsUsage.
	vectors string
	// ref re-orders the top results (WithRefiner, or the index's packaged refiner); nil: none.
	ref *refinerStage
	// mlc describes an index from an MLC classifier; nil for a bi-encoder's.
	mlc *export.MLCManifest
	// hyb fuses the first stage with BM25 (WithHybrid); nil: the dense first stage alone.
	hyb *hybridStage
	// clauses ranks each query whole and by clause (WithClauses); nil: whole queries only.
	clauses *rerank.ClauseOptions
	// ens fuses the first stage with other indexes' (WithEnsemble); nil: none.
	ens *ensembleStage
	// probs: an MLC index's first-stage scores are its probabilities (softmax over the
	// library, or sigmoid), not its logits: in an ensemble, as eval's run rankers score.
	probs bool
	// ann searches the dense first stage with HNSW (WithANN); nil: exactly. annMode is the
	// configured mode.
	ann     *annState
	annMode string
	// qe embeds queries through the query cache and the batcher (WithQueryCache,
	// WithBatching); stats counts them.
	qe    *queryEmbedder
	stats embedStats
}

// ErrMLCTools is the error of adding or changing tools of an index from an MLC classifier.
var ErrMLCTools = errors.New("index from an MLC classifier: its tools are its labels; retrain to add tools")

// Library is one immutable version of the tool library: the tool records and their
// embeddings, in index order, and the vectors queries are scored against (the embeddings
// themselves, or usage vectors). Libraries share rows; never modify a Library or the slices
// it returns.
type Library struct {
	// Version is 0 for an index as exported; a server numbers each update after it.
	Version uint64
	tools   []export.ToolRecord
	rows    [][]float32
	vecs    [][]float32    // scoring vectors; nil: rows
	bias    []float32      // per-tool bias added to every score (an MLC index); nil: none
	pos     map[string]int // id -> index
	lex     lexical        // the BM25 index of the tool texts, built on first use (hybrid)
	// ann is the HNSW index the library was built or synced into (BuildANN, ANNIndex.Sync);
	// nil: none, the library is searched exactly.
	ann atomic.Pointer[ANNIndex]
}

// NewLibrary returns a library of tools with embeddings emb (same order, one row each).
func NewLibrary(version uint64, tools []export.ToolRecord, emb [][]float32) (*Library, error) {
	if len(tools) != len(emb) {
		return nil, fmt.Errorf("retriever: %d tools for %d embeddings", len(tools), len(emb))
	}
	l := &Library{Version: version, tools: tools, rows: emb, pos: make(map[string]int, len(tools))}
	for i, t := range tools {
		if len(emb[i]) != len(emb[0]) {
			return nil, fmt.Errorf("retriever: tool %q has a %d-dimensional embedding, tool %q %d", t.ID, len(emb[i]), tools[0].ID, len(emb[0]))
		}
		if _, dup := l.pos[t.ID]; dup {
			return nil, fmt.Errorf("retriever: tool id %q appears twice", t.ID)
		}
		l.pos[t.ID] = i
	}
	return l, nil
}

// Len is the number of tools.
func (l *Library) Len() int { return len(l.tools) }

// Tool returns the i-th tool record.
func (l *Library) Tool(i int) export.ToolRecord { return l.tools[i] }

// Embedding returns the i-th tool's embedding, its text vector as the index stores it
// (shared: do not modify).
func (l *Library) Embedding(i int) []float32 { return l.rows[i] }

// Vector returns the vector the i-th tool is scored with: its usage vector when the library
// has them, else its embedding (shared: do not modify).
func (l *Library) Vector(i int) []float32 { return l.scoring()[i] }

// Bias returns the per-tool bias added to every score, in index order, for the library of an
// MLC index (nil for a bi-encoder's; shared: do not modify).
func (l *Library) Bias() []float32 { return l.bias }

func (l *Library) scoring() [][]float32 {
	if l.vecs != nil {
		return l.vecs
	}
	return l.rows
}

// Lookup returns the index of the tool with the given id.
func (l *Library) Lookup(id string) (int, bool) {
	i, ok := l.pos[id]
	return i, ok
}

// With returns version of the library with the tools put added (or replacing the tools of
// the same ids, in place) and the tools of the ids in del removed. emb holds the embeddings
// of put (their text vectors): a library with usage vectors scores put tools by them, as
// usage vectors exist only for the tools of the training data. Deleting an absent id is not
// an error; put and del must not share an id. l is unchanged; the new library shares l's
// unchanged rows. The library of an MLC index (Bias not nil) only loses tools: put is
// refused (ErrMLCTools).
func (l *Library) With(version uint64, put []export.ToolRecord, emb [][]float32, del []string) (*Library, error) {
	if len(put) != len(emb) {
		return nil, fmt.Errorf("retriever: %d tools for %d embeddings", len(put), len(emb))
	}
	if l.bias != nil && len(put) > 0 {
		return nil, fmt.Errorf("retriever: tool %q: %w", put[0].ID, ErrMLCTools)
	}
	gone := make(map[string]bool, len(del))
	for _, id := range del {
		gone[id] = true
	}
	tools := make([]export.ToolRecord, 0, len(l.tools)+len(put))
	rows := make([][]float32, 0, len(l.tools)+len(put))
	var vecs [][]float32
	if l.vecs != nil {
		vecs = make([][]float32, 0, len(l.tools)+len(put))
	}
	var bias []float32
	if l.bias != nil {
		bias = make([]float32, 0, len(l.tools))
	}
	repl := make(map[string]int, len(put))
	for i, t := range put {
		if gone[t.ID] {
			return nil, fmt.Errorf("retriever: tool %q both put and deleted", t.ID)
		}
		if _, dup := repl[t.ID]; dup {
			return nil, fmt.Errorf("retriever: tool %q put twice", t.ID)
		}
		if len(l.rows) > 0 && len(emb[i]) != len(l.rows[0]) {
			return nil, fmt.Errorf("retriever: tool %q has a %d-dimensional embedding, the library %d", t.ID, len(emb[i]), len(l.rows[0]))
		}
		repl[t.ID] = i
	}
	for i, t := range l.tools {
		if gone[t.ID] {
			continue
		}
		if j, ok := repl[t.ID]; ok {
			tools, rows = append(tools, put[j]), append(rows, emb[j])
			if vecs != nil {
				vecs = append(vecs, emb[j])
			}
			delete(repl, t.ID)
			continue
		}
		tools, rows = append(tools, t), append(rows, l.rows[i])
		if vecs != nil {
			vecs = append(vecs, l.vecs[i])
		}
		if bias != nil {
			bias = append(bias, l.bias[i])
		}
	}
	for i, t := range put {
		if _, ok := repl[t.ID]; ok {
			tools, rows = append(tools, t), append(rows, emb[i])
			if vecs != nil {
				vecs = append(vecs, emb[i])
			}
		}
	}
	nl, err := NewLibrary(version, tools, rows)
	if err != nil {
		return nil, err
	}
	nl.vecs, nl.bias = vecs, bias
	return nl, nil
}

// Load opens an exported index directory (manifest.json, tools.safetensors, tools.jsonl and
// the query tower in query/; with WithToolVectors("usage"), tools_usage.safetensors; its
// refiner/ unless WithoutRefiner), of a bi-encoder or of an MLC classifier.
func Load(dir string, opts ...Option) (*Index, error) {
	o := options{verify: true}
	for _, f := range opts {
		f(&o)
	}
	vectors, err := biencoder.ParseToolVectors(o.vectors)
	if err != nil {
		return nil, fmt.Errorf("retriever: %w", err)
	}
	ens, err := checkEnsemble(o)
	if err != nil {
		return nil, err
	}
	man, err := export.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("retriever: %w", err)
	}
	stage := man.Stage()
	if stage == export.FirstStageMLC && vectors == biencoder.VectorsUsage {
		return nil, fmt.Errorf("retriever: tool vectors usage: index %s is from an MLC classifier (%s), whose tool vectors are its head's rows; usage vectors are a bi-encoder's", dir, man.Source)
	}
	if vectors == biencoder.VectorsUsage && man.Usage == nil {
		return nil, fmt.Errorf("retriever: tool vectors usage: index %s has none (exported from a run without a recorded training split, or over other data than the run's)", dir)
	}
	if man.Format != export.FormatIndex {
		return nil, fmt.Errorf("retriever: %s is a %q export, want an index (cmd/export -format index)", dir, man.Format)
	}
	if o.verify {
		if err := verify(dir, man); err != nil {
			return nil, err
		}
	}
	if o.be == nil {
		if o.be, err = backend.Open(backend.Name("")); err != nil {
			return nil, err
		}
	}
	qdir, err := man.TowerDir(dir, biencoder.QueryTower)
	if err != nil {
		return nil, err
	}
	q, err := export.LoadHF(qdir, o.be)
	if err != nil {
		return nil, err
	}
	quant := o.quant
	if quant == export.QuantDefault {
		quant = man.Quantization
	}
	if err := q.Quantize(quant); err != nil {
		return nil, fmt.Errorf("retriever: index %s: %w", dir, err)
	}
	prec, err := loadPrecision(dir, man, o, quant)
	if err != nil {
		return nil, err
	}
	if err := q.SetPrecision(prec); err != nil {
		return nil, fmt.Errorf("retriever: index %s: %w", dir, err)
	}
	if q.Head != nil {
		return nil, fmt.Errorf("retriever: query model %s has a classification head, want a bi-encoder tower", qdir)
	}
	tools, flat, dim, meta, err := export.ReadIndexFiles(dir)
	if err != nil {
		return nil, err
	}
	if h := q.Towers[0].Encoder.Hidden(); h != dim {
		return nil, fmt.Errorf("retriever: index %s has %d-dimensional tool embeddings, the query model %d", dir, dim, h)
	}
	bias, err := export.ReadIndexBias(dir, man, len(tools))
	if err != nil {
		return nil, fmt.Errorf("retriever: %w", err)
	}
	r := &Index{query: q, dim: dim, man: man, meta: meta, vectors: vectors}
	if r.qe, err = newQueryEmbedder(r, o.batching, o.cacheSize); err != nil {
		return nil, err
	}
	if stage == export.FirstStageMLC {
		r.mlc = man.MLC
		if _, ok := man.Towers[biencoder.ToolTower]; ok {
			return nil, fmt.Errorf("retriever: index %s is from an MLC classifier and lists a tool tower: an MLC index has none", dir)
		}
		if q.Towers[0].Normalize {
			return nil, fmt.Errorf("retriever: index %s is from an MLC classifier and its query tower normalises: the classifier's logits need the unnormalised state", dir)
		}
	}
	recordedRR, err := recordedReranker(&o, man, dir)
	if err != nil {
		return nil, err
	}
	if recordedRR && ens != nil {
		return nil, fmt.Errorf("retriever: index %s records its model's recipe, reranker %s, and WithEnsemble: a reranker over an ensemble's candidates is not supported (WithoutRecipe, or WithReranker(\"\", 0), serves the ensemble alone)", dir, man.Reranker)
	}
	if r.ref, err = loadRefiner(dir, man, meta, tools, o, o.be); err != nil {
		return nil, err
	}
	refDir := ""
	if r.ref != nil {
		refDir = r.ref.dir
	}
	if recordedClauses(&o, man) {
		if err := o.clauses.Check(); err != nil {
			return nil, fmt.Errorf("index %s records its model's recipe, %s: %w", dir, man.Clauses, err)
		}
	} else if o.clauses != nil {
		if err := o.clauses.Check(); err != nil {
			return nil, fmt.Errorf("retriever: WithClauses: %w", err)
		}
	}
	r.clauses = o.clauses
	recorded := recordedHybrid(&o, man)
	if r.hyb, err = newHybrid(o, refDir); err != nil {
		if recorded {
			return nil, fmt.Errorf("index %s records its model's recipe, hybrid %s: %w (WithoutRecipe, or -no-recipe, serves the dense first stage)", dir, man.Hybrid, err)
		}
		return nil, err
	}
	if r.ref != nil {
		// The refiner was trained over one first stage: the index must score with it.
		want := refinerVectors[r.ref.kind]
		switch {
		case o.vectors == "":
			vectors, r.vectors = want, want
		case vectors != want:
			return nil, fmt.Errorf("retriever: refiner %s re-orders %s candidates (%s vectors), the index is asked to score with %s vectors (WithToolVectors); give WithoutRefiner to serve the first stage alone", r.ref.dir, r.ref.kind, want, vectors)
		}
		if o.rerankDir != "" {
			return nil, fmt.Errorf("retriever: a reranker (WithReranker) and a refiner (%s) are two second stages: give one (WithoutRefiner drops the index's refiner)", r.ref.dir)
		}
	}
	if _, ok := man.Towers[biencoder.ToolTower]; ok {
		tdir, err := man.TowerDir(dir, biencoder.ToolTower)
		if err != nil {
			return nil, err
		}
		if r.tool = q; tdir != qdir {
			if r.tool, err = export.LoadHF(tdir, o.be); err != nil {
				return nil, err
			}
			if err := r.tool.Quantize(quant); err != nil {
				return nil, fmt.Errorf("retriever: index %s: %w", dir, err)
			}
			if err := r.tool.SetPrecision(prec); err != nil {
				return nil, fmt.Errorf("retriever: index %s: %w", dir, err)
			}
			if h := r.tool.Towers[0].Encoder.Hidden(); h != dim || r.tool.Head != nil {
				return nil, fmt.Errorf("retriever: tool model %s: hidden size %d (index %d) or a classification head", tdir, h, dim)
			}
		}
	}
	rows := make([][]float32, len(tools))
	for i := range rows {
		rows[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
	}
	lib, err := NewLibrary(0, tools, rows)
	if err != nil {
		return nil, fmt.Errorf("retriever: index %s: %w", dir, err)
	}
	lib.bias = bias
	if vectors == biencoder.VectorsUsage {
		uflat, err := export.ReadUsage(dir, man, tools, dim)
		if err != nil {
			return nil, fmt.Errorf("retriever: %w", err)
		}
		lib.vecs = make([][]float32, len(tools))
		for i := range lib.vecs {
			lib.vecs[i] = uflat[i*dim : (i+1)*dim : (i+1)*dim]
		}
	}
	if r.hyb != nil {
		lib.lexicalIndex() // at load, not on the first query
	}
	if r.ann, err = newANN(o, r); err != nil {
		return nil, err
	}
	if r.ann != nil {
		r.ann.set(lib) // starts building the graph in the background
	}
	r.lib.Store(lib)
	if o.interp && (o.rerankDir == "" || !(o.interpW >= 0 && o.interpW <= 1)) {
		return nil, fmt.Errorf("retriever: WithInterpolation(%v): needs WithReranker and a weight in [0, 1]", o.interpW)
	}
	if o.rerankDir != "" {
		if o.rerankTopM < 0 {
			return nil, fmt.Errorf("retriever: WithReranker(%s, %d): want m >= 0", o.rerankDir, o.rerankTopM)
		}
		rm, err := export.LoadCrossEncoder(o.rerankDir, o.be)
		if err != nil {
			return nil, fmt.Errorf("retriever: reranker: %w", err)
		}
		r.rerank, r.topM, r.interp, r.interpW = rm, o.rerankTopM, o.interp, o.interpW
		if r.topM <= 0 {
			r.topM = 20
		}
	}
	if r.ens, err = loadEnsemble(ens, dir, o, r); err != nil {
		return nil, err
	}
	return r, nil
}

// verify checks the sha256 of every file the manifest lists.
func verify(dir string, man *export.Manifest) error {
	for name, sum := range man.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return fmt.Errorf("retriever: manifest of %s lists %q outside the index", dir, name)
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("retriever: %w", err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("retriever: %s: %w", p, err)
		}
		if hex.EncodeToString(h.Sum(nil)) != sum {
			return fmt.Errorf("retriever: %s does not match its sha256 in %s (modified or damaged)", p, export.ManifestFile)
		}
	}
	return nil
}

// Len is the number of tools in the current library.
func (r *Index) Len() int { return r.Library().Len() }

// Manifest returns the index's manifest.
func (r *Index) Manifest() *export.Manifest { return r.man }

// Metadata returns the metadata of the index's tools.safetensors (similarity,
// data_fingerprint, ...). Do not modify it.
func (r *Index) Metadata() map[string]string { return r.meta }

// ToolVectors is the kind of vectors tools are scored with: "text" or "usage" ("text" for an
// MLC index: its only vectors, the rows of the classifier's head).
func (r *Index) ToolVectors() string { return r.vectors }

// FirstStage is the index's first stage: export.FirstStageBiEncoder or export.FirstStageMLC.
func (r *Index) FirstStage() string { return r.man.Stage() }

// UsageNote returns, with usage vectors, the line reporting the tools that keep their text
// vector ("usage vectors: N of T tools have no training query; they keep their text
// vector"), counted in the index as exported; "" with text vectors.
func (r *Index) UsageNote() string {
	if r.vectors != biencoder.VectorsUsage || r.man.Usage == nil {
		return ""
	}
	return biencoder.UsageNote(r.man.Usage.Fallbacks, r.man.Tools)
}

// Dim is the embedding dimension.
func (r *Index) Dim() int { return r.dim }

// Quantization returns the quantization of the query tower's weights ("" for fp32;
// WithQuantization).
func (r *Index) Quantization() export.Quantization { return r.query.Quantization() }

// Precision returns the precision queries are embedded at: "" for fp32, backend.BF16
// (WithPrecision, else the index's own).
func (r *Index) Precision() string { return r.query.Precision() }

// loadPrecision resolves the precision an index's queries are embedded at: WithPrecision's
// (auto resolved for the backend), else the manifest's; bf16 is refused with int8 weights and
// on the onnx backend, naming what to give instead.
func loadPrecision(dir string, man *export.Manifest, o options, quant export.Quantization) (string, error) {
	p, field := o.prec, "precision"
	if p == "" {
		if p, field = man.Precision, "manifest precision"; p == "" {
			return "", nil
		}
	}
	name := backend.NameOf(o.be)
	got, _, _, err := backend.ResolvePrecision(field, p, name)
	if err != nil {
		if o.prec == "" {
			return "", fmt.Errorf("retriever: index %s was embedded at %s: %w (or embed its queries in fp32: -precision fp32, WithPrecision)", dir, p, err)
		}
		return "", fmt.Errorf("retriever: index %s: %w", dir, err)
	}
	if got == backend.BF16 && quant.Int8() {
		if o.prec == "" {
			return "", fmt.Errorf("retriever: index %s was embedded at bf16, which int8 weights (quantize %s) cannot run: serve it with -quantize none, or -precision fp32", dir, quant)
		}
		return "", fmt.Errorf("retriever: index %s: precision %s and quantize %s: one or the other (int8 weights run on the onnx backend, bf16 on go or xla)", dir, p, quant)
	}
	if got == backend.FP32 {
		return "", nil
	}
	return got, nil
}

// Library returns the current tool library.
func (r *Index) Library() *Library { return r.lib.Load() }

// SetLibrary makes l the library later queries are answered from; queries under way finish
// on the library they started with.
func (r *Index) SetLibrary(l *Library) error {
	if l.Len() > 0 && len(l.rows[0]) != r.dim {
		return fmt.Errorf("retriever: library of %d-dimensional embeddings, the index %d", len(l.rows[0]), r.dim)
	}
	if r.hyb != nil {
		l.lexicalIndex() // before the library is published: queries find its BM25 index built
	}
	if r.ann != nil {
		r.ann.set(l) // before the library is published: its tools are in the graph
	}
	r.lib.Store(l)
	return nil
}

// CanEmbedTools reports why tools cannot be embedded (nil when they can): an index exported
// before the tool tower was written into it has only the query tower, and the tools of an
// index from an MLC classifier are its labels (ErrMLCTools).
func (r *Index) CanEmbedTools() error {
	if r.ens != nil {
		return fmt.Errorf("retriever: %w", ErrEnsembleTools)
	}
	if r.mlc != nil {
		return fmt.Errorf("retriever: %w", ErrMLCTools)
	}
	if r.tool == nil {
		return fmt.Errorf("retriever: index has no tool tower (exported before toolret wrote it); re-export it with cmd/export -format index to add tools")
	}
	return nil
}

// towerModel returns the model of tower (QueryTower or ToolTower).
func (r *Index) towerModel(tower string) (*export.Model, error) {
	switch tower {
	case biencoder.QueryTower:
		return r.query, nil
	case biencoder.ToolTower:
		if err := r.CanEmbedTools(); err != nil {
			return nil, err
		}
		return r.tool, nil
	}
	return nil, fmt.Errorf("retriever: tower %q (want %q or %q)", tower, biencoder.QueryTower, biencoder.ToolTower)
}

// Embed returns the embeddings of texts with the query or the tool tower
// (biencoder.QueryTower, biencoder.ToolTower), as the index's tools were embedded.
func (r *Index) Embed(tower string, texts []string) ([][]float32, error) {
	m, err := r.towerModel(tower)
	if err != nil {
		return nil, err
	}
	side := "" // a tower of its own: its length is its directory's max_seq_length
	if r.tool == r.query {
		side = tower // a shared tower: the side's length recorded with it
	}
	if tower == biencoder.ToolTower {
		r.stats.toolTexts.Add(int64(len(texts)))
	}
	out, err := m.Embed(side, texts)
	if err != nil {
		return nil, fmt.Errorf("retriever: embed %s texts: %w", tower, err)
	}
	return out, nil
}

// Tokens returns the number of tokens the tower reads of text ([CLS] and [SEP] included,
// after truncation to the tower's length).
func (r *Index) Tokens(tower, text string) (int, error) {
	m, err := r.towerModel(tower)
	if err != nil {
		return 0, err
	}
	t := &m.Towers[0]
	maxLen := t.MaxLen
	if r.tool == r.query {
		if l := m.QueryMaxLen; tower == biencoder.QueryTower && l > 0 {
			maxLen = min(maxLen, l)
		}
		if l := m.ToolMaxLen; tower == biencoder.ToolTower && l > 0 {
			maxLen = min(maxLen, l)
		}
	}
	return len(m.Tok.Single(text, maxLen)), nil
}

// QueryTokens returns the number of tokens the query tower encodes text to before truncation
// (its query prompt, [CLS] and [SEP] included) and the number it keeps; 0, 0 when the index has
// no query encoder of its own (its embeddings come from elsewhere).
func (r *Index) QueryTokens(text string) (n, limit int) {
	m, err := r.towerModel(biencoder.QueryTower)
	if err != nil || m.EmbedFn != nil || m.Tok == nil {
		return 0, 0
	}
	// As Embed: a shared tower reads the query side's prompt and length, a tower of its own
	// its directory's length and no prompt.
	side, prompt := "", ""
	if r.tool == r.query {
		side, prompt = biencoder.QueryTower, m.QueryPrompt
	}
	t, err := m.Tower(side)
	if err != nil {
		return 0, 0
	}
	limit = t.MaxLen
	if side == biencoder.QueryTower && m.QueryMaxLen > 0 {
		limit = min(limit, m.QueryMaxLen)
	}
	return len(m.Tok.Single(prompt+text, 0)), limit
}

// Retrieve returns the k best tools for query, best first.
func (r *Index) Retrieve(ctx context.Context, query string, k int) ([]Result, error) {
	res, err := r.RetrieveBatch(ctx, []string{query}, k)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RetrieveBatch returns the k best tools for each query (queries are embedded together) from
// the current library.
func (r *Index) RetrieveBatch(ctx context.Context, queries []string, k int) ([][]Result, error) {
	return r.RetrieveFrom(ctx, r.Library(), queries, k)
}

// RetrieveFrom returns the k best tools of lib for each query: every answer comes from that
// one library version. The index of an iteration-aware bi-encoder (Marker) embeds each query
// as round 0's instruction, as its training did.
func (r *Index) RetrieveFrom(ctx context.Context, lib *Library, queries []string, k int) ([][]Result, error) {
	if k <= 0 {
		return nil, fmt.Errorf("retriever: k = %d, want > 0", k)
	}
	return r.retrieve(ctx, lib, r.mark(queries, 0), queries, k, r.clauses != nil)
}

// Marker returns the iteration marker of the index's bi-encoder ("" unless it was trained on
// iterative feedback).
func (r *Index) Marker() string { return r.man.Marker }

// mark returns queries as iteration t's instructions under the index's marker.
func (r *Index) mark(queries []string, t int) []string {
	if r.man.Marker == "" {
		return queries
	}
	out := make([]string, len(queries))
	for i, q := range queries {
		out[i] = biencoder.Mark(r.man.Marker, t, q)
	}
	return out
}

// retrieveFrom answers queries from lib: with the ensemble when the index is one, else with
// its own stages alone (retrieveOwn).
func (r *Index) retrieveFrom(ctx context.Context, lib *Library, texts, queries []string, k int) ([][]Result, error) {
	if r.ens != nil {
		return r.retrieveEnsemble(ctx, lib, texts, queries, k)
	}
	return r.retrieveOwn(ctx, lib, texts, queries, k)
}

// retrieveOwn embeds texts (the queries, marked when the model is iteration-aware) and
// gives the lexical stage and the refiner the queries themselves.
func (r *Index) retrieveOwn(ctx context.Context, lib *Library, texts, queries []string, k int) ([][]Result, error) {
	if k <= 0 {
		return nil, fmt.Errorf("retriever: k = %d, want > 0", k)
	}
	if len(queries) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	qe, err := r.qe.embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if r.hyb != nil {
		return r.retrieveHybrid(ctx, lib, queries, qe, k)
	}
	m := k
	if r.ref != nil {
		m = r.ref.depth(k)
	}
	out := make([][]Result, len(queries))
	var scores []float32
	// A refiner over an MLC's candidates mixes in the classifier's probabilities: a softmax
	// classifier's need each query's log-sum-exp of the logits.
	var lse []float64
	if (r.ref != nil || r.probs) && r.mlc != nil && r.mlc.Activation == "softmax" {
		lse = make([]float64, len(queries))
	}
	for i, q := range qe {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var top rank.Ranking
		ok := false
		if lse == nil { // a softmax needs every tool's logit
			top, ok = r.annTop(lib, q, m) // never with a refiner (newANN)
		}
		if !ok {
			if scores == nil {
				scores = make([]float32, lib.Len())
			}
			score(lib.scoring(), lib.bias, q, scores)
			if lse != nil {
				lse[i] = logSumExp(scores)
			}
			top = rank.TopK(scores, m)
			if r.ref != nil {
				top = r.ref.deepen(lib, scores, top)
			}
		}
		res := make([]Result, len(top.Tools))
		for j, t := range top.Tools {
			rec := lib.tools[t]
			res[j] = Result{ToolID: rec.ID, Score: top.Scores[j], RetrievalScore: top.Scores[j], Index: t,
				Title: rec.Title, Text: rec.Text, Category: rec.Category, ToolName: rec.ToolName, APIName: rec.APIName}
		}
		out[i] = res
	}
	if r.probs && r.mlc != nil { // no reranker or refiner: an ensemble has neither
		p := r.probability(lse)
		for i, res := range out {
			for j := range res {
				s := p(i, res[j].RetrievalScore)
				res[j].Score, res[j].RetrievalScore = s, s
			}
		}
	}
	if r.ref != nil {
		if err := r.ref.refine(ctx, queries, out, r.probability(lse)); err != nil {
			return nil, err
		}
	}
	for i, res := range out {
		out[i] = res[:min(k, len(res))]
	}
	return out, nil
}

// probability returns the function that turns the first stage's score of a query's result
// (query i) into the score a refiner was trained with: an MLC classifier's probability (the
// sigmoid of the logit, or its softmax over the library, exp(logit - lse[i])); nil for a
// bi-encoder's scores, used as they are.
func (r *Index) probability(lse []float64) func(i int, x float32) float32 {
	switch {
	case r.mlc == nil:
		return nil
	case lse != nil:
		return func(i int, x float32) float32 { return float32(math.Exp(float64(x) - lse[i])) }
	}
	return func(_ int, x float32) float32 { return export.Sigmoid(x) }
}

// logSumExp is log Σ exp(x), computed in float64 from the maximum.
func logSumExp(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// score fills scores with the dot product of q and every tool embedding, plus the tool's bias
// when bias is not nil, in parallel for large indexes.
func score(rows [][]float32, bias []float32, q []float32, scores []float32) {
	n, d := len(rows), len(q)
	work := func(lo, hi int) {
		for t := lo; t < hi; t++ {
			s := dot(q, rows[t][:d])
			if bias != nil {
				s += bias[t]
			}
			scores[t] = s
		}
	}
	parts := runtime.GOMAXPROCS(0)
	if n*d < 1<<18 || parts == 1 {
		work(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + parts - 1) / parts
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			work(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}

// dot is the dot product of q and row (len(row) >= len(q)), summed in order: every score of
// a tool, exact or through ANNIndex, is computed by it.
func dot(q, row []float32) float32 {
	row = row[:len(q)]
	s := float32(0)
	for k, v := range q {
		s += v * row[k]
	}
	return s
}

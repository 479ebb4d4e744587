// Package retriever answers tool-retrieval queries from an exported index (cmd/export
// -format index): it embeds the query with the exported query tower, scores every tool by
// the dot product with the precomputed tool embeddings (cosine for normalised models) and
// returns the top k, optionally reranking the top m with an exported cross-encoder.
//
//	r, err := retriever.Load("index/", retriever.WithReranker("reranker/", 20))
//	results, err := r.Retrieve(ctx, "what's the weather in Lisbon", 5)
//
// A Retriever is safe for concurrent use.
package retriever

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/retrieve"
)

// Result is one retrieved tool.
type Result struct {
	ToolID string
	// Score is the ranking score: the reranker's sigmoid score when a reranker is used,
	// else the retrieval score.
	Score float32
	// RetrievalScore is the bi-encoder similarity (cosine or dot).
	RetrievalScore float32
	// Index is the tool's position in the index (tools.jsonl line - 1).
	Index int
	Title string
	Text  string
	// Hierarchy (category → tool → API) when the dataset has one.
	Category, ToolName, APIName string
}

type options struct {
	be         compute.Backend
	rerankDir  string
	rerankTopM int
	verify     bool
}

// Option configures Load.
type Option func(*options)

// WithBackend runs the models on be (default: backend.Open of $TOOLRET_BACKEND, else go).
func WithBackend(be compute.Backend) Option { return func(o *options) { o.be = be } }

// WithReranker reranks the top m retrieved tools (m >= k; 0 means 20) with the exported
// cross-encoder in dir (cmd/export -format hf of a cross-encoder run).
func WithReranker(dir string, m int) Option {
	return func(o *options) { o.rerankDir, o.rerankTopM = dir, m }
}

// WithoutVerify skips checking the index files against the manifest's sha256 sums.
func WithoutVerify() Option { return func(o *options) { o.verify = false } }

// Retriever serves queries from an exported index.
type Retriever struct {
	query  *export.Model
	tools  []export.ToolRecord
	emb    []float32 // [len(tools) * dim]
	dim    int
	rerank *export.Model
	topM   int
	man    *export.Manifest
}

// Load opens an exported index directory (manifest.json, tools.safetensors, tools.jsonl and
// the query tower in query/).
func Load(dir string, opts ...Option) (*Retriever, error) {
	o := options{verify: true}
	for _, f := range opts {
		f(&o)
	}
	man, err := export.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("retriever: %w", err)
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
	if q.Head != nil {
		return nil, fmt.Errorf("retriever: query model %s has a classification head, want a bi-encoder tower", qdir)
	}
	tools, emb, dim, _, err := export.ReadIndexFiles(dir)
	if err != nil {
		return nil, err
	}
	if h := q.Towers[0].Encoder.Hidden(); h != dim {
		return nil, fmt.Errorf("retriever: index %s has %d-dimensional tool embeddings, the query model %d", dir, dim, h)
	}
	r := &Retriever{query: q, tools: tools, emb: emb, dim: dim, man: man}
	if o.rerankDir != "" {
		rm, err := export.LoadHF(o.rerankDir, o.be)
		if err != nil {
			return nil, err
		}
		if rm.Head == nil || len(rm.Head.Labels) != 1 {
			return nil, fmt.Errorf("retriever: reranker %s is not a cross-encoder (BertForSequenceClassification with one logit)", o.rerankDir)
		}
		if rm.Kind != export.KindCrossEncoder {
			return nil, fmt.Errorf("retriever: reranker %s is a %s", o.rerankDir, rm.Kind)
		}
		r.rerank, r.topM = rm, o.rerankTopM
		if r.topM <= 0 {
			r.topM = 20
		}
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

// Len is the number of tools in the index.
func (r *Retriever) Len() int { return len(r.tools) }

// Manifest returns the index's manifest.
func (r *Retriever) Manifest() *export.Manifest { return r.man }

// Retrieve returns the k best tools for query, best first.
func (r *Retriever) Retrieve(ctx context.Context, query string, k int) ([]Result, error) {
	res, err := r.RetrieveBatch(ctx, []string{query}, k)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RetrieveBatch returns the k best tools for each query (queries are embedded together).
func (r *Retriever) RetrieveBatch(ctx context.Context, queries []string, k int) ([][]Result, error) {
	if k <= 0 {
		return nil, fmt.Errorf("retriever: k = %d, want > 0", k)
	}
	if len(queries) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	qe, err := r.query.Embed("", queries)
	if err != nil {
		return nil, fmt.Errorf("retriever: embed queries: %w", err)
	}
	m := k
	if r.rerank != nil {
		m = max(k, r.topM)
	}
	out := make([][]Result, len(queries))
	scores := make([]float32, len(r.tools))
	for i, q := range qe {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.score(q, scores)
		top := retrieve.TopK(scores, m)
		res := make([]Result, len(top.Tools))
		for j, t := range top.Tools {
			rec := r.tools[t]
			res[j] = Result{ToolID: rec.ID, Score: top.Scores[j], RetrievalScore: top.Scores[j], Index: t,
				Title: rec.Title, Text: rec.Text, Category: rec.Category, ToolName: rec.ToolName, APIName: rec.APIName}
		}
		if r.rerank != nil {
			if err := r.rerankResults(ctx, queries[i], res); err != nil {
				return nil, err
			}
		}
		out[i] = res[:min(k, len(res))]
	}
	return out, nil
}

// score fills scores with the dot product of q and every tool embedding, in parallel for
// large indexes.
func (r *Retriever) score(q []float32, scores []float32) {
	n, d := len(r.tools), r.dim
	work := func(lo, hi int) {
		for t := lo; t < hi; t++ {
			row := r.emb[t*d : (t+1)*d]
			s := float32(0)
			for k, v := range q {
				s += v * row[k]
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

func (r *Retriever) rerankResults(ctx context.Context, query string, res []Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	qs := make([]string, len(res))
	docs := make([]string, len(res))
	for i, x := range res {
		qs[i], docs[i] = query, x.Text
	}
	logits, err := r.rerank.Score(qs, docs)
	if err != nil {
		return fmt.Errorf("retriever: rerank: %w", err)
	}
	for i := range res {
		res[i].Score = export.Sigmoid(logits[i][0])
	}
	sort.SliceStable(res, func(a, b int) bool { return res[a].Score > res[b].Score })
	return nil
}

package biencoder

import (
	"context"
	"fmt"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// Embedder computes query and tool embeddings with a bi-encoder's current weights. Its
// graphs read the weights as parameters (encoder.VariablesAsParameters), so it embeds with
// the store's weights as they are at each call.
type Embedder struct {
	Cfg     *Config
	Tok     *tokenize.Tokenizer
	Backend compute.Backend
	Store   *model.Store
	Batch   int
	// Adapter is what MergeLoRA merged into Store (nil: none), for a PEFT adapter export.
	Adapter *Adapter

	execs map[string]*encoder.SafeExec
}

// SetLengths sets the maximum tokens per query and per tool text the embedder embeds with
// ([CLS] and [SEP] included; 0 keeps the current one), e.g. tool texts longer at inference than
// in training, as sentence-transformers' max_seq_length is set after training. A length must
// be at least 2 and within the encoder's position table.
func (e *Embedder) SetLengths(query, tool int) error {
	n := e.Cfg.Encoder.MaxPositions()
	for _, l := range []struct {
		side string
		n    int
	}{{"query", query}, {"tool", tool}} {
		if l.n < 0 || l.n == 1 || l.n > n {
			return fmt.Errorf("biencoder: %s length %d: must be 0 (keep %d / %d) or in [2, %d], the encoder's positions", l.side, l.n, e.Cfg.QueryMaxLen, e.Cfg.ToolMaxLen, n)
		}
	}
	if query > 0 {
		e.Cfg.QueryMaxLen = query
	}
	if tool > 0 {
		e.Cfg.ToolMaxLen = tool
	}
	return nil
}

// Embed returns one embedding per text with the given tower (QueryTower or ToolTower), each
// text after the tower's prompt (Config.Prompt).
func (e *Embedder) Embed(tower string, texts []string) ([][]float32, error) {
	embedMu.Lock()
	if e.execs == nil {
		e.execs = map[string]*encoder.SafeExec{}
	}
	exec := e.execs[tower]
	embedMu.Unlock()
	if exec == nil {
		me, err := model.NewExec(e.Backend, e.Store, func(root *model.Scope, ids, mask *Node) *Node {
			encoder.VariablesAsParameters(encoder.In(root, e.Cfg.TowerBase(tower)), ids.Graph(), train.OptimizerScope)
			return e.Cfg.Embed(root, tower, ids, mask)
		})
		if err != nil {
			return nil, err
		}
		exec = encoder.GuardShared(me, e.Store, e.Backend)
		embedMu.Lock()
		e.execs[tower] = exec
		embedMu.Unlock()
	}
	maxLen := e.Cfg.QueryMaxLen
	if tower == ToolTower {
		maxLen = e.Cfg.ToolMaxLen
	}
	seqs := make([][]int32, len(texts))
	prompt := e.Cfg.Prompt(tower)
	for i, s := range texts {
		seqs[i] = e.Tok.Single(prompt+s, maxLen)
	}
	out, err := encoder.Map(e.Tok, seqs, nil, maxLen, e.Batch, func(ids, _, mask *tensors.Tensor) (*tensors.Tensor, error) {
		return exec.Call1(ids, mask)
	})
	if err != nil {
		return nil, fmt.Errorf("biencoder: embed %s: %w", tower, err)
	}
	return out, nil
}

// Ranker ranks all tools of a dataset by similarity to a query embedding. Tool vectors are
// computed once. It implements rank.Ranker and is safe for concurrent Rank calls.
type Ranker struct {
	e     *Embedder
	Tools [][]float32
	// Vectors is the kind of tool vectors: VectorsText or VectorsUsage.
	Vectors string
	// Fallbacks is, with usage vectors, the number of tools no training query uses: they keep
	// their text vector.
	Fallbacks int
}

// QueryTokens implements rank.QueryTokenizer: text's length in tokens (its query prompt
// included) before truncation and the query tower's max length.
func (r *Ranker) QueryTokens(text string) (n, limit int) {
	return len(r.e.Tok.Single(r.e.Cfg.QueryPrompt+text, 0)), r.e.Cfg.QueryMaxLen
}

// UsageNote returns the line reporting the usage-vector fallback ("usage vectors: N of T
// tools have no training query; they keep their text vector"), or "" for text vectors.
func (r *Ranker) UsageNote() string {
	if r.Vectors != VectorsUsage {
		return ""
	}
	return UsageNote(r.Fallbacks, len(r.Tools))
}

// Ranker embeds the tools of d. vectors is "text" (the tool tower over tool texts) or
// "usage" (Tool2Vec, UsageVectors: a tool is the mean embedding of the training queries that
// use it, in the query tower; tools without training queries keep their text vector).
// trainSplit names the split whose qrels define usage.
func (e *Embedder) Ranker(d *data.Dataset, vectors, trainSplit string) (*Ranker, error) {
	var train *data.Split
	if vectors == VectorsUsage {
		var err error
		if train, err = d.Split(trainSplit); err != nil {
			return nil, err
		}
	}
	return e.RetrieverFrom(d, vectors, train)
}

// RetrieverFrom is Retriever with the training queries given as a split of d, such as the
// training part of a run's recorded dev split (rundir.Split.Apply): with "usage" vectors only
// train's qrels define usage, so no dev query leaks into the tool vectors.
func (e *Embedder) RetrieverFrom(d *data.Dataset, vectors string, train *data.Split) (*Ranker, error) {
	vectors, err := ParseToolVectors(vectors)
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		texts[i] = t.Text
	}
	tools, err := e.Embed(ToolTower, texts)
	if err != nil {
		return nil, err
	}
	r := &Ranker{e: e, Tools: tools, Vectors: vectors}
	if vectors == VectorsUsage {
		if train == nil {
			return nil, fmt.Errorf("biencoder: usage tool vectors need a training split")
		}
		if r.Tools, r.Fallbacks, err = e.UsageVectors(d, train, tools); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// UsageVectors returns the usage vectors (package function UsageVectors) of d's tools: the
// judged queries of train embedded with the query tower, their qrels, and text (one vector
// per tool) as the fallback; normalised for cosine models.
func (e *Embedder) UsageVectors(d *data.Dataset, train *data.Split, text [][]float32) ([][]float32, int, error) {
	qs := train.Judged()
	qt := make([]string, len(qs))
	rel := make([][]int, len(qs))
	for i, q := range qs {
		qt[i], rel[i] = d.Queries[q].Text, train.Relevant[q]
	}
	qe, err := e.Embed(QueryTower, qt)
	if err != nil {
		return nil, 0, err
	}
	vecs, n, err := UsageVectors(qe, rel, text, e.Cfg.Cosine())
	if err != nil {
		return nil, 0, fmt.Errorf("biencoder: split %s: %w", train.Name, err)
	}
	return vecs, n, nil
}

// RankTexts embeds queries and returns each one's top k tools (exact search over all tools).
func (r *Ranker) RankTexts(queries []string, k int) ([]rank.Ranking, error) {
	qe, err := r.e.Embed(QueryTower, queries)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(qe))
	scores := make([]float32, len(r.Tools))
	for i, q := range qe {
		for t, v := range r.Tools {
			s := float32(0)
			for d := range q {
				s += q[d] * v[d]
			}
			scores[t] = s
		}
		out[i] = rank.TopK(scores, k)
	}
	return out, nil
}

// Rank implements rank.Ranker.
func (r *Ranker) Rank(ctx context.Context, queries []string, k int) ([]rank.Ranking, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.RankTexts(queries, k)
}
